package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// bareEngine is a store with one queued run and an engine over it, driven
// by calling Execute directly (no queue), so a test owns the run's context.
func bareEngine(t *testing.T, p model.ProviderFunc, mutate func(*engine.Options)) (*store.Store, *engine.Engine, string) {
	t.Helper()
	_, st, b := openEnv(t)
	seedRun(t, st, "resp_f", "sess_f", userRequest("hi"), false)
	o := engine.Options{Store: st, Provider: p, Models: []string{"m"}, Prompt: b, Tools: tool.NewRegistry(),
		ToolNames: func(string) []string { return nil }, Budget: func(string) engine.Budget { return big }}
	if mutate != nil {
		mutate(&o)
	}
	return st, engine.New(o), "resp_f"
}

// finishedOnce asserts the run is done with text as its answer and exactly
// one run.finished event.
func finishedOnce(t *testing.T, st *store.Store, runID, text string) {
	t.Helper()
	ctx := context.Background()
	r, err := st.Run(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	var resp engine.Response
	_ = json.Unmarshal(r.Result, &resp)
	if r.Status != store.StatusDone || resp.OutputText != text {
		t.Fatalf("run %s (error %q), output %q; want done with %q", r.Status, r.Error, resp.OutputText, text)
	}
	evs, err := st.Events(ctx, store.EventFilter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Name == event.RunFinished {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d run.finished events, want 1", n)
	}
}

// A shutdown that cancels the run's context after the final reply is
// received but before the terminal write must not lose the answer: the
// terminal write, which commits the reply too, outlives the cancellation.
func TestFinalAnswerSurvivesCancelBeforeTerminalWrite(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Model: req.Model, Text: "the final answer"}, nil
	})
	st, eng, id := bareEngine(t, p, func(o *engine.Options) {
		// The terminal write redacts the answer just before it commits:
		// the shutdown lands exactly there.
		o.Redact = func(s string) string {
			if strings.Contains(s, "the final answer") {
				cancel()
			}
			return s
		}
	})
	eng.Execute(ctx, id, func() bool { return false })
	finishedOnce(t, st, id, "the final answer")
}

// A resumed run continues from its last checkpoint: a final reply already
// checkpointed (an earlier binary committed it apart from the run's end)
// finishes the run without calling the model again, while a
// checkpoint that still has tool calls to answer is not mistaken for a
// finished one and calls the model again.
func TestResumeFromTheLastCheckpoint(t *testing.T) {
	for _, tt := range []struct {
		name       string
		checkpoint model.Message // the last step the earlier process committed
		intents    []store.Intent
		wantCalls  int32
		wantAnswer string
	}{
		{
			name:       "checkpointed final reply",
			checkpoint: model.Message{Role: model.RoleAssistant, Content: "the checkpointed answer"},
			wantCalls:  0, wantAnswer: "the checkpointed answer",
		},
		{
			name: "pending tool calls",
			checkpoint: model.Message{Role: model.RoleAssistant, Content: "let me look",
				ToolCalls: []model.ToolCall{{ID: "c1", Name: "gone", Arguments: json.RawMessage(`{}`)}}},
			intents:   []store.Intent{{CallID: "c1", Name: "gone", Args: json.RawMessage(`{}`)}},
			wantCalls: 1, wantAnswer: "after the tool",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
				calls.Add(1)
				return model.Response{Model: req.Model, Text: "after the tool"}, nil
			})
			st, eng, id := bareEngine(t, p, nil)
			ctx := context.Background()
			// The earlier process started the run and checkpointed a step,
			// then died before the terminal write.
			if _, _, err := st.Start(ctx, id, []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.CommitStep(ctx, store.Step{RunID: id, SessionID: "sess_f", Model: "m", Message: tt.checkpoint, Intents: tt.intents}); err != nil {
				t.Fatal(err)
			}
			eng.Execute(ctx, id, func() bool { return false })
			if n := calls.Load(); n != tt.wantCalls {
				t.Fatalf("the model was called %d times after the checkpoint, want %d", n, tt.wantCalls)
			}
			finishedOnce(t, st, id, tt.wantAnswer)
		})
	}
}
