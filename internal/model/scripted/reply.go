package scripted

import (
	"sync"
	"time"
)

// Script decides the fake model's answer to one request. It may be called
// from several goroutines at once when requests overlap.
type Script func(req ChatRequest) Reply

// Reply is one scripted answer: text, tool calls (or both), or an HTTP error
// when Status is set.
type Reply struct {
	Text      string
	Reasoning string // streamed first as delta.reasoning, the way OpenRouter sends it
	ToolCalls []ToolCall

	// Status, when non-zero, answers with that HTTP status and an OpenAI-style
	// {"error":{"message":Message}} body instead of a completion.
	Status  int
	Message string
	// Overflow answers with the wire's own context-window refusal (HTTP
	// 400): context_length_exceeded on the OpenAI wires, "prompt is too
	// long" on Anthropic's.
	Overflow bool

	// Usage overrides the token counts; nil derives them from the request
	// and reply sizes so every reply reports some usage.
	Usage *Usage
	// Model overrides the served model; "" echoes the request's model.
	Model string
	// FinishReason overrides the finish reason; "" means "tool_calls" when
	// there are tool calls, else "stop".
	FinishReason string

	// EndEarly ends a streamed reply cleanly after part of the content,
	// without finish_reason, usage or [DONE].
	EndEarly bool
	// Abort breaks the connection after part of a streamed reply, the way a
	// crashed upstream or a dropped proxy does.
	Abort bool
	// ChunkDelay pauses before each streamed chunk (for demos that should look streamed).
	ChunkDelay time.Duration
}

// Usage is the usage object the fake reports.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64    // prompt_tokens_details.cached_tokens
	Cost             *float64 // usage.cost in USD (OpenRouter); nil omits it
}

// USD returns a pointer to v, for Usage.Cost.
func USD(v float64) *float64 { return &v }

// TextReply answers with text.
func TextReply(text string) Reply { return Reply{Text: text} }

// ToolReply answers with tool calls.
func ToolReply(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// ErrorReply answers with an HTTP error.
func ErrorReply(status int, message string) Reply { return Reply{Status: status, Message: message} }

// OverflowReply answers with the wire's context-window refusal.
func OverflowReply() Reply { return Reply{Overflow: true} }

// Sequence answers the nth request with the nth reply, and every request
// after the last with the last reply. With no replies it answers "ok".
func Sequence(replies ...Reply) Script {
	var (
		mu sync.Mutex
		n  int
	)
	return func(ChatRequest) Reply {
		if len(replies) == 0 {
			return TextReply("ok")
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(replies) {
			i = len(replies) - 1
		}
		return replies[i]
	}
}
