package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"

	_ "modernc.org/sqlite"
)

func open(t testing.TB) (*store.Store, string) {
	t.Helper()
	path := store.TestingDSN(t)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// openAgain opens another handle on the database at dsn, as a second
// process on it would, closed when the test ends.
func openAgain(t testing.TB, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigratesAndRefusesNewerSchema(t *testing.T) {
	store.SQLiteOnly(t, "PRAGMA user_version and journal_mode of the file (TestPostgresMigratesAndRefusesNewerSchema is its PostgreSQL half)")
	ctx := context.Background()
	s, path := open(t)
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != store.SchemaVersion() || v < 1 {
		t.Fatalf("user_version = %d, want %d", v, store.SchemaVersion())
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q (%v), want wal", mode, err)
	}
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = store.Open(ctx, path)
	if !errors.Is(err, store.ErrSchemaNewer) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaNewer", err)
	}
}

// rewrite runs statements on a closed store's SQLite file through a raw
// connection, to make it look like a file an older or newer binary wrote.
func rewrite(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func newRun(t testing.TB, s *store.Store, nr store.NewRun) store.Run {
	t.Helper()
	if nr.Request == nil {
		nr.Request = json.RawMessage(`{}`)
	}
	r, _, _, err := s.CreateRun(context.Background(), nr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// session creates run runID in session sessionID and starts it with msgs
// as the history its execution begins with.
func session(t testing.TB, s *store.Store, runID, sessionID string, msgs []model.Message) {
	t.Helper()
	newRun(t, s, store.NewRun{ID: runID, SessionID: sessionID})
	if _, _, err := s.Start(context.Background(), runID, msgs); err != nil {
		t.Fatal(err)
	}
}

// startRun creates run id in session sid and starts it with one user
// message, as a run's first execution does.
func startRun(t *testing.T, s *store.Store, id, sid, text string) {
	t.Helper()
	session(t, s, id, sid, []model.Message{user(text)})
}

func user(text string) model.Message { return model.Message{Role: model.RoleUser, Content: text} }

func TestContinuationRules(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	first := newRun(t, s, store.NewRun{ID: "resp_1", SessionID: "sess_1", Owner: "alice"})
	next := newRun(t, s, store.NewRun{ID: "resp_2", SessionID: "sess_x", Owner: "alice", PreviousID: "resp_1"})
	if next.SessionID != first.SessionID {
		t.Fatalf("continuation session = %s, want %s", next.SessionID, first.SessionID)
	}
	_, _, _, err := s.CreateRun(ctx, store.NewRun{ID: "resp_3", SessionID: "sess_3", Owner: "alice", PreviousID: "resp_nope", Request: json.RawMessage(`{}`)})
	if !errors.Is(err, store.ErrUnknownPrevious) {
		t.Fatalf("unknown previous = %v, want ErrUnknownPrevious", err)
	}
	_, _, _, err = s.CreateRun(ctx, store.NewRun{ID: "resp_4", SessionID: "sess_4", Owner: "mallory", PreviousID: "resp_1", Request: json.RawMessage(`{}`)})
	// Another owner's run is refused with the same error as an unknown id,
	// so the answer does not reveal that the id exists.
	if !errors.Is(err, store.ErrUnknownPrevious) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cross-owner previous = %v, want ErrUnknownPrevious", err)
	}
	if _, err := s.Run(ctx, "resp_4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run must not be stored: %v", err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	a := newRun(t, s, store.NewRun{ID: "resp_a", SessionID: "s_a", Owner: "o", IdempotencyKey: "k"})
	again, created, _, err := s.CreateRun(ctx, store.NewRun{ID: "resp_b", SessionID: "s_b", Owner: "o", IdempotencyKey: "k", Request: json.RawMessage(`{}`)})
	if err != nil || created || again.ID != a.ID {
		t.Fatalf("live key: got %s created=%v err=%v, want re-attach to %s", again.ID, created, err, a.ID)
	}
	other := newRun(t, s, store.NewRun{ID: "resp_c", SessionID: "s_c", Owner: "p", IdempotencyKey: "k"})
	if other.ID != "resp_c" {
		t.Fatalf("keys are scoped per owner")
	}
	if _, _, err := s.Start(ctx, "resp_a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "resp_a", store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	att, created, _, err := s.CreateRun(ctx, store.NewRun{ID: "resp_d", SessionID: "s_d", Owner: "o", IdempotencyKey: "k", IdempotencyTerminal: true, Request: json.RawMessage(`{}`)})
	if err != nil || created || att.ID != "resp_a" {
		t.Fatalf("idempotency_terminal: got %s created=%v err=%v, want resp_a", att.ID, created, err)
	}
	fresh, created, _, err := s.CreateRun(ctx, store.NewRun{ID: "resp_e", SessionID: "s_e", Owner: "o", IdempotencyKey: "k", Request: json.RawMessage(`{}`)})
	if err != nil || !created || fresh.ID != "resp_e" {
		t.Fatalf("terminal run frees its key: got %s created=%v err=%v", fresh.ID, created, err)
	}
}

func TestFinishWritesExactlyOneTerminalEvent(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	newRun(t, s, store.NewRun{ID: "resp_f", SessionID: "s_f"})
	if _, err := s.Finish(ctx, "resp_f", store.StatusCancelled, json.RawMessage(`{"status":"cancelled"}`), "cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "resp_f", store.StatusDone, nil, ""); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("second Finish = %v, want ErrAlreadyFinal", err)
	}
	if _, _, err := s.Start(ctx, "resp_f", nil); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("Start of a terminal run = %v, want ErrAlreadyFinal", err)
	}
	evs, err := s.Events(ctx, store.EventFilter{RunID: "resp_f"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	terminal := 0
	for _, e := range evs {
		names = append(names, e.Name)
		if e.Name == event.RunFinished {
			terminal++
		}
	}
	if terminal != 1 || len(evs) != 2 {
		t.Fatalf("events = %v, want run.queued then one run.finished", names)
	}
	r, _ := s.Run(ctx, "resp_f")
	if r.Status != store.StatusCancelled || r.FinishedAt.IsZero() || r.Error != "cancelled" {
		t.Fatalf("run = %+v", r)
	}
}

func TestCheckpointJournal(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_j", "s_j", "hi")
	// A resumed start must not append the input twice.
	if _, _, err := s.Start(ctx, "resp_j", []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
		t.Fatal(err)
	}
	calls := []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}, {ID: "c2", Name: "write_file", Arguments: json.RawMessage(`{}`)}}
	_, err := s.CommitStep(ctx, store.Step{RunID: "resp_j", SessionID: "s_j", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []store.Intent{{CallID: "c1", Name: "read_file", Args: calls[0].Arguments, ReadOnly: true}, {CallID: "c2", Name: "write_file", Args: calls[1].Arguments}},
		Usage:   model.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 40, CostUSD: 0.01},
		Events:  []event.Event{event.New("resp_j", "s_j", event.ModelCall, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_j", SessionID: "s_j", CallID: "c1", Name: "read_file", Text: "data"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_j", SessionID: "s_j", CallID: "c1", Name: "read_file", Text: "again"}); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("second result for one call = %v, want ErrAlreadyFinal", err)
	}
	j, err := s.Journal(ctx, "resp_j")
	if err != nil {
		t.Fatal(err)
	}
	if !j["c1"].Done || j["c1"].Result != "data" || !j["c1"].ReadOnly || j["c2"].Done {
		t.Fatalf("journal = %+v", j)
	}
	msgs, _ := s.Messages(ctx, "s_j")
	if len(msgs) != 3 || msgs[0].Content != "hi" || len(msgs[1].ToolCalls) != 2 || msgs[2].ToolCallID != "c1" {
		t.Fatalf("messages = %+v", msgs)
	}
	r, _ := s.Run(ctx, "resp_j")
	if r.Steps != 1 || r.Usage.InputTokens != 100 || r.Usage.Fresh() != 70 || r.Attempts != 2 {
		t.Fatalf("run after step = steps %d usage %+v attempts %d", r.Steps, r.Usage, r.Attempts)
	}
}

func TestSweepKeepsJournalOfLiveRuns(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for _, id := range []string{"live", "over"} {
		session(t, s, id, "s_"+id, nil)
		if _, err := s.CommitStep(ctx, store.Step{RunID: id, SessionID: "s_" + id, Model: "m",
			Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)}}},
			Intents: []store.Intent{{CallID: "c", Name: "t", Args: json.RawMessage(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Finish(ctx, "over", store.StatusDone, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	r, err := s.Sweep(ctx, future, future, store.Keep{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Journal != 1 || r.Events == 0 {
		t.Fatalf("sweep %+v: want the finished run's journal row and every event", r)
	}
	if j, _ := s.Journal(ctx, "live"); len(j) != 1 {
		t.Fatalf("the live run lost its journal: %v", j)
	}
}

// A run's final reply and its end commit together: the reply, the step's
// counters and events, then run.finished, all in order; a run that ended
// meanwhile (cancelled elsewhere) keeps its end and stores no reply.
func TestFinishStepCommitsTheReplyWithTheEnd(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_s", "s_s", "hi")
	st := store.Step{RunID: "resp_s", SessionID: "s_s", Model: "m2",
		Message: model.Message{Role: model.RoleAssistant, Content: "the answer"},
		Usage:   model.Usage{InputTokens: 30, OutputTokens: 7, CostUSD: 0.5},
		Events:  []event.Event{event.New("resp_s", "s_s", event.ModelCall, nil)}}
	var built store.Run
	result := func(r store.Run) json.RawMessage {
		built = r
		return json.RawMessage(`{"status":"completed"}`)
	}
	stepEvs, fin, err := s.FinishStep(ctx, st, store.StatusDone, result, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(stepEvs) != 1 || stepEvs[0].Name != event.ModelCall || stepEvs[0].ID == 0 || fin.ID <= stepEvs[0].ID {
		t.Fatalf("step events %+v and run.finished %+v: want the step's event first, both with ids", stepEvs, fin)
	}
	if fin.Name != event.RunFinished || fin.Turn != 1 {
		t.Fatalf("run.finished = %+v, want turn 1 (the final reply's)", fin)
	}
	// The result is built from the run with the reply counted.
	if built.Steps != 1 || built.Usage.InputTokens != 30 || built.Model != "m2" || built.SessionID != "s_s" {
		t.Fatalf("the result was built from %+v, want the run with its final step counted", built)
	}
	r, err := s.Run(ctx, "resp_s")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusDone || r.Steps != 1 || r.Usage.InputTokens != 30 || r.Usage.OutputTokens != 7 || r.Model != "m2" || string(r.Result) != `{"status":"completed"}` {
		t.Fatalf("run = %+v", r)
	}
	msgs, err := s.Messages(ctx, "s_s")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].Content != "the answer" {
		t.Fatalf("messages = %+v, want the request and the final reply", msgs)
	}
	if owed, err := s.ReflectionsOwed(ctx); err != nil || len(owed) != 1 || owed[0] != "resp_s" {
		t.Fatalf("reflections owed = %v (%v), want resp_s", owed, err)
	}

	startRun(t, s, "resp_c", "s_c", "hi")
	if _, err := s.Finish(ctx, "resp_c", store.StatusCancelled, nil, "cancelled"); err != nil {
		t.Fatal(err)
	}
	st.RunID, st.SessionID = "resp_c", "s_c"
	if _, _, err := s.FinishStep(ctx, st, store.StatusDone, result, "", false); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("FinishStep of a cancelled run = %v, want ErrAlreadyFinal", err)
	}
	msgs, err = s.Messages(ctx, "s_c")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("messages of the cancelled run = %+v, want only its request", msgs)
	}
}
