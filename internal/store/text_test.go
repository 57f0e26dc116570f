package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// TestToolOutputThatIsNotTextCommits: a tool result holding a NUL byte and
// bytes that are not UTF-8 (a binary file read as text) checkpoints on
// both backends. SQLite keeps it verbatim; PostgreSQL's text cannot hold
// those bytes, so each becomes U+FFFD and the rest reads back unchanged.
func TestToolOutputThatIsNotTextCommits(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_b", "sess_b", "cat the file")
	args := json.RawMessage(`{"path":"a.bin"}`)
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_b", SessionID: "sess_b", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: args}}},
		Intents: []store.Intent{{CallID: "c1", Name: "read_file", Args: args, ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	raw := "head\x00tail \xff\xfe end"
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_b", SessionID: "sess_b", CallID: "c1", Name: "read_file", Text: raw}); err != nil {
		t.Fatalf("CommitToolResult of binary output: %v", err)
	}
	want := raw
	if store.TestingBackend() == "postgres" {
		want = "head\uFFFDtail \uFFFD end"
	}
	msgs, err := s.Messages(ctx, "sess_b")
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs[len(msgs)-1].Content; got != want {
		t.Fatalf("tool message = %q, want %q", got, want)
	}
	j, err := s.Journal(ctx, "resp_b")
	if err != nil {
		t.Fatal(err)
	}
	if j["c1"].Result != want || !j["c1"].Done {
		t.Fatalf("journal = %+v, want done with %q", j["c1"], want)
	}
}
