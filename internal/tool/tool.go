// Package tool defines the shape every tool Delta offers a model has, and the
// registry the daemon assembles explicitly at boot.
//
// A tool's failures that the model can act on (a missing file, a refused
// path) are Results with IsError set; a returned error is an infrastructure
// fault, which the engine also hands to the model as an error result. A tool
// never panics the daemon: the engine recovers and reports a panic the same way.
package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/deltaharness/delta/internal/model"
)

// Call is one invocation of a tool.
type Call struct {
	RunID     string          // the run that asked; used to name spill files
	SessionID string          // the run's session; tools that keep per-session state key on it
	Owner     string          // the run's owner (x-delta-user); "" = unowned. Tools acting for the owner elsewhere scope by it
	CallID    string          // the model's tool-call id
	Args      json.RawMessage // the model's arguments, raw
}

// Result is what the model sees.
type Result struct {
	Text    string
	IsError bool
}

// Tool is one capability a model can call.
type Tool interface {
	Spec() model.ToolSpec
	// ReadOnly reports that re-running the tool after an interruption is
	// safe (no side effect, or an idempotent one). The journal replays
	// interrupted read-only calls and refuses to re-fire the others.
	ReadOnly() bool
	Run(ctx context.Context, c Call) (Result, error)
}

// NoTimeout marks t as bounding itself, so the engine runs it without the
// ordinary tool timeout (DELTA_TOOL_TIMEOUT_MS): a delegated child that
// carries its own budget and model-call bounds would otherwise be killed in
// the middle of long, legitimate work. Cancelling the run still stops it.
// The engine finds the mark through an Untimed() bool method, which a tool
// type may also implement itself.
func NoTimeout(t Tool) Tool { return noTimeout{t} }

type noTimeout struct{ Tool }

func (noTimeout) Untimed() bool { return true }

// Text is a successful result.
func Text(s string) Result { return Result{Text: s} }

// Errorf is a failed result the model sees and can act on.
func Errorf(format string, a ...any) Result {
	return Result{Text: "error: " + fmt.Sprintf(format, a...), IsError: true}
}
