package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

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

// Guard binds nothing: the flag is not in the store.
func (l *leaseSwitch) Guard(ctx context.Context, _ string) context.Context { return ctx }

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

// storeLeases is a worker's SessionLeases on the store's own lease table.
type storeLeases struct {
	st     *store.Store
	holder string
}

func (l storeLeases) HoldsSession(ctx context.Context, sessionID string) (bool, error) {
	return l.st.HoldsSession(ctx, sessionID, l.holder, time.Now())
}

func (l storeLeases) Guard(ctx context.Context, sessionID string) context.Context {
	return store.WithSessionLease(ctx, sessionID, l.holder)
}

// leasedRun queues run id asking input in session sid, leased to holder
// for an hour.
func leasedRun(t *testing.T, st *store.Store, id, sid, input, holder string) {
	t.Helper()
	ctx := context.Background()
	req, _ := json.Marshal(engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: input}}, Profile: "trusted"})
	if _, _, _, err := st.CreateRun(ctx, store.NewRun{ID: id, SessionID: sid, Request: req}); err != nil {
		t.Fatal(err)
	}
	if err := st.AcquireSession(ctx, sid, holder, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointRefusedWhenTheLeaseGoesDuringTheModelCall: the run checks
// its lease before the model call, and another worker takes the session
// over while the call is out. The checkpoint's own transaction refuses the
// reply: the run stops there with nothing written (no assistant message,
// no step, no run.finished) and stays running. The new holder resumes it,
// asks the model again and finishes it once.
func TestCheckpointRefusedWhenTheLeaseGoesDuringTheModelCall(t *testing.T) {
	ctx := context.Background()
	dir, st, b := openEnv(t)
	leasedRun(t, st, "resp_c", "sess_c", "answer", "w1")
	var calls atomic.Int32
	reg := tool.NewRegistry()
	newEngine := func(holder string) *engine.Engine {
		return engine.New(engine.Options{Store: st, Models: []string{"m"}, Prompt: b, Tools: reg, WorkspaceDir: dir,
			Provider: model.ProviderFunc(func(ctx context.Context, req model.Request, _ model.Stream) (model.Response, error) {
				if calls.Add(1) == 1 {
					// w1 stalls past its TTL while the call is out: w2 takes over.
					if err := st.AcquireSession(ctx, "sess_c", "w2", time.Hour, time.Now().Add(2*time.Hour)); err != nil {
						t.Error(err)
					}
				}
				return model.Response{Model: req.Model, Text: "the answer", Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
			}),
			ToolNames: func(string) []string { return nil }, Budget: func(string) engine.Budget { return big },
			Leases: storeLeases{st: st, holder: holder}})
	}
	newEngine("w1").Execute(ctx, "resp_c", func() bool { return false })
	r, err := st.Run(ctx, "resp_c")
	if err != nil {
		t.Fatal(err)
	}
	_, final, err := st.FinalReply(ctx, "sess_c", "resp_c")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusRunning || r.Steps != 0 || final || calls.Load() != 1 {
		t.Fatalf("after the takeover: status %s, %d steps, reply stored %v, %d model calls; want running, 0, false, 1", r.Status, r.Steps, final, calls.Load())
	}
	newEngine("w2").Execute(ctx, "resp_c", func() bool { return false })
	if r, err = st.Run(ctx, "resp_c"); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, store.EventFilter{RunID: "resp_c", Name: "run.finished"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusDone || len(evs) != 1 || r.Steps != 1 {
		t.Fatalf("after w2 resumed: status %s, %d run.finished, %d steps; want done, 1, 1", r.Status, len(evs), r.Steps)
	}
}

// countingLeases is storeLeases counting the checks that read the table.
type countingLeases struct {
	storeLeases
	reads atomic.Int32
}

func (l *countingLeases) HoldsSession(ctx context.Context, sessionID string) (bool, error) {
	l.reads.Add(1)
	return l.storeLeases.HoldsSession(ctx, sessionID)
}

// TestTurnCheckTrustsTheLeaseItsWritesSaw: a run whose every write
// verifies its lease in the write's transaction, the lease live for an
// hour, asks the lease table nothing more at its turns; it still finishes
// once, its tool run once.
func TestTurnCheckTrustsTheLeaseItsWritesSaw(t *testing.T) {
	ctx := context.Background()
	dir, st, b := openEnv(t)
	leasedRun(t, st, "resp_t", "sess_t", "please echo", "w1")
	var ran atomic.Int32
	reg := tool.NewRegistry()
	reg.Add(tool.Func("echo", "echo text", false, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		ran.Add(1)
		return tool.Text("echoed " + a.Text), nil
	}))
	leases := &countingLeases{storeLeases: storeLeases{st: st, holder: "w1"}}
	eng := engine.New(engine.Options{Store: st, Models: []string{"m"}, Prompt: b, Tools: reg, WorkspaceDir: dir,
		Provider:  toolThenAnswer(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}),
		ToolNames: func(string) []string { return reg.Names() }, Budget: func(string) engine.Budget { return big },
		Leases: leases})
	eng.Execute(ctx, "resp_t", func() bool { return false })
	r, err := st.Run(ctx, "resp_t")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusDone || r.Steps != 2 || ran.Load() != 1 || leases.reads.Load() != 0 {
		t.Fatalf("status %s, %d steps, tool ran %d times, %d lease reads at the turns; want done, 2, 1, 0",
			r.Status, r.Steps, ran.Load(), leases.reads.Load())
	}
}

// TestExecuteHeadStartsFromTheClaimedRun: a run handed over with its
// session and request (as a claim reads them) starts from those, with no
// read of its own before the start; handed over by id alone it reads the
// stored run. The request differs from the stored one here only to tell
// the two apart.
func TestExecuteHeadStartsFromTheClaimedRun(t *testing.T) {
	ctx := context.Background()
	dir, st, b := openEnv(t)
	stored, _ := json.Marshal(engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "stored"}}, Profile: "trusted"})
	claimed, _ := json.Marshal(engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "claimed"}}, Profile: "trusted"})
	var asked []string
	eng := engine.New(engine.Options{Store: st, Models: []string{"m"}, Prompt: b, Tools: tool.NewRegistry(), WorkspaceDir: dir,
		Provider: model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
			for _, m := range req.Messages {
				if m.Role == model.RoleUser && (m.Content == "stored" || m.Content == "claimed") {
					asked = append(asked, m.Content)
				}
			}
			return model.Response{Model: req.Model, Text: "ok"}, nil
		}),
		ToolNames: func(string) []string { return nil }, Budget: func(string) engine.Budget { return big }})
	for _, id := range []string{"resp_h1", "resp_h2"} {
		if _, _, _, err := st.CreateRun(ctx, store.NewRun{ID: id, SessionID: "sess_" + id, Request: stored}); err != nil {
			t.Fatal(err)
		}
	}
	eng.ExecuteHead(ctx, store.RunHead{ID: "resp_h1", SessionID: "sess_resp_h1", Status: store.StatusQueued, Request: claimed}, func() bool { return false })
	eng.ExecuteHead(ctx, store.RunHead{ID: "resp_h2"}, func() bool { return false })
	if len(asked) != 2 || asked[0] != "claimed" || asked[1] != "stored" {
		t.Fatalf("the model was asked %q; want the claimed request, then the stored one", asked)
	}
	for _, id := range []string{"resp_h1", "resp_h2"} {
		if r, err := st.Run(ctx, id); err != nil || r.Status != store.StatusDone {
			t.Fatalf("%s: %s, %v; want done", id, r.Status, err)
		}
	}
}
