package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// TestNextReplyWaitsForTheCommitAhead holds the database's write lock from
// a second connection while a read-only step commits in the background, so
// the next model call is made with that commit still in flight; the test
// then makes the commit fail, and checks that nothing of the next reply —
// which streams text and asks for a call with effects — was acted on: the
// call never ran, no message, journal entry or event of it exists, its
// text was never published, and the run stops with no step recorded.
func TestNextReplyWaitsForTheCommitAhead(t *testing.T) {
	cases := []struct {
		name string
		// fail makes the commit in flight fail, inside the blocking
		// transaction, before the blocker lets it go.
		fail       string
		wantStatus string
	}{
		// The run ended elsewhere while its step was committing.
		{"run finished elsewhere", `UPDATE runs SET status = 'cancelled' WHERE status = 'running'`, store.StatusCancelled},
		// The commit itself fails (a constraint, a full disk), and only
		// that one: a later step's commit would succeed.
		{"commit fails", `CREATE TRIGGER fail_step BEFORE INSERT ON messages WHEN NEW.tool_calls LIKE '%"call_1"%'
			BEGIN SELECT RAISE(ABORT, 'injected commit failure'); END`, store.StatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var launched atomic.Int32
			launch := tool.Func("launch", "launch the rocket", false, func(_ context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
				launched.Add(1)
				return tool.Text("launched"), nil
			})
			var (
				mu       sync.Mutex
				db       *sql.DB
				blocker  *sql.Tx
				calls    int
				stepsMid = -1 // runs.steps as the second call is made
				failures []string
			)
			fatal := func(s string) {
				mu.Lock()
				failures = append(failures, s)
				mu.Unlock()
			}
			p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				switch n {
				case 1:
					// A model that takes a few milliseconds to answer, as
					// a remote one does: its step commits ahead.
					time.Sleep(2 * time.Millisecond)
					// Take the write lock before the step's commit starts.
					tx, err := holdWriteLock(ctx, db)
					if err != nil {
						fatal(err.Error())
						return model.Response{}, err
					}
					blocker = tx
					return model.Response{ToolCalls: []model.ToolCall{{ID: "call_1", Name: "echo", Arguments: []byte(`{"text":"hi"}`)}}}, nil
				case 2:
					if err := blocker.QueryRow(`SELECT steps FROM runs`).Scan(&stepsMid); err != nil {
						fatal("read steps: " + err.Error())
					}
					if _, err := blocker.Exec(tc.fail); err != nil {
						fatal("inject: " + err.Error())
					}
					if err := blocker.Commit(); err != nil {
						fatal("release: " + err.Error())
					}
					s.OnText("LEAKED ")
					return model.Response{Text: "LEAKED reply", ToolCalls: []model.ToolCall{{ID: "call_2", Name: "launch", Arguments: []byte(`{}`)}}}, nil
				}
				return model.Response{Text: "LEAKED third call"}, nil
			})
			h := newHarness(t, p, big, echoedTool(), launch)
			db = secondConnection(t, h.dir, 5*time.Second)
			var published []event.Event
			var pubMu sync.Mutex
			sub := h.opts.Broker.Subscribe(1024, nil)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev := range sub.C {
					pubMu.Lock()
					published = append(published, ev)
					pubMu.Unlock()
				}
			}()

			r := submitAndWait(t, h.svc, engine.Submission{Request: userRequest("go")})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.q.Close(ctx); err != nil { // every attempt has ended
				t.Fatal(err)
			}
			h.opts.Broker.Unsubscribe(sub)
			<-done
			mu.Lock()
			defer mu.Unlock()
			if len(failures) > 0 {
				t.Fatalf("scripted provider: %v", failures)
			}
			if stepsMid != 0 {
				t.Fatalf("the second call was made with %d steps committed, want 0 (the first step's commit in flight)", stepsMid)
			}
			if calls != 2 {
				t.Fatalf("%d model calls, want 2", calls)
			}
			if n := launched.Load(); n != 0 {
				t.Fatalf("the call the dropped reply asked for ran %d times", n)
			}
			got, err := h.st.Run(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.wantStatus || got.Steps != 0 {
				t.Fatalf("run %s with %d steps (error %q), want %s with 0", got.Status, got.Steps, got.Error, tc.wantStatus)
			}
			if strings.Contains(string(got.Result), "LEAKED") {
				t.Fatalf("the dropped reply reached the result: %s", got.Result)
			}
			msgs, err := h.st.Messages(context.Background(), r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Role != model.RoleUser {
					t.Fatalf("a message of the failed step or the dropped reply was stored: %+v", m)
				}
			}
			journal, err := h.st.Journal(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(journal) != 0 {
				t.Fatalf("journal %+v, want empty: no intent committed", journal)
			}
			stored, err := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
			if err != nil {
				t.Fatal(err)
			}
			pubMu.Lock()
			defer pubMu.Unlock()
			for _, ev := range append(stored, published...) {
				if ev.RunID != r.ID {
					continue
				}
				raw := string(ev.Data)
				if strings.Contains(raw, "LEAKED") || strings.Contains(raw, "launch") || strings.Contains(raw, "call_2") {
					t.Fatalf("event %s carries the dropped reply: %s", ev.Name, raw)
				}
				if ev.Name == event.ToolCall || ev.Name == event.Checkpoint || ev.Name == event.ModelCall {
					t.Fatalf("event %s of a step that never committed: %s", ev.Name, raw)
				}
			}
		})
	}
}

// TestReadOnlyStepsCommitTogetherBehindASlowCommit holds the database's
// write lock from a second connection while the first read-only step
// commits in the background, and answers the next two calls with read-only
// calls too: the loop runs them without waiting for the disk, and their
// steps join the commit queue behind the first. Released, the queue lands
// in order; made to fail instead, nothing of any of the three steps is
// stored and the run stops with none recorded.
func TestReadOnlyStepsCommitTogetherBehindASlowCommit(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "released", true: "commit fails"}[fail], func(t *testing.T) {
			var (
				mu       sync.Mutex
				db       *sql.DB
				blocker  *sql.Tx
				calls    int
				stepsMid = -1 // runs.steps as the third call is made
				echoed   atomic.Int32
				failures []string
			)
			fatal := func(s string) {
				mu.Lock()
				failures = append(failures, s)
				mu.Unlock()
			}
			echo := tool.Func("echo", "echo text", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
				echoed.Add(1)
				return tool.Text("echoed " + a.Text), nil
			})
			echoCall := func(id string) model.Response {
				return model.Response{ToolCalls: []model.ToolCall{{ID: id, Name: "echo", Arguments: []byte(`{"text":"` + id + `"}`)}}}
			}
			p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				// A model that takes a few milliseconds to answer, as a
				// remote one does: its steps commit ahead.
				time.Sleep(2 * time.Millisecond)
				switch n {
				case 1:
					tx, err := holdWriteLock(ctx, db)
					if err != nil {
						fatal(err.Error())
						return model.Response{}, err
					}
					blocker = tx
					return echoCall("call_1"), nil
				case 2:
					return echoCall("call_2"), nil
				case 3:
					// Reached only if the loop did not wait for step 1.
					if err := blocker.QueryRow(`SELECT steps FROM runs`).Scan(&stepsMid); err != nil {
						fatal("read steps: " + err.Error())
					}
					if fail {
						if _, err := blocker.Exec(`CREATE TRIGGER fail_step BEFORE INSERT ON messages WHEN NEW.tool_calls LIKE '%"call_1"%'
							BEGIN SELECT RAISE(ABORT, 'injected commit failure'); END`); err != nil {
							fatal("inject: " + err.Error())
						}
					}
					if err := blocker.Commit(); err != nil {
						fatal("release: " + err.Error())
					}
					return echoCall("call_3"), nil
				}
				return model.Response{Text: "all echoed"}, nil
			})
			h := newHarness(t, p, big, echo)
			db = secondConnection(t, h.dir, 20*time.Second)

			r := submitAndWait(t, h.svc, engine.Submission{Request: userRequest("go")})
			mu.Lock()
			defer mu.Unlock()
			if len(failures) > 0 {
				t.Fatalf("scripted provider: %v", failures)
			}
			if stepsMid != 0 {
				t.Fatalf("the third call was made with %d steps committed, want 0 (the first step's commit held)", stepsMid)
			}
			got, err := h.st.Run(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := h.st.Messages(context.Background(), r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			journal, err := h.st.Journal(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
			if err != nil {
				t.Fatal(err)
			}
			if fail {
				if got.Status != store.StatusFailed || got.Steps != 0 || !strings.Contains(got.Error, "injected commit failure") {
					t.Fatalf("run %s with %d steps (error %q), want failed with 0 and the commit's error", got.Status, got.Steps, got.Error)
				}
				if strings.Contains(string(got.Result), "all echoed") {
					t.Fatalf("a reply after the failed commit reached the result: %s", got.Result)
				}
				for _, m := range msgs {
					if m.Role != model.RoleUser {
						t.Fatalf("a message of a step queued behind the failed commit was stored: %+v", m)
					}
				}
				if len(journal) != 0 {
					t.Fatalf("journal %+v, want empty: no intent committed", journal)
				}
				for _, ev := range stored {
					if ev.Name == event.ToolCall || ev.Name == event.Checkpoint || ev.Name == event.ModelCall || ev.Name == event.ToolResult {
						t.Fatalf("event %s of a step that never committed: %s", ev.Name, ev.Data)
					}
				}
				return
			}
			if got.Status != store.StatusDone || got.Steps != 4 || calls != 4 {
				t.Fatalf("run %s with %d steps after %d calls (error %q), want done with 4 after 4", got.Status, got.Steps, calls, got.Error)
			}
			if n := echoed.Load(); n != 3 {
				t.Fatalf("echo ran %d times, want 3", n)
			}
			var order []string
			for _, m := range msgs {
				switch {
				case m.Role == model.RoleAssistant && len(m.ToolCalls) == 1:
					order = append(order, "ask "+m.ToolCalls[0].ID)
				case m.Role == model.RoleTool:
					order = append(order, "answer "+m.ToolCallID)
				}
			}
			want := []string{"ask call_1", "answer call_1", "ask call_2", "answer call_2", "ask call_3", "answer call_3"}
			if strings.Join(order, ", ") != strings.Join(want, ", ") {
				t.Fatalf("stored conversation %v, want %v", order, want)
			}
			for _, id := range []string{"call_1", "call_2", "call_3"} {
				if e, ok := journal[id]; !ok || !e.Done || e.Result != "echoed "+id {
					t.Fatalf("journal of %s: %+v, want done with its echo", id, e)
				}
			}
			var steps []int
			for _, ev := range stored {
				if ev.Name == event.Checkpoint {
					var d struct{ Steps int }
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					steps = append(steps, d.Steps)
				}
			}
			if fmt.Sprint(steps) != "[1 2 3 4]" {
				t.Fatalf("checkpoint events in id order count steps %v, want [1 2 3 4]", steps)
			}
		})
	}
}

// secondConnection opens the harness's database file on a connection of
// its own, whose writes wait up to busy for the engine's.
func secondConnection(t *testing.T, dir string, busy time.Duration) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_txlock=immediate", filepath.Join(dir, "delta.db"), busy.Milliseconds()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// holdWriteLock begins a transaction on db that holds the database's write
// lock until it ends: every commit of the engine waits behind it.
func holdWriteLock(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin blocker: %w", err)
	}
	if _, err := tx.Exec(`UPDATE runs SET seq = seq WHERE 0`); err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("lock: %w", err)
	}
	return tx, nil
}
