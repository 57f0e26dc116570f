package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// leaseSwitch is a SessionLeases answering from a flag, or failing.
type leaseSwitch struct {
	held atomic.Bool
	fail atomic.Bool // the check errs, as with the database gone
}

func (l *leaseSwitch) HoldsSession(context.Context, string) (bool, error) {
	if l.fail.Load() {
		return false, errors.New("connection refused")
	}
	return l.held.Load(), nil
}

// TestRunStopsWhenItsSessionLeaseIsLost: a run whose worker loses the
// session lease during a tool call stops at its next turn without another
// model call or a terminal write, and stays running; a database that
// cannot answer the check stops it the same way. Resumed by a worker that
// holds the lease, it finishes once without running the done call again.
func TestRunStopsWhenItsSessionLeaseIsLost(t *testing.T) {
	for _, tt := range []struct {
		name string
		lose func(*leaseSwitch)
	}{
		{"lease taken over", func(l *leaseSwitch) { l.held.Store(false) }},
		{"database unreachable", func(l *leaseSwitch) { l.fail.Store(true) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			leases := &leaseSwitch{}
			leases.held.Store(true)
			var ran, calls atomic.Int32
			echo := tool.Func("echo", "echo text", false, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
				ran.Add(1)
				tt.lose(leases)
				return tool.Text("echoed " + a.Text), nil
			})
			provider := toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
			dir, st, b := openEnv(t)
			reg := tool.NewRegistry()
			reg.Add(echo)
			eng := engine.New(engine.Options{Store: st, Models: []string{"m"}, Prompt: b, Tools: reg, WorkspaceDir: dir,
				Provider: model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
					calls.Add(1)
					return provider(ctx, req, s)
				}),
				ToolNames: func(string) []string { return reg.Names() }, Budget: func(string) engine.Budget { return big },
				Leases: leases})
			req, _ := json.Marshal(engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "please echo"}}, Profile: "trusted"})
			if _, _, _, err := st.CreateRun(ctx, store.NewRun{ID: "resp_l", SessionID: "sess_l", Request: req}); err != nil {
				t.Fatal(err)
			}
			eng.Execute(ctx, "resp_l", func() bool { return false })
			r, err := st.Run(ctx, "resp_l")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusRunning || calls.Load() != 1 || ran.Load() != 1 {
				t.Fatalf("after losing the lease: status %s, %d model calls, tool ran %d times; want running, 1, 1", r.Status, calls.Load(), ran.Load())
			}
			// Another worker (here: the same engine, the lease back) resumes it.
			leases.fail.Store(false)
			leases.held.Store(true)
			eng.Execute(ctx, "resp_l", func() bool { return false })
			r, err = st.Run(ctx, "resp_l")
			if err != nil {
				t.Fatal(err)
			}
			evs, err := st.Events(ctx, store.EventFilter{RunID: "resp_l"})
			if err != nil {
				t.Fatal(err)
			}
			finished := 0
			for _, e := range evs {
				if e.Name == "run.finished" {
					finished++
				}
			}
			if r.Status != store.StatusDone || finished != 1 || ran.Load() != 1 {
				t.Fatalf("after resuming: status %s, %d run.finished, tool ran %d times; want done, 1, 1", r.Status, finished, ran.Load())
			}
		})
	}
}
