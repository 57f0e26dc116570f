package engine

import "github.com/deltaharness/delta/internal/model"

// The pre-send estimate of a request's size in tokens.
//
// It counts the request as the wires serialize it — bytes of JSON, with
// string escapes — rather than characters, because that is what a
// tokenizer reads: a non-ASCII character is two to four bytes and a quote
// or newline inside a tool result costs an escape. Bytes become tokens at
// estimateBytesPerToken: the BPE tokenizers of the models Delta serves
// average about four bytes a token on English prose and about three on
// JSON, code and identifiers, and CJK text is close to one three-byte
// character a token, so three bytes a token over-counts almost everything
// and under-counts almost nothing — the safe side for a dial that must
// stay under the model's window. An attached image is a fixed reserve
// (estimateImageTokens, the size a high-detail image of about a megapixel
// takes on the common wires), never its base64 length, which says nothing
// about its cost. The reply's room (outputReserve) is added because it
// comes out of the same window.
const (
	estimateBytesPerToken = 3
	estimateImageTokens   = 1600
	// estimateOutputReserve is the reply's room at a dial of at least
	// eight times it; see outputReserve.
	estimateOutputReserve = 4096
	// Per-item framing the wires add around each message, tool and system
	// block (role, type and key names, content-block arrays, cache
	// markers), sized to the largest of the three wires (Anthropic's).
	estimateMessageBytes = 96
	estimateCallBytes    = 64
	estimateToolBytes    = 48
)

// estimateTokens is the estimated size of a fully assembled request — the
// system spine, the tool schemas, every message (history and per-turn
// blocks), attached images and the output reserve at dial — in tokens.
func estimateTokens(req model.Request, dial int) int {
	return bytesToTokens(estimateFixedBytes(req.System, req.Tools)+messagesBytes(req.Messages)) +
		imagesOf(req.Messages)*estimateImageTokens + outputReserve(dial)
}

// outputReserve is the reply's room inside a dial of compactAt tokens:
// estimateOutputReserve, but never more than an eighth of the dial. A
// fixed 4096 would take the whole of a 4000-token dial and half of an
// 8000 one, leaving compaction no room to work in, and a model served
// under so small a dial writes replies to match.
func outputReserve(compactAt int) int { return min(estimateOutputReserve, compactAt/8) }

// estimateFixedBytes is the serialized size of the system spine and the
// tool schemas.
func estimateFixedBytes(system []string, tools []model.ToolSpec) int {
	n := 0
	for _, s := range system {
		n += estimateMessageBytes + jsonLen(s)
	}
	for _, t := range tools {
		n += estimateToolBytes + jsonLen(t.Name) + jsonLen(t.Description) + len(t.Parameters)
	}
	return n
}

func messagesBytes(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		n += messageBytes(&msgs[i])
	}
	return n
}

// messageBytes is one message's serialized size. Arguments count as a JSON
// string (the Chat Completions form, the largest of the three wires').
func messageBytes(m *model.Message) int {
	n := estimateMessageBytes + jsonLen(m.Content) + len(m.ToolCallID) + len(m.Name) + len(m.Extra)
	for _, c := range m.ToolCalls {
		n += estimateCallBytes + len(c.ID) + len(c.Name) + jsonLen(string(c.Arguments))
	}
	return n
}

func imagesOf(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Images)
	}
	return n
}

func bytesToTokens(b int) int { return (b + estimateBytesPerToken - 1) / estimateBytesPerToken }

// jsonLen is the length of s as a JSON string body: its bytes, plus one for
// each two-character escape and five for each \u escape (control
// characters, and <, > and & which some encoders escape).
func jsonLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n + 2
}
