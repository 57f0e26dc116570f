package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// TestCommitToolResultBoundsOneCall: bounded arguments replace exactly the
// call that finished, on its assistant message, in the same transaction as
// its result; the journal keeps the arguments whole.
func TestCommitToolResultBoundsOneCall(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_1", "sess_1", "mail it")
	full := json.RawMessage(`{"to":"ops@example.com","body":"a very long body"}`)
	other := json.RawMessage(`{"path":"notes.md"}`)
	oddID := `call"<1>` // needs escaping in JSON, and HTML-escaping as json.Marshal writes it
	calls := []model.ToolCall{{ID: oddID, Name: "send_email", Arguments: full}, {ID: "call_2", Name: "read_file", Arguments: other}}
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_1", SessionID: "sess_1", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, Content: "sending", ToolCalls: calls},
		Intents: []store.Intent{{CallID: oddID, Name: "send_email", Args: full}, {CallID: "call_2", Name: "read_file", Args: other, ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	callArgs := func() map[string]string {
		t.Helper()
		msgs, err := s.Messages(ctx, "sess_1")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				out[c.ID] = string(c.Arguments)
			}
		}
		return out
	}

	// Not JSON: refused whole, and the result is not committed either.
	_, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_1", SessionID: "sess_1", CallID: oddID, Name: "send_email",
		Text: "sent", BoundArgs: json.RawMessage(`{"to":`)})
	if err == nil {
		t.Fatal("invalid bound arguments were accepted")
	}
	if j, _ := s.Journal(ctx, "resp_1"); j[oddID].Done {
		t.Fatal("a failed commit left the result journalled")
	}

	bound := json.RawMessage(`{"to":"ops@example.com","body":"[delta:elided 18 bytes]"}`)
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_1", SessionID: "sess_1", CallID: oddID, Name: "send_email",
		Text: "sent", BoundArgs: bound}); err != nil {
		t.Fatal(err)
	}
	got := callArgs()
	if got[oddID] != string(bound) || got["call_2"] != string(other) {
		t.Fatalf("stored arguments = %v, want %s bounded and call_2 untouched", got, oddID)
	}
	j, err := s.Journal(ctx, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if string(j[oddID].Args) != string(full) || !j[oddID].Done || j[oddID].Result != "sent" {
		t.Fatalf("journal entry = %+v, want the full arguments and the result", j[oddID])
	}

	// A second result for the same call is refused, and so is its rewrite.
	_, err = s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_1", SessionID: "sess_1", CallID: oddID, Name: "send_email",
		Text: "again", BoundArgs: json.RawMessage(`{}`)})
	if !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("second result = %v, want ErrAlreadyFinal", err)
	}
	if got := callArgs(); got[oddID] != string(bound) {
		t.Fatalf("a refused result rewrote the arguments: %s", got[oddID])
	}

	// Without BoundArgs the stored arguments stay as they are.
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_1", SessionID: "sess_1", CallID: "call_2", Name: "read_file", Text: "# notes"}); err != nil {
		t.Fatal(err)
	}
	if got := callArgs(); got["call_2"] != string(other) {
		t.Fatalf("call_2 arguments = %s", got["call_2"])
	}
}

// TestCommitStepWritesHeldResultsFirst: results held for a checkpoint are
// written in its transaction before the step's message, with their events
// first; a held result for a call already done is dropped, the first result
// standing, and the rest still commit.
func TestCommitStepWritesHeldResultsFirst(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_h", "sess_h", "look")
	args := json.RawMessage(`{}`)
	calls := []model.ToolCall{{ID: "a", Name: "read", Arguments: args}, {ID: "b", Name: "read", Arguments: args}}
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_h", SessionID: "sess_h", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []store.Intent{{CallID: "a", Name: "read", Args: args, ReadOnly: true}, {CallID: "b", Name: "read", Args: args, ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitToolResult(ctx, store.ToolResult{RunID: "resp_h", SessionID: "sess_h", CallID: "a", Name: "read", Text: "first"}); err != nil {
		t.Fatal(err)
	}
	held := []store.ToolResult{
		{RunID: "resp_h", SessionID: "sess_h", CallID: "a", Name: "read", Text: "again", Events: []event.Event{event.New("resp_h", "sess_h", event.ToolResult, nil)}},
		{RunID: "resp_h", SessionID: "sess_h", CallID: "b", Name: "read", Text: "held", Events: []event.Event{event.New("resp_h", "sess_h", event.ToolResult, nil)}},
	}
	evs, err := s.CommitStep(ctx, store.Step{RunID: "resp_h", SessionID: "sess_h", Model: "m", Results: held,
		Message: model.Message{Role: model.RoleAssistant, Content: "done"},
		Events:  []event.Event{event.New("resp_h", "sess_h", event.TurnStarted, nil), event.New("resp_h", "sess_h", event.Checkpoint, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, e := range evs {
		names = append(names, e.Name)
		if e.ID == 0 || (i > 0 && e.ID <= evs[i-1].ID) {
			t.Fatalf("event %s id %d after %v", e.Name, e.ID, evs[:i])
		}
	}
	if want := []string{event.ToolResult, event.TurnStarted, event.Checkpoint}; !slices.Equal(names, want) {
		t.Fatalf("events written %v, want %v", names, want)
	}
	j, err := s.Journal(ctx, "resp_h")
	if err != nil {
		t.Fatal(err)
	}
	if j["a"].Result != "first" || !j["b"].Done || j["b"].Result != "held" {
		t.Fatalf("journal %+v", j)
	}
	msgs, err := s.Messages(ctx, "sess_h")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	if want := []string{"user:look", "assistant:", "tool:first", "tool:held", "assistant:done"}; !slices.Equal(got, want) {
		t.Fatalf("conversation %v, want %v", got, want)
	}
}

// TestCommitStepGivesEachEventItsStoredID: the ids a step's commit hands
// back are the ids its events are stored under, in order, for a step with
// more events than one statement inserts and with other events between
// its commits.
func TestCommitStepGivesEachEventItsStoredID(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_ids", "s_ids", "hi")
	var want []event.Event
	for i, n := range []int{1, 5, 16, 17, 40} {
		if err := s.AddEvents(ctx, []event.Event{event.New("resp_ids", "s_ids", event.ModelRetry, map[string]any{"between": i})}); err != nil {
			t.Fatal(err)
		}
		var evs []event.Event
		for j := range n {
			evs = append(evs, event.New("resp_ids", "s_ids", event.ToolCall, map[string]any{"step": i, "event": j}))
		}
		evs[n-1].Data = nil // a row without data among them
		got, err := s.CommitStep(ctx, store.Step{RunID: "resp_ids", SessionID: "s_ids", Model: "m",
			Message: model.Message{Role: model.RoleAssistant, Content: "x"}, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("step %d: %d events back, want %d", i, len(got), n)
		}
		want = append(want, got...)
	}
	stored, err := s.Events(ctx, store.EventFilter{RunID: "resp_ids", Name: event.ToolCall})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(want) {
		t.Fatalf("%d events stored, want %d", len(stored), len(want))
	}
	for i := range want {
		if stored[i].ID != want[i].ID || string(stored[i].Data) != string(want[i].Data) {
			t.Fatalf("event %d: stored id %d data %s, commit said id %d data %s", i, stored[i].ID, stored[i].Data, want[i].ID, want[i].Data)
		}
	}
}

// TestCommitResultsFillsIDsInPlace: a result's events get their ids in its
// own slice, which is how a caller tells a result written from one whose
// call was already done (left without ids).
func TestCommitResultsFillsIDsInPlace(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	startRun(t, s, "resp_in", "s_in", "hi")
	args := json.RawMessage(`{}`)
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_in", SessionID: "s_in", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "write_file", Arguments: args}}},
		Intents: []store.Intent{{CallID: "c1", Name: "write_file", Args: args}}}); err != nil {
		t.Fatal(err)
	}
	result := func() store.ToolResult {
		return store.ToolResult{RunID: "resp_in", SessionID: "s_in", CallID: "c1", Name: "write_file", Text: "ok",
			Events: []event.Event{event.New("resp_in", "s_in", event.ToolResult, map[string]any{"call_id": "c1"})}}
	}
	first := result()
	other := []event.Event{event.New("resp_in", "s_in", event.ModelRetry, nil)}
	got, err := s.CommitResults(ctx, []store.ToolResult{first}, other)
	if err != nil {
		t.Fatal(err)
	}
	if first.Events[0].ID == 0 || len(got) != 2 || got[0].ID != first.Events[0].ID || got[1].ID <= got[0].ID {
		t.Fatalf("first result: event id %d, written %+v", first.Events[0].ID, got)
	}
	again := result()
	got, err = s.CommitResults(ctx, []store.ToolResult{again}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Events[0].ID != 0 || len(got) != 0 {
		t.Fatalf("a result of a call already done: event id %d, written %+v; want neither", again.Events[0].ID, got)
	}
}
