package scripted

import (
	"encoding/json"
	"net/http"
	"time"
	"unicode"
	"unicode/utf8"
)

// The JSON shapes below follow what api.openai.com sends, field for field,
// plus OpenRouter's delta.reasoning and usage.cost.

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *wireUsage    `json:"usage"` // null on every chunk but the usage chunk, as with include_usage
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	Reasoning *string         `json:"reasoning,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	Cost *float64 `json:"cost,omitempty"`
}

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   wireUsage          `json:"usage"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     *struct{}         `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Reasoning *string        `json:"reasoning,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	Refusal   *string        `json:"refusal"`
}

type wireToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function chunkFunction `json:"function"`
}

// reply is a Reply resolved against its request: model, finish reason and
// usage filled in.
type reply struct {
	Reply
	id     string
	model  string
	finish string
	usage  wireUsage
}

func resolve(req ChatRequest, r Reply, id string) reply {
	out := reply{Reply: r, id: id, model: r.Model, finish: r.FinishReason}
	if out.model == "" {
		out.model = req.Model
	}
	if out.finish == "" {
		out.finish = "stop"
		if len(r.ToolCalls) > 0 {
			out.finish = "tool_calls"
		}
	}
	u := r.Usage
	if u == nil {
		// Roughly four bytes a token, like the usual rule of thumb, so that
		// every reply carries plausible non-zero usage.
		out := int64(len(r.Text) + len(r.Reasoning))
		for _, tc := range r.ToolCalls {
			out += int64(len(tc.Name) + len(tc.Arguments))
		}
		u = &Usage{PromptTokens: int64(len(req.Raw))/4 + 1, CompletionTokens: out/4 + 1}
	}
	out.usage = wireUsage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.PromptTokens + u.CompletionTokens,
		Cost:             u.Cost,
	}
	out.usage.PromptTokensDetails.CachedTokens = u.CachedTokens
	return out
}

// chunks renders a streamed reply as the ordered list of chunk bodies, the
// usage chunk included (the caller drops it when usage was not asked for).
func (r reply) chunks(created int64) []chunk {
	mk := func(d chunkDelta, finish *string) chunk {
		return chunk{ID: r.id, Object: "chat.completion.chunk", Created: created, Model: r.model,
			Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
	}
	empty := ""
	out := []chunk{mk(chunkDelta{Role: "assistant", Content: &empty}, nil)}
	for _, p := range splitWords(r.Reasoning) {
		out = append(out, mk(chunkDelta{Reasoning: &p}, nil))
	}
	for _, p := range splitWords(r.Text) {
		out = append(out, mk(chunkDelta{Content: &p}, nil))
	}
	for i, tc := range r.ToolCalls {
		parts := splitArgs(tc.Arguments)
		out = append(out, mk(chunkDelta{ToolCalls: []chunkToolCall{{
			Index: i, ID: tc.ID, Type: "function",
			Function: chunkFunction{Name: tc.Name, Arguments: parts[0]},
		}}}, nil))
		for _, p := range parts[1:] {
			out = append(out, mk(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, Function: chunkFunction{Arguments: p}}}}, nil))
		}
	}
	finish := r.finish
	out = append(out, mk(chunkDelta{}, &finish))
	u := r.usage
	out = append(out, chunk{ID: r.id, Object: "chat.completion.chunk", Created: created, Model: r.model,
		Choices: []chunkChoice{}, Usage: &u})
	return out
}

func (r reply) completion(created int64) completion {
	msg := completionMessage{Role: "assistant"}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		t := r.Text
		msg.Content = &t
	}
	if r.Reasoning != "" {
		t := r.Reasoning
		msg.Reasoning = &t
	}
	for _, tc := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
			Function: chunkFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	return completion{ID: r.id, Object: "chat.completion", Created: created, Model: r.model,
		Choices: []completionChoice{{Message: msg, FinishReason: r.finish}}, Usage: r.usage}
}

// splitWords cuts s after each run of whitespace, so every delta is a word
// and its trailing space, and the deltas join back to s exactly.
func splitWords(s string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if inSpace && !sp {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitArgs cuts a tool call's arguments into fragments of about eight
// bytes, always on rune boundaries (a cut rune would reach the wire as
// U+FFFD). The result has at least one element.
func splitArgs(s string) []string {
	const size = 8
	out := []string{}
	for len(s) > size {
		n := size
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// writeSSE streams a reply. It returns when the reply is written, the
// client goes away, or the reply asks to end early.
func writeSSE(w http.ResponseWriter, r *http.Request, rep reply, includeUsage bool) {
	flusher := startSSE(w, r).flusher

	chunks := rep.chunks(time.Now().Unix())
	if !includeUsage {
		chunks = chunks[:len(chunks)-1]
	}
	// A cut reply stops halfway through the content chunks (those between
	// the role chunk and the finish chunk), but always after at least one.
	cut := -1
	if rep.EndEarly || rep.Abort {
		content := len(chunks) - 2
		if includeUsage {
			content--
		}
		cut = 1 + min(content, max(1, content/2))
	}
	for i, c := range chunks {
		if i == cut {
			if rep.Abort {
				// ErrAbortHandler makes net/http drop the connection without
				// the terminating chunk, and without logging a stack.
				panic(http.ErrAbortHandler)
			}
			return
		}
		if rep.ChunkDelay > 0 {
			t := time.NewTimer(rep.ChunkDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		b, err := json.Marshal(c)
		if err != nil {
			return // unreachable: every field is a plain value
		}
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	if flusher != nil {
		flusher.Flush()
	}
}
