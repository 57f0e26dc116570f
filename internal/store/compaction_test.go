package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

func TestCommitCompactionHidesRowsButKeepsThem(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	call := model.ToolCall{ID: "c1", Name: "grep", Arguments: []byte(`{"q":"x"}`)}
	session(t, s, "r1", "s1", []model.Message{user("first ask about the Zanzibar ledger")})
	if _, err := s.CommitStep(ctx, store.Step{RunID: "r1", SessionID: "s1", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}},
		Intents: []store.Intent{{CallID: "c1", Name: "grep", Args: call.Arguments}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "r1", SessionID: "s1", CallID: "c1", Name: "grep", Text: "found it"}); err != nil {
		t.Fatal(err)
	}
	// A cut after the assistant message would leave its result behind.
	_, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: 2, Summary: "x"})
	if !errors.Is(err, store.ErrSplitTurn) {
		t.Fatalf("cut between a call and its result = %v, want ErrSplitTurn", err)
	}
	if _, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: 9, Summary: "x"}); err == nil {
		t.Fatal("covering more messages than are active succeeded")
	}
	before, _ := s.Run(ctx, "r1")
	evs, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: 1, Summary: "the note",
		Anchors: []string{"Zanzibar"}, TailRows: 2, RecapChars: 100,
		Usage:  model.Usage{InputTokens: 50, OutputTokens: 7, CostUSD: 0.01},
		Events: []event.Event{event.New("r1", "s1", event.Compaction, map[string]int{"covered": 1})}})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].ID == 0 {
		t.Fatal("the compaction event has no id: it was not written in the transaction")
	}
	msgs, err := s.Messages(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != model.RoleAssistant {
		t.Fatalf("active messages = %+v, want the assistant call and its result", msgs)
	}
	after, _ := s.Run(ctx, "r1")
	if after.Steps != before.Steps || after.Usage.InputTokens != before.Usage.InputTokens+50 || after.Usage.OutputTokens != before.Usage.OutputTokens+7 {
		t.Fatalf("run after compaction: steps %d usage %+v; want steps %d and the summarizer's usage added", after.Steps, after.Usage, before.Steps)
	}
	// Recall still reads the replaced message back.
	hits, err := s.Recall(ctx, store.RecallQuery{SessionID: "s1", Text: "Zanzibar ledger"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("recall of a compacted message = %v, %v; want it found", hits, err)
	}
	// The state survives a reopen.
	s.Close()
	s2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c, ok, err := s2.LatestCompaction(ctx, "s1")
	if err != nil || !ok {
		t.Fatalf("LatestCompaction = %v, %v", ok, err)
	}
	if c.Summary != "the note" || c.Covered != 1 || c.TailRows != 2 || c.RecapChars != 100 || len(c.Anchors) != 1 || c.RunID != "r1" {
		t.Fatalf("compaction = %+v", c)
	}
	if msgs, _ := s2.Messages(ctx, "s1"); len(msgs) != 2 {
		t.Fatalf("after reopen %d active messages, want 2", len(msgs))
	}
	if _, ok, _ := s2.LatestCompaction(ctx, "other"); ok {
		t.Fatal("a session never compacted has a compaction")
	}
}

// A database main's binary already migrated past the revisions table
// (version 10) still gets the compaction schema.
func TestCompactionMigrationAppliesAfterVersionTen(t *testing.T) {
	store.SQLiteOnly(t, "rewinds a SQLite file's schema through PRAGMA user_version")
	ctx := context.Background()
	s, path := open(t)
	s.Close()
	rewrite(t, path, "DROP INDEX messages_inactive", "DROP TABLE compactions", "ALTER TABLE messages DROP COLUMN active", "PRAGMA user_version = 10")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	session(t, s, "r1", "s1", []model.Message{user("hello")})
	if _, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: 1, Summary: "n"}); err != nil {
		t.Fatalf("compaction after migrating from version 10: %v", err)
	}
}

// TestCompactionsCoverTheOldestActiveInTurn: each compaction covers the
// oldest messages still active, so after two of them the window is the
// newest messages, in order, and another session's older messages are
// none of its business.
func TestCompactionsCoverTheOldestActiveInTurn(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	session(t, s, "r2", "s2", []model.Message{user("other one"), user("other two")})
	session(t, s, "r1", "s1", []model.Message{user("one"), user("two"), user("three")})
	if _, err := s.CommitStep(ctx, store.Step{RunID: "r1", SessionID: "s1", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, Content: "four"}}); err != nil {
		t.Fatal(err)
	}
	window := func(sessionID string) []string {
		t.Helper()
		msgs, err := s.Messages(ctx, sessionID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	for _, c := range []struct {
		covered int
		want    []string
	}{{1, []string{"two", "three", "four"}}, {2, []string{"four"}}} {
		if _, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: c.covered, Summary: "n"}); err != nil {
			t.Fatal(err)
		}
		if got := window("s1"); !slices.Equal(got, c.want) {
			t.Fatalf("after covering %d more: window %q, want %q", c.covered, got, c.want)
		}
	}
	if _, err := s.CommitCompaction(ctx, store.Compact{RunID: "r1", SessionID: "s1", Covered: 2, Summary: "n"}); err == nil {
		t.Fatal("covering 2 of 1 active message succeeded")
	}
	if got := window("s2"); !slices.Equal(got, []string{"other one", "other two"}) {
		t.Fatalf("the other session's window = %q, want it whole", got)
	}
}
