package recall_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/recall"
	"github.com/deltaharness/delta/internal/tool/tooltest"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func run(t *testing.T, tl tool.Tool, sessionID string, args string) tool.Result {
	t.Helper()
	return tooltest.Run(t, tl, tool.Call{RunID: "resp_1", SessionID: sessionID, CallID: "call_r", Args: json.RawMessage(args)})
}

func TestSearchAnswersWholeMessagesWithTheirSpillFile(t *testing.T) {
	st := openStore(t)
	long := "Crawl log. " + strings.Repeat("row of nothing much. ", 400) + "The Vantablack supplier is Surrey NanoSystems. " + strings.Repeat("more rows. ", 300)
	session(t, st, "resp_1", "s_1", []model.Message{
		user("Find the supplier of Vantablack."),
		{Role: model.RoleTool, ToolCallID: "c1", Name: "web_fetch", Content: "Surrey NanoSystems makes Vantablack.\n…[90000 characters omitted; full result saved at .delta/spill/resp_1.c1.txt — read it with read_file]…\n"},
		{Role: model.RoleTool, ToolCallID: "c2", Name: "web_fetch", Content: long},
	})
	session(t, st, "resp_2", "s_2", []model.Message{user("Vantablack in another conversation")})
	var got []event.Event
	tl := recall.New(st, recall.Options{Record: func(_ context.Context, e event.Event) { got = append(got, e) }})

	res := run(t, tl, "s_1", `{"query":"vantablack supplier"}`)
	if res.IsError {
		t.Fatalf("search failed: %s", res.Text)
	}
	for _, want := range []string{
		"Surrey NanoSystems makes Vantablack.",                       // a short message comes back whole
		"spilled: the whole result is in .delta/spill/resp_1.c1.txt", // with its spill file
		"tool result of web_fetch (call c1)",
		"The Vantablack supplier is Surrey NanoSystems.", // a long one as the part around the match
		"bytes before…]",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("search answer lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "another conversation") {
		t.Errorf("search answer holds another session's message:\n%s", res.Text)
	}
	if len(res.Text) > recall.MaxText+500 {
		t.Errorf("search answer is %d bytes, over its bound", len(res.Text))
	}
	if len(got) != 1 || got[0].Name != event.Recall || got[0].RunID != "resp_1" || !strings.Contains(string(got[0].Data), `"hits":2`) {
		t.Fatalf("recall events = %+v, want one with 2 hits (the asking run's own request left out)", got)
	}

	if res := run(t, tl, "s_1", `{"query":"zanzibar"}`); res.IsError || !strings.Contains(res.Text, "No earlier message matches") {
		t.Errorf("no match = %+v", res)
	}
	if res := run(t, tl, "", `{"query":"vantablack"}`); !res.IsError {
		t.Errorf("a call without a session = %+v, want an error", res)
	}
}

func TestListAndReadBackBoundedArguments(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	session(t, st, "resp_1", "s_1", []model.Message{user("write the report")})
	body := strings.Repeat("é", 9000) + "END"
	full, _ := json.Marshal(map[string]string{"path": "report.md", "content": body})
	calls := []model.ToolCall{{ID: "c9", Name: "write_file", Arguments: full}}
	if _, err := st.CommitStep(ctx, store.Step{RunID: "resp_1", SessionID: "s_1", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []store.Intent{{CallID: "c9", Name: "write_file", Args: full}}}); err != nil {
		t.Fatal(err)
	}
	bounded := json.RawMessage(`{"path":"report.md","content":"[delta:elided 18005 bytes of call c9 — full arguments kept in the run journal]"}`)
	if _, err := st.CommitToolResult(ctx, store.ToolResult{RunID: "resp_1", SessionID: "s_1", CallID: "c9", Name: "write_file", Text: "ok", BoundArgs: bounded}); err != nil {
		t.Fatal(err)
	}
	r, _ := st.Run(ctx, "resp_1")
	tl := recall.New(st, recall.Options{})

	list := run(t, tl, "s_1", `{}`)
	want := "run_seq " + itoa(r.Seq) + ", call_id c9, write_file: field content"
	if !strings.Contains(list.Text, want) {
		t.Fatalf("list = %q, want it to name %q", list.Text, want)
	}
	page := run(t, tl, "s_1", `{"artifact":{"run_seq":`+itoa(r.Seq)+`,"call_id":"c9","field":"content"}}`)
	if page.IsError || !strings.Contains(page.Text, "characters 0–8000 of 9003; the next page starts at offset 8000") {
		t.Fatalf("first page = %.200q", page.Text)
	}
	last := run(t, tl, "s_1", `{"artifact":{"run_seq":`+itoa(r.Seq)+`,"call_id":"c9","field":"content"},"offset":8000}`)
	if !strings.HasSuffix(last.Text, strings.Repeat("é", 1000)+"END") || strings.Contains(last.Text, "next page") {
		t.Fatalf("last page = %.200q…", last.Text)
	}
	for args, want := range map[string]string{
		`{"artifact":{"run_seq":` + itoa(r.Seq) + `,"call_id":"c9","field":"body"}}`:                  "it has: content, path",
		`{"artifact":{"run_seq":` + itoa(r.Seq) + `,"call_id":"nope"}}`:                               "no call nope",
		`{"artifact":{"run_seq":` + itoa(r.Seq) + `,"call_id":"c9","field":"content"},"offset":9999}`: "past the end",
		`{"artifact":{"run_seq":0,"call_id":"c9"}}`:                                                   "needs run_seq and call_id",
	} {
		if res := run(t, tl, "s_1", args); !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("recall %s = %q, want an error saying %q", args, res.Text, want)
		}
	}
	// Another session cannot read this one's journal.
	session(t, st, "resp_2", "s_2", []model.Message{user("hello")})
	if res := run(t, tl, "s_2", `{"artifact":{"run_seq":`+itoa(r.Seq)+`,"call_id":"c9"}}`); !res.IsError {
		t.Fatalf("artifact from another session = %q, want an error", res.Text)
	}
	if res := run(t, tl, "s_2", `{}`); !strings.Contains(res.Text, "No tool arguments were shortened") {
		t.Fatalf("list in another session = %q", res.Text)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func user(text string) model.Message { return model.Message{Role: model.RoleUser, Content: text} }

// TestALongQueryIsNotEchoedWhole: a search with a 15,000-character query
// answers naming the query clipped, so the answer does not put the whole
// query into the conversation a second time.
func TestALongQueryIsNotEchoedWhole(t *testing.T) {
	st := openStore(t)
	session(t, st, "resp_1", "s_1", []model.Message{user("Find the supplier of Vantablack.")})
	tl := recall.New(st, recall.Options{})
	for _, q := range []string{strings.Repeat("nothing ", 2000), "vantablack " + strings.Repeat("nothing ", 2000)} {
		res := run(t, tl, "s_1", `{"query":"`+q+`"}`)
		if res.IsError || len(res.Text) > 1000 {
			t.Fatalf("a %d-character query got a %d-byte answer: %.300s", len(q), len(res.Text), res.Text)
		}
	}
}

// TestLongMessageExcerptHoldsADiacriticMatch: a query word found in a
// long message only with its diacritics folded ("Maria" for "María") gets
// the part of the message around that match, not the message's opening.
func TestLongMessageExcerptHoldsADiacriticMatch(t *testing.T) {
	st := openStore(t)
	long := "Crawl log. " + strings.Repeat("İstanbul row of nothing much. ", 300) + "The contract owner is María Fernández of Lisbon. " + strings.Repeat("more rows. ", 300)
	session(t, st, "resp_0", "s_1", []model.Message{user("Crawl the registry."),
		{Role: model.RoleTool, ToolCallID: "c1", Name: "web_fetch", Content: long}})
	res := run(t, recall.New(st, recall.Options{}), "s_1", `{"query":"Maria Fernandez"}`)
	if res.IsError || !strings.Contains(res.Text, "The contract owner is María Fernández of Lisbon.") || !strings.Contains(res.Text, "bytes before…]") {
		t.Fatalf("the excerpt misses the match:\n%.2000s", res.Text)
	}
}
