// Package model holds the provider-neutral shape of one model call: the
// request Delta assembles each turn, the streamed reply, the usage it cost,
// and the Provider interface every wire client implements.
//
// Wire clients live in subpackages named after the API they speak
// (model/openai for Chat Completions); model/scripted is an endpoint that
// speaks those wires with answers from a Go function, for `delta demo` and
// tests (model/modeltest adds the test-only helpers).
package model

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
)

// Role of a conversation message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // raw JSON text as the model produced it (may be invalid)
}

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant only
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool only
	Name       string     `json:"name,omitempty"`         // tool only: the tool's name
	// Extra is wire-private state a provider asked to have replayed with
	// this message: a JSON object keyed by wire name ("anthropic",
	// "responses"). Each wire reads only its own key, so a sealed payload
	// never reaches another wire. The store must persist it verbatim.
	Extra json.RawMessage `json:"extra,omitempty"`
	// Images ride on a user message to a vision model (package vision
	// attaches them to one call's copy of the conversation). They are
	// never serialised: the store, captures and run requests keep only the
	// text markers that name the files.
	Images []Image `json:"-"`
}

// Image is one image sent inline to a vision model.
type Image struct {
	MIME string // image/png, image/jpeg, image/gif or image/webp
	Data []byte // the file's bytes, not base64
}

// DataURL is the image as a data: URL (data:<mime>;base64,<data>), the form
// the OpenAI wires take.
func (im Image) DataURL() string {
	return "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// ToolSpec is a tool's advertised name, description and JSON Schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one main-loop model call.
type Request struct {
	Model           string
	System          []string  // system spine blocks, in order; sent as system-role content
	Messages        []Message // history then per-turn user blocks
	Tools           []ToolSpec
	ReasoningEffort string // "" = provider default
	// Memo, when set, carries a wire client's work on this conversation
	// from one call to the next (the encoded opening of its messages,
	// which grow by appending). It never changes what is sent, only what
	// it costs to build; nil builds every call from scratch.
	Memo *Memo `json:"-"`
}

// Memo is scratch a wire client keeps for one conversation between calls:
// one value, tagged with the client that stored it. Take hands the value
// over and clears it, so the taker owns it alone and may extend it in
// place; a concurrent call on the same conversation finds nothing and
// builds from scratch. The zero value is ready.
type Memo struct {
	mu    sync.Mutex
	owner any
	v     any
}

// Take returns and clears the value owner stored, or nil.
func (m *Memo) Take(owner any) any {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owner != owner {
		return nil
	}
	v := m.v
	m.owner, m.v = nil, nil
	return v
}

// Put stores owner's value, replacing whatever the memo held.
func (m *Memo) Put(owner, v any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owner, m.v = owner, v
}

// Usage is what one call cost.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`  // gross input, cache reads included
	OutputTokens     int64   `json:"output_tokens"` //
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	CostReported     bool    `json:"-"` // CostUSD came from the provider, not the price table
}

// Fresh is the token count a budget charges: fresh input plus output.
func (u Usage) Fresh() int64 {
	in := u.InputTokens - u.CacheReadTokens
	if in < 0 {
		in = 0
	}
	return in + u.OutputTokens
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		CostUSD:          u.CostUSD + o.CostUSD,
		CostReported:     u.CostReported || o.CostReported,
	}
}

// Response is a completed model call.
type Response struct {
	Model        string // the model that actually served the call
	Text         string
	ToolCalls    []ToolCall
	FinishReason string
	// Speed is the speed tier the endpoint reports having served the call
	// at, "" when it reports none.
	Speed string
	Usage Usage
	// Extra is the wire-private state to store on the assistant message
	// this response becomes (see Message.Extra); nil when there is none.
	Extra json.RawMessage
}

// Stream receives incremental output while a call is in flight. Any field may be nil.
type Stream struct {
	OnText      func(delta string)
	OnReasoning func(delta string)
	// OnRetry is told of every retry, re-auth, model switch and provider
	// failover a cascading provider makes within one call.
	OnRetry func(Retry)
}

// Retry describes one retry or switch inside a call.
type Retry struct {
	Reason       string `json:"reason"` // retry | reauth | model_switch | provider_failover
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model"`
	NextProvider string `json:"next_provider,omitempty"`
	NextModel    string `json:"next_model"`
	Attempt      int    `json:"attempt"`
	Status       int    `json:"status,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Provider performs one model call. Implementations must honour ctx
// cancellation, must not retry on their own (the harness owns retry and
// fallback), and must return an *Error for HTTP-level failures.
type Provider interface {
	Complete(ctx context.Context, req Request, s Stream) (Response, error)
}

// Error is a failed call with the HTTP status the endpoint answered (0 for a
// network failure before any status).
type Error struct {
	Status    int
	Message   string
	Retriable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return "model call: http " + strconv.Itoa(e.Status) + ": " + e.Message
	}
	return "model call: " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetriable reports whether err is worth another attempt on the same model.
func IsRetriable(err error) bool {
	var me *Error
	if errors.As(err, &me) {
		return me.Retriable
	}
	return false
}

// Price is dollars per million tokens for one model.
type Price struct {
	In         float64 `json:"in"`
	Out        float64 `json:"out"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"` // 0 = 1.25 × In
}

// ProviderFunc adapts a function to Provider (in-process scripted providers).
type ProviderFunc func(ctx context.Context, req Request, s Stream) (Response, error)

// Complete calls f.
func (f ProviderFunc) Complete(ctx context.Context, req Request, s Stream) (Response, error) {
	return f(ctx, req, s)
}
