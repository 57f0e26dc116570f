// Package event holds the run events Delta records and streams, and the
// in-process broker that fans them out to live listeners.
//
// Durable events are rows in the store's events table with increasing IDs;
// they are written in the same transaction as the state change they report,
// so a committed state change always has its event and a rolled-back one has
// none. Text and reasoning deltas are ephemeral: published live, never stored,
// with ID 0.
package event

import (
	"encoding/json"
	"time"
)

// Names of the events Delta emits.
const (
	RunQueued   = "run.queued"
	RunStarted  = "run.started"
	RunResumed  = "run.resumed"
	RunFinished = "run.finished" // exactly one per run; data.status is done, failed or cancelled
	// TurnStarted opens a turn: the budget check passed and the model is
	// about to be called.
	TurnStarted = "turn.started"
	ModelCall   = "model.call"
	ModelRetry  = "model.retry"
	ToolCall    = "tool.call"
	ToolResult  = "tool.result"
	// Checkpoint is a committed step: the assistant message, its tool
	// intents and the run's usage, written in that step's transaction.
	Checkpoint = "checkpoint"
	// Error is a failure (data error.type and error.message): one that
	// ended the run, written with the terminal state, or a tool call that
	// failed by itself, written with its tool.result.
	Error       = "error"
	TextDelta   = "output_text.delta" // ephemeral
	ReasonDelta = "reasoning.delta"   // ephemeral
	// BudgetExhausted: a ceiling stopped the run; written with the
	// terminal state, before its error event.
	BudgetExhausted = "budget.exhausted"
	// Recall is a recall search, list or artifact read (data mode, query
	// clipped, hits).
	Recall = "recall"
	// Remember is a remember call on DELTA.md (data outcome written,
	// unchanged or refused; reason too_large, diverged or empty when
	// refused; bytes, version, prior, revision_id).
	Remember = "remember"
	// SelfRestore is an operator's restore of a DELTA.md revision through
	// the inspection API (data restored, version, prior, revision_id); it
	// belongs to no run.
	SelfRestore = "self.restore"
	// SelfEdit is an operator's save of DELTA.md through the inspection
	// API (data version, prior, revision_id, bytes); it belongs to no run.
	SelfEdit = "self.edit"
	// SkillsIndexed is a change the local skills index found on a search
	// (data skills, refused, warnings).
	SkillsIndexed = "skills.indexed"
	// Compaction is a compaction applied to the session's window: sizes
	// before and after, what was covered and kept, the anchor audit and the
	// ledgers; written in the transaction that applies it.
	Compaction = "compaction"
	// Reflection is the outcome of one reflection after a successful run
	// (data outcome stored, confirmed, refused, none or failed; kind,
	// rubric, reason when refused; untrusted, and untrusted_sources naming
	// the tools or hydration that made the run untrusted), written with its
	// memory change.
	Reflection = "reflection"
	// MemoryStored is a new governed memory row (data memory_id, scope,
	// kind, confidence, runs, held).
	MemoryStored = "memory.stored"
	// MemoryConfirmed is a further distinct run producing a row's content.
	MemoryConfirmed = "memory.confirmed"
	// MemoryRefused is an artifact governance refused (data reason:
	// low_confidence, too_long, bad_kind, empty), or a scope it narrowed
	// (reason widen_unauthorized, with the row still stored privately).
	MemoryRefused = "memory.refused"
	// MemoryRecalled is the recall block given to a session's first run
	// (data memory_ids, candidates).
	MemoryRecalled = "memory.recalled"
	// PromotionStaged is a recurring lesson entering the promotion outbox
	// (data promotion_id, memory_id, target, adapter, kind, runs), written
	// with the memory change that made it recur.
	PromotionStaged = "promotion.staged"
	// PromotionSent is a promotion the product's tool accepted (data
	// promotion_id, target, adapter, attempts).
	PromotionSent = "promotion.sent"
	// PromotionFailed is a failed attempt that a later successful
	// reflection or a restart retries (data promotion_id, attempts, error).
	PromotionFailed = "promotion.failed"
	// PromotionTerminal is a promotion given up after its last attempt
	// (data promotion_id, attempts, error).
	PromotionTerminal = "promotion.terminal"
	// Hydration is task-start hydration before the first turn of a new
	// session (data called, skipped with reasons, states, result_chars,
	// subject_keys, answered, chars, clipped): tool names, key names and
	// sizes, never content, subject values or credentials.
	Hydration = "hydration"
)

// Log attribute keys shared by every package that logs about runs.
const (
	KeyRun     = "run"
	KeySession = "session"
	KeyTool    = "tool"
	KeySystem  = "system"
)

// Keys of an event's data object that one package writes and another
// reads (the API, the CLI, the /dev page).
const (
	KeyDelta   = "delta"   // output_text.delta, reasoning.delta: the text
	KeyStatus  = "status"  // run.finished: done, failed or cancelled
	KeyError   = "error"   // run.finished: why the run did not complete
	KeyAttempt = "attempt" // run.resumed: the attempt number, from 2
)

// More keys of event data: the attributes of the turn, model, tool,
// checkpoint, budget and error events.
const (
	KeyTurn  = "turn"
	KeyModel = "model"
	// KeyProvider is the endpoint label that served a model call.
	KeyProvider = "provider"
	KeyStep     = "step"
	// KeyFinishReason is the served reply's finish reason; KeyFinishReasons
	// carries the same as an array, one per choice.
	KeyFinishReason  = "finish_reason"
	KeyFinishReasons = "finish_reasons"
	// KeyEffort is the reasoning effort the call asked for ("" = the
	// provider's default); KeySpeed the speed tier the endpoint reported
	// serving ("" when it reports none).
	KeyEffort               = "effort"
	KeySpeed                = "speed"
	KeyCacheHitPct          = "cache_hit_pct"
	KeyCacheShortfallTokens = "cache_shortfall_tokens"
	KeyUsage                = "usage"
	KeyCostUSD              = "cost_usd"
	KeyLatencyMS            = "latency_ms"
	KeyWallMS               = "wall_ms"
	KeyRetries              = "retries"
	KeyFallback             = "fallback"
	KeyToolCalls            = "tool_calls"
	KeyTools                = "tools"
	KeyCallID               = "call_id"
	KeyName                 = "name"
	KeyArguments            = "arguments"
	KeyIsError              = "is_error"
	KeyChars                = "chars"
	KeyPreview              = "preview"
	KeyArgsBytes            = "args_bytes"
	KeyArgsStoredBytes      = "args_stored_bytes"
	KeySteps                = "steps"
	KeyMaxSteps             = "max_steps"
	KeyTokens               = "tokens"
	KeyMaxTokens            = "max_tokens"
	KeyMaxCostUSD           = "max_cost_usd"
	KeyOver                 = "over"
	KeyMemoryID             = "memory_id"
	KeyMemoryIDs            = "memory_ids"
	KeyScope                = "scope"
	KeyKind                 = "kind"
	KeyConfidence           = "confidence"
	KeyRuns                 = "runs"
	KeyHeld                 = "held"
	KeyPromotionID          = "promotion_id"
	KeyIntents              = "intents"
	KeyErrorType            = "error.type"
	KeyErrorMessage         = "error.message"
)

// Event is one thing that happened in a run. Owner, SessionID, RunID,
// TaskID and Turn are its correlation spine: the user (x-delta-user), the
// conversation, the run, the caller's metadata.task_id, and the turn (model
// call) of the run it belongs to (0 outside a turn: queued, started).
type Event struct {
	ID        int64           `json:"id,omitempty"` // 0 for ephemeral deltas
	RunID     string          `json:"run_id"`
	SessionID string          `json:"session_id,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	TaskID    string          `json:"task_id,omitempty"`
	Turn      int             `json:"turn,omitempty"`
	Name      string          `json:"name"`
	Time      time.Time       `json:"time"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// Ephemeral reports whether the event is a delta that is never stored.
func (e Event) Ephemeral() bool { return e.Name == TextDelta || e.Name == ReasonDelta }

// Terminal reports whether the event ends its run.
func (e Event) Terminal() bool { return e.Name == RunFinished }

// New builds an event with data marshalled from v (nil → no data).
func New(runID, sessionID, name string, v any) Event {
	e := Event{RunID: runID, SessionID: sessionID, Name: name, Time: time.Now().UTC()}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
		e.Data = b
	}
	return e
}
