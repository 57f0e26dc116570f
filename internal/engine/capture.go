package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// capturedRequest is a main-loop call as the engine assembled it, before
// any wire encoding: what the Cockpit shows as the turn's request.
type capturedRequest struct {
	Model           string            `json:"model"`
	System          []string          `json:"system"`
	Messages        []capturedMessage `json:"messages"`
	Tools           []model.ToolSpec  `json:"tools"`
	ReasoningEffort string            `json:"reasoning_effort,omitempty"`
	// PrefixKey is a digest of the cache-stable prefix (system spine and
	// tool schemas, in order): two turns with the same key sent the
	// provider the same prefix, so its prompt cache could hold.
	PrefixKey string `json:"prefix_key"`
}

// capturedMessage is one message with its place in the request: history
// (the stored conversation) or one of the blocks rebuilt every turn (turn,
// instructions, block). Images are described, never copied.
type capturedMessage struct {
	model.Message
	Kind   string          `json:"kind"`
	Images []capturedImage `json:"images,omitempty"`
}

type capturedImage struct {
	MIME  string `json:"mime"`
	Bytes int    `json:"bytes"`
}

// capturedResponse is what served the call.
type capturedResponse struct {
	Model        string           `json:"model"`
	Provider     string           `json:"provider,omitempty"`
	Text         string           `json:"text"`
	ToolCalls    []model.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	Speed        string           `json:"speed,omitempty"`
	Usage        model.Usage      `json:"usage"`
	LatencyMS    int64            `json:"latency_ms"`
	Retries      int              `json:"retries,omitempty"`
	Fallback     bool             `json:"fallback,omitempty"`
}

// capture builds the call row of one served turn. history is how many of
// req's messages are the stored conversation; the rest are per-turn blocks.
func (x *execution) capture(req model.Request, history int, resp model.Response) *store.Call {
	msgs := make([]capturedMessage, len(req.Messages))
	for i, m := range req.Messages {
		cm := capturedMessage{Message: m, Kind: "history"}
		switch {
		case strings.HasPrefix(m.Content, TurnBlockPrefix):
			cm.Kind = "turn"
		case strings.HasPrefix(m.Content, InstructionsBlockPrefix):
			cm.Kind = "instructions"
		case i >= history:
			cm.Kind = "block"
		}
		for _, im := range m.Images {
			cm.Images = append(cm.Images, capturedImage{MIME: im.MIME, Bytes: len(im.Data)})
		}
		msgs[i] = cm
	}
	h := sha256.New()
	for _, s := range req.System {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	tools, _ := json.Marshal(req.Tools)
	h.Write(tools)
	cs := x.callStats
	if req.Model == "" && len(x.e.o.Models) > 0 {
		req.Model = x.e.o.Models[0] // what callModel asks for
	}
	in, _ := json.Marshal(capturedRequest{Model: req.Model, System: req.System, Messages: msgs, Tools: req.Tools,
		ReasoningEffort: req.ReasoningEffort, PrefixKey: hex.EncodeToString(h.Sum(nil))[:16]})
	out, _ := json.Marshal(capturedResponse{Model: resp.Model, Provider: cs.provider, Text: resp.Text, ToolCalls: resp.ToolCalls,
		FinishReason: resp.FinishReason, Speed: resp.Speed, Usage: resp.Usage, LatencyMS: cs.latency.Milliseconds(),
		Retries: cs.retries, Fallback: cs.fallback})
	return &store.Call{Turn: x.turn, Model: resp.Model, Provider: cs.provider, Request: in, Response: out,
		Usage: resp.Usage, LatencyMS: cs.latency.Milliseconds()}
}

// credentialPatterns match credentials by shape, for text that may hold a
// secret the vault never saw (a key pasted into a prompt, a header a tool
// echoed back).
var credentialPatterns = regexp.MustCompile(strings.Join([]string{
	`sk-[A-Za-z0-9_\-]{16,}`,                // OpenAI, Anthropic, OpenRouter keys
	`(?i)bearer\s+[A-Za-z0-9._~+/=\-]{16,}`, // bearer credentials
	`gh[pousr]_[A-Za-z0-9]{30,}`,            // GitHub tokens
	`github_pat_[A-Za-z0-9_]{30,}`,
	`AKIA[0-9A-Z]{16}`,              // AWS access key ids
	`xox[abprs]-[A-Za-z0-9\-]{10,}`, // Slack tokens
	`AIza[0-9A-Za-z_\-]{35}`,        // Google API keys
}, "|"))

// redactCredentials replaces credential-shaped substrings with a marker.
func redactCredentials(s string) string {
	return credentialPatterns.ReplaceAllString(s, "[redacted]")
}

// RedactCredentials is redactCredentials for the daemon's other writers of
// model-made text (governed memory's lessons).
func RedactCredentials(s string) string { return redactCredentials(s) }

// redactRead is what every inspection projection of stored text passes
// through: known vault values, then credential shapes.
func (e *Engine) redactRead(s string) string { return redactCredentials(e.o.Redact(s)) }
