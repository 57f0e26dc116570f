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
	RunQueued     = "run.queued"
	RunStarted    = "run.started"
	RunResumed    = "run.resumed"
	RunFinished   = "run.finished" // exactly one per run; data.status is done, failed or cancelled
	TurnStarted   = "turn.started"
	ModelCall     = "model.call"
	ModelRetry    = "model.retry"
	ToolCall      = "tool.call"
	ToolResult    = "tool.result"
	Checkpoint    = "checkpoint"
	Error         = "error"
	TextDelta     = "output_text.delta" // ephemeral
	ReasonDelta   = "reasoning.delta"   // ephemeral
	BudgetWarning = "budget.exhausted"
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

// Event is one thing that happened in a run.
type Event struct {
	ID        int64           `json:"id,omitempty"` // 0 for ephemeral deltas
	RunID     string          `json:"run_id"`
	SessionID string          `json:"session_id,omitempty"`
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
