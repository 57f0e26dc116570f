package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// indexState is recall_index.upto and the newest message id.
func indexState(t *testing.T, s *Store) (upto, newest int64) {
	t.Helper()
	if err := s.r.QueryRow(`SELECT (SELECT upto FROM recall_index), COALESCE((SELECT max(id) FROM messages), 0)`).Scan(&upto, &newest); err != nil {
		t.Fatal(err)
	}
	return upto, newest
}

func recallTexts(t *testing.T, s *Store, sessionID, text string) []string {
	t.Helper()
	hits, err := s.Recall(context.Background(), RecallQuery{SessionID: sessionID, Text: text, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Content+string(mustJSON(t, h.ToolCalls)))
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecallIndexesInBatches checks the batched index: messages a step
// stores wait unindexed, a search still finds them (and a rewrite made
// before indexing is what it finds), a restart loses none of them, enough
// waiting messages are indexed by a write with no search, and a rewrite
// after indexing still replaces what the index holds.
func TestRecallIndexesInBatches(t *testing.T) {
	SQLiteOnly(t, "the batched FTS5 index is SQLite's; PostgreSQL's GIN index follows the table")
	ctx := context.Background()
	path := TestingDSN(t)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	start := func(s *Store, runID, sessionID string, msgs []model.Message) {
		t.Helper()
		if _, _, _, err := s.CreateRun(ctx, NewRun{ID: runID, SessionID: sessionID, Request: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Start(ctx, runID, msgs); err != nil {
			t.Fatal(err)
		}
	}
	step := func(s *Store, runID, sessionID, callID, args string) {
		t.Helper()
		a := json.RawMessage(args)
		if _, err := s.CommitStep(ctx, Step{RunID: runID, SessionID: sessionID, Model: "m",
			Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: callID, Name: "write_file", Arguments: a}}},
			Intents: []Intent{{CallID: callID, Name: "write_file", Args: a}}}); err != nil {
			t.Fatal(err)
		}
	}
	start(s, "resp_b1", "s_b1", []model.Message{{Role: model.RoleUser, Content: "write the survey"}})
	step(s, "resp_b1", "s_b1", "c1", `{"path":"a.md","content":"Copperfield notes"}`)
	if _, err := s.CommitToolResult(ctx, ToolResult{RunID: "resp_b1", SessionID: "s_b1", CallID: "c1", Name: "write_file",
		Text: "wrote the Bramblewood survey", BoundArgs: json.RawMessage(`{"path":"a.md","content":"[delta:elided 17 bytes]"}`)}); err != nil {
		t.Fatal(err)
	}
	if upto, newest := indexState(t, s); upto >= newest {
		t.Fatalf("after one step the index holds up to %d of %d: want the step's messages still waiting", upto, newest)
	}
	if got := recallTexts(t, s, "s_b1", "bramblewood"); len(got) != 1 || !strings.Contains(got[0], "Bramblewood") {
		t.Fatalf("Recall(bramblewood) = %q, want the waiting tool result", got)
	}
	if got := recallTexts(t, s, "s_b1", "copperfield"); len(got) != 0 {
		t.Fatalf("Recall(copperfield) = %q, want nothing: the arguments were rewritten before indexing", got)
	}
	if upto, newest := indexState(t, s); upto != newest {
		t.Fatalf("after a search the index holds up to %d of %d", upto, newest)
	}

	// Waiting messages survive a restart: the next search indexes them.
	step(s, "resp_b1", "s_b1", "c2", `{"path":"b.md","content":"Quillfeather draft"}`)
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := recallTexts(t, s, "s_b1", "quillfeather"); len(got) != 1 {
		t.Fatalf("after a restart Recall(quillfeather) = %q, want the message stored before it", got)
	}
	// A rewrite of an indexed message replaces what the index holds.
	if _, err := s.CommitToolResult(ctx, ToolResult{RunID: "resp_b1", SessionID: "s_b1", CallID: "c2", Name: "write_file",
		Text: "ok", BoundArgs: json.RawMessage(`{"path":"b.md","content":"[delta:elided 18 bytes]"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := recallTexts(t, s, "s_b1", "quillfeather"); len(got) != 0 {
		t.Fatalf("Recall(quillfeather) = %q after its arguments were rewritten, want nothing", got)
	}

	// Enough waiting messages are indexed by a write, with no search.
	msgs := make([]model.Message, recallGrain)
	for i := range msgs {
		msgs[i] = model.Message{Role: model.RoleUser, Content: fmt.Sprintf("filler row %d", i)}
	}
	start(s, "resp_b2", "s_b2", msgs)
	if upto, newest := indexState(t, s); upto != newest {
		t.Fatalf("after %d messages the index holds up to %d of %d: want them indexed by the write", recallGrain, upto, newest)
	}
	if got := recallTexts(t, s, "s_b2", "filler"); len(got) != 5 {
		t.Fatalf("Recall(filler) = %d hits, want 5", len(got))
	}
}
