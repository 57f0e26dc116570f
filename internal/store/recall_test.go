package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

func contents(hits []store.RecallHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Content)
	}
	return out
}

func TestRecallMatching(t *testing.T) {
	s, _ := open(t)
	session(t, s, "resp_a", "s_a", []model.Message{
		user("Our contact is María Delgado, Acme Robotics."),
		user("The deployment finished at 14:02 with build 4471."),
		user("robotics first, and acme later, far apart"),
		user("acme robotics makes arms"),
		user("what is the plan"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "write_file",
			Arguments: json.RawMessage(`{"path":"notes.md","content":"line one\nZebra42 is the vendor code"}`)}}},
	})
	session(t, s, "resp_b", "s_b", []model.Message{user("Only in session b: Quixotic Walrus 9931")})

	cases := []struct {
		query string
		first string // content of the first hit; "" = no hit
	}{
		{"maria delgado", "Our contact is María Delgado, Acme Robotics."},                 // case and diacritics folded
		{"MARÍA", "Our contact is María Delgado, Acme Robotics."},                         // the query folds too
		{"deploy", "The deployment finished at 14:02 with build 4471."},                   // prefix
		{"4471", "The deployment finished at 14:02 with build 4471."},                     // numbers
		{"acme robotics", "acme robotics makes arms"},                                     // the phrase ranks first
		{"what is the build number", "The deployment finished at 14:02 with build 4471."}, // function words dropped
		{"zebra42", ""},         // checked below: a tool call's arguments
		{"quixotic walrus", ""}, // another session's message
		{`") OR NEAR(acme`, "acme robotics makes arms"}, // query syntax is not the caller's
		{"   ", ""},
	}
	for _, c := range cases {
		hits, err := s.Recall(context.Background(), store.RecallQuery{SessionID: "s_a", Text: c.query, Limit: 5})
		if err != nil {
			t.Fatalf("Recall(%q): %v", c.query, err)
		}
		if c.query == "zebra42" {
			if len(hits) != 1 || len(hits[0].ToolCalls) != 1 || hits[0].ToolCalls[0].ID != "c1" {
				t.Fatalf("Recall(zebra42) = %+v, want the write_file call", hits)
			}
			continue
		}
		if c.first == "" {
			if len(hits) != 0 {
				t.Errorf("Recall(%q) = %q, want nothing", c.query, contents(hits))
			}
			continue
		}
		if len(hits) == 0 || hits[0].Content != c.first {
			t.Errorf("Recall(%q) = %q, want %q first", c.query, contents(hits), c.first)
		}
	}
	hits, _ := s.Recall(context.Background(), store.RecallQuery{SessionID: "s_a", Text: "acme robotics", Limit: 5})
	if len(hits) != 3 || !hits[0].Phrase || !hits[1].Phrase || hits[2].Phrase {
		t.Fatalf("acme robotics = %+v; want the two phrase matches, then the one with both words apart", hits)
	}
	if hits, _ := s.Recall(context.Background(), store.RecallQuery{SessionID: "s_a", Text: "what is the", Limit: 5}); len(hits) != 1 || hits[0].Content != "what is the plan" {
		t.Fatalf("a query of function words only = %q, want the one message holding them", contents(hits))
	}
}

func TestRecallSearchesOnlyTheNewestWindow(t *testing.T) {
	s, _ := open(t)
	msgs := []model.Message{user("the oldest fact: Obsidian Heron")}
	for i := 0; i < store.RecallWindow; i++ {
		msgs = append(msgs, user(fmt.Sprintf("filler row %d", i)))
	}
	msgs = append(msgs[:1], msgs[2:]...) // the oldest row is now exactly one past the window
	msgs = append(msgs, user("the newest fact: Obsidian Falcon"))
	session(t, s, "resp_w", "s_w", msgs)
	hits, err := s.Recall(context.Background(), store.RecallQuery{SessionID: "s_w", Text: "obsidian", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(hits); len(got) != 1 || !strings.Contains(got[0], "Falcon") {
		t.Fatalf("Recall(obsidian) = %q, want only the row inside the newest %d", got, store.RecallWindow)
	}
}

func TestRecallIndexFollowsRewritesAndBackfillsOldDatabases(t *testing.T) {
	store.SQLiteOnly(t, "drops the FTS5 index and rewinds PRAGMA user_version (TestPostgresRecallBackfillsAndFollowsRewrites is its PostgreSQL half)")
	ctx := context.Background()
	s, path := open(t)
	session(t, s, "resp_o", "s_o", []model.Message{user("an old row about Copperfield")})
	s.Close()

	// Make the file look like one written before the index existed.
	rewrite(t, path, "DROP INDEX messages_inactive", "DROP TABLE compactions", "ALTER TABLE messages DROP COLUMN active",
		"DROP TRIGGER messages_fts_insert", "DROP TRIGGER messages_fts_delete",
		"DROP TRIGGER messages_fts_update", "DROP VIEW messages_recall_text", "DROP TABLE messages_fts", "PRAGMA user_version = 7")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if hits, err := s.Recall(ctx, store.RecallQuery{SessionID: "s_o", Text: "copperfield", Limit: 5}); err != nil || len(hits) != 1 {
		t.Fatalf("after the migration Recall = %q, %v; want the old row", contents(hits), err)
	}
}

func TestBoundedCallsAndJournalCall(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	session(t, s, "resp_x", "s_x", []model.Message{user("write it")})
	full := json.RawMessage(`{"path":"big.txt","content":"` + strings.Repeat("x", 5000) + `"}`)
	calls := []model.ToolCall{{ID: "c1", Name: "write_file", Arguments: full}, {ID: "c2", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}}
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_x", SessionID: "s_x", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []store.Intent{{CallID: "c1", Name: "write_file", Args: full}, {CallID: "c2", Name: "read_file", Args: calls[1].Arguments, ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	bounded := json.RawMessage(`{"path":"big.txt","content":"[delta:elided 5002 bytes of call c1 — full arguments kept in the run journal]"}`)
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_x", SessionID: "s_x", CallID: "c1", Name: "write_file", Text: "ok", BoundArgs: bounded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.BoundedCalls(ctx, "s_x", 10)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := s.Run(ctx, "resp_x")
	if len(got) != 1 || got[0].Call.ID != "c1" || got[0].RunSeq != run.Seq {
		t.Fatalf("BoundedCalls = %+v, want c1 of run %d", got, run.Seq)
	}
	name, args, err := s.JournalCall(ctx, "s_x", run.Seq, "c1")
	if err != nil || name != "write_file" || string(args) != string(full) {
		t.Fatalf("JournalCall = %s, %d bytes, %v; want the whole arguments", name, len(args), err)
	}
	if _, _, err := s.JournalCall(ctx, "s_other", run.Seq, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("JournalCall from another session = %v, want ErrNotFound", err)
	}
}

// FuzzRecallQuery: whatever the model writes as a query, the search runs
// (FTS5's query syntax never reaches the index from the caller's words) and
// answers only the session's own messages.
func FuzzRecallQuery(f *testing.F) {
	for _, s := range []string{"maria delgado", `"unbalanced`, "a OR b NOT c", "NEAR(x y, 2)", "col : word", "x*", "^start", "(", "\x00\xff", "é ü ß", "- + ~ ^ * \""} {
		f.Add(s)
	}
	s, _ := open(f)
	session(f, s, "resp_f", "s_f", []model.Message{user("María Delgado works at Acme NEAR the docks; col: word")})
	session(f, s, "resp_g", "s_g", []model.Message{user("another session entirely")})
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := s.Recall(context.Background(), store.RecallQuery{SessionID: "s_f", Text: q, Limit: 5})
		if err != nil {
			t.Fatalf("Recall(%q): %v", q, err)
		}
		for _, h := range hits {
			if h.RunID != "resp_f" {
				t.Fatalf("Recall(%q) returned message %d of run %s", q, h.ID, h.RunID)
			}
		}
	})
}
