package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// recallScript notes a fact when told one, and when asked for it later calls
// recall and answers with what came back.
func recallScript(req modeltest.ChatRequest) modeltest.Reply {
	// This turn's words: the user messages after the last answer or tool
	// result (the request and the per-turn block the spine adds).
	var turn strings.Builder
	i := len(req.Messages) - 1
	for ; i >= 0 && req.Messages[i].Role == "user"; i-- {
		turn.WriteString(req.Messages[i].Content)
	}
	if i >= 0 && req.Messages[i].Role == "tool" {
		return modeltest.Reply{Text: "From recall: " + req.Messages[i].Content}
	}
	if strings.Contains(turn.String(), "Remember the courier code") {
		return modeltest.Reply{Text: "Noted: the courier code is Tangerine Okapi 5521."}
	}
	if !req.HasTool("recall") {
		return modeltest.Reply{Text: "no recall tool offered"}
	}
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_recall", Name: "recall", Arguments: `{"query":"courier code"}`}}}
}

// TestRecallReadsBackAnEarlierTurnOfItsOwnSessionOnly: a fact the agent
// noted in one run of a conversation is found by recall in a later run of
// the same conversation, and by no other conversation or owner.
func TestRecallReadsBackAnEarlierTurnOfItsOwnSessionOnly(t *testing.T) {
	fake := startScript(t, recallScript)
	fake.RequireKey("fake-key")
	d := newDaemon(t, fake)

	answer := func(owner, body string) (string, string) {
		t.Helper()
		s, b := d.callAs(owner, "POST", "/v1/responses", body)
		var resp struct {
			ID         string `json:"id"`
			Status     string `json:"status"`
			OutputText string `json:"output_text"`
		}
		if err := json.Unmarshal(b, &resp); err != nil || s != 200 || resp.Status != "completed" {
			t.Fatalf("run %s: %d %s\nlog:\n%s", body, s, b, d.logText())
		}
		return resp.ID, resp.OutputText
	}
	first, _ := answer("alice", `{"input":"Remember the courier code for later."}`)
	second, got := answer("alice", `{"input":"Which courier code did you note?","previous_response_id":"`+first+`"}`)
	if !strings.Contains(got, "Tangerine Okapi 5521") || !strings.Contains(got, "run "+first) {
		t.Fatalf("recall in the same conversation answered %q, want the noted code and its run", got)
	}
	for _, owner := range []string{"alice", "bob"} {
		_, other := answer(owner, `{"input":"Which courier code did you note?"}`)
		if strings.Contains(other, "Tangerine") || !strings.Contains(other, "No earlier message matches") {
			t.Fatalf("recall in a new conversation of %s answered %q, want no match", owner, other)
		}
	}
	s, b := d.callAs("alice", "GET", "/v1/tasks/"+second+"/events?since=0", "")
	if s != 200 || !strings.Contains(string(b), `"name":"recall"`) || !strings.Contains(string(b), `"hits":2`) {
		t.Fatalf("the second run's events have no recall event with its two hits (the first run's request and note): %d %.3000s", s, b)
	}
}
