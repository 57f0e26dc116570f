package scripted

import (
	"encoding/json"
	"strings"
	"testing"
)

// browseResults are tool results shaped like bobby's and delta's texts.
var browseResults = map[string]string{
	"start":  "completed workflow_start workflowHandle=wf_0a1b sessionId=s1 pageId=p1",
	"search": "completed intent_complete_form\nSearch the shop = Trail Kayak Paddle",
	"found":  "completed intent_submit_and_verify\nverified by button \"Search\" [ref=e3]: navigated to http://shop/product/trail-kayak-paddle (GET 200 Document)",
	"detail": "completed a11y_snapshot\n- heading \"Trail Kayak Paddle\" [level=1] [ref=e1]\n- text: Price: $123.45\n- text: SKU: TKP-000042",
	"fill":   "completed intent_complete_form\nYour email = demo@example.com",
	"send":   "completed intent_submit_and_verify\nverified by button \"Send question\" [ref=e9]: navigated to http://shop/ask (POST 200 Document)",
	"answer": "completed a11y_snapshot\n- text: Ticket: Q-deadbeef",
	"phase":  "completed toolset_select phase=verify",
	"shot":   "completed screenshot\n[image: .delta/media/d/bobby__screenshot-browse_shot-1.png (image/png, 1234 bytes)]",
	"report": "wrote 300 bytes to report.md (new file)",
}

var browseOrder = []string{"start", "search", "found", "detail", "fill", "send", "answer", "phase", "shot", "report"}

func browseTools(names ...string) []ChatTool {
	var out []ChatTool
	for _, n := range names {
		out = append(out, ChatTool{Name: n})
	}
	return out
}

var allBrowseTools = browseTools("write_file", "search_tools", "bobby__workflow_start", "bobby__intent_complete_form",
	"bobby__intent_submit_and_verify", "bobby__a11y_snapshot", "bobby__toolset_select", "bobby__screenshot")

// TestBrowseScriptPlan plays the whole plan: each reply is the next call,
// with arguments read from earlier results, then the final answer.
func TestBrowseScriptPlan(t *testing.T) {
	msgs := []ChatMessage{user(BrowseTask("http://shop", "Trail Kayak Paddle", "demo@example.com", "Does it float?"))}
	for _, id := range browseOrder {
		rep := BrowseScript()(ChatRequest{Messages: msgs, Tools: allBrowseTools})
		if len(rep.ToolCalls) != 1 || rep.ToolCalls[0].ID != "browse_"+id {
			t.Fatalf("before %s: reply %+v", id, rep)
		}
		tc := rep.ToolCalls[0]
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
			t.Fatalf("%s arguments %q: %v", id, tc.Arguments, err)
		}
		switch id {
		case "start":
			if args["url"] != "http://shop/" {
				t.Errorf("workflow_start url = %v", args["url"])
			}
		case "search", "found", "detail", "fill", "send", "answer", "shot":
			if args["workflowHandle"] != "wf_0a1b" {
				t.Errorf("%s workflowHandle = %v", id, args["workflowHandle"])
			}
		case "report":
			content, _ := args["content"].(string)
			for _, want := range []string{"# Trail Kayak Paddle", "Price: $123.45", "SKU: TKP-000042", "Question sent: Does it float?",
				"Submission: verified by button \"Send question\"", "Shop ticket: Q-deadbeef", "Screenshot: .delta/media/d/bobby__screenshot-browse_shot-1.png"} {
				if !strings.Contains(content, want) {
					t.Errorf("report lacks %q:\n%s", want, content)
				}
			}
		}
		msgs = append(msgs, call(tc.ID, tc.Name, tc.Arguments), result(tc.ID, browseResults[id]))
	}
	rep := BrowseScript()(ChatRequest{Messages: msgs, Tools: allBrowseTools})
	if len(rep.ToolCalls) != 0 || !strings.Contains(rep.Text, "Wrote report.md: Trail Kayak Paddle costs $123.45") || !strings.Contains(rep.Text, "Q-deadbeef") {
		t.Fatalf("final reply %+v", rep)
	}
}

// TestBrowseScriptStops: an error result, a missing fact and a tool that is
// not offered each end in a text answer saying why (search_tools first).
func TestBrowseScriptStops(t *testing.T) {
	task := user(BrowseTask("http://shop", "Trail Kayak Paddle", "demo@example.com", "Q?"))
	started := []ChatMessage{task, call("browse_start", "bobby__workflow_start", "{}"), result("browse_start", browseResults["start"])}

	failed := append(append([]ChatMessage{}, started...), call("browse_search", "bobby__intent_complete_form", "{}"),
		result("browse_search", "error: MCP server bobby: no control matches \"Search the shop\""))
	if rep := BrowseScript()(ChatRequest{Messages: failed, Tools: allBrowseTools}); len(rep.ToolCalls) != 0 || !strings.Contains(rep.Text, "no control matches") {
		t.Errorf("after an error: %+v", rep)
	}

	noHandle := []ChatMessage{task, call("browse_start", "bobby__workflow_start", "{}"), result("browse_start", "completed workflow_start")}
	if rep := BrowseScript()(ChatRequest{Messages: noHandle, Tools: allBrowseTools}); len(rep.ToolCalls) != 0 || !strings.Contains(rep.Text, "no workflowHandle") {
		t.Errorf("without a handle: %+v", rep)
	}

	rep := BrowseScript()(ChatRequest{Messages: []ChatMessage{task}, Tools: browseTools("write_file", "search_tools")})
	if len(rep.ToolCalls) != 1 || rep.ToolCalls[0].Name != "search_tools" {
		t.Errorf("workflow_start not offered: %+v", rep)
	}
	rep = BrowseScript()(ChatRequest{Messages: []ChatMessage{task}, Tools: browseTools("write_file")})
	if len(rep.ToolCalls) != 0 || !strings.Contains(rep.Text, "not offered") {
		t.Errorf("no search_tools either: %+v", rep)
	}
	rep = BrowseScript()(ChatRequest{Messages: []ChatMessage{user("hello")}, Tools: allBrowseTools})
	if len(rep.ToolCalls) != 0 || !strings.Contains(rep.Text, "Shop: <url>") {
		t.Errorf("not a browse task: %+v", rep)
	}
}
