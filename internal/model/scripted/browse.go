package scripted

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/deltaharness/delta/internal/clip"
)

// BrowseReport is the file BrowseScript writes.
const BrowseReport = "report.md"

// BrowseTask is the request `delta demo --browse` sends: one field per line,
// readable by a real model as an instruction and by BrowseScript as data.
func BrowseTask(shopURL, product, email, question string) string {
	return "Shop: " + shopURL + "/\nProduct: " + product + "\nEmail: " + email + "\nQuestion: " + question + "\n\n" +
		"Use the bobby browser tools. Open the shop, find the product with the shop's search form, note its price and SKU, " +
		"send the question with the product page's form (email and question) and make sure the submission is verified, " +
		"read the ticket number the shop answers with, take a screenshot of that page, and write " + BrowseReport +
		" with the product, price, SKU, question, ticket and the screenshot's path."
}

// BrowseScript is the deterministic agent behind `delta demo --browse`. It
// drives bobby (the MCP server named "bobby", so its tools are
// bobby__<tool>) from what the tool results say, the way a model must: the
// workflow handle, the product's price and SKU, the ticket and the saved
// screenshot's path are all read from earlier results, never known ahead.
//
// The plan, one call per turn: workflow_start on the shop; the search form
// filled with the product's name (intent_complete_form) and submitted with
// verification that a product page opened (intent_submit_and_verify); an
// a11y_snapshot of the product page; the question form filled and submitted
// with verification that the answer page shows a ticket; an a11y_snapshot
// of the answer; toolset_select to the verify phase and a screenshot; then
// write_file report.md and a final answer. A tool the request does not
// offer is looked for with search_tools first (up to three times); an
// error result, or a fact missing from a result, ends the run with a text
// answer saying which step stopped and why.
func BrowseScript() Script { return browse }

// browseStep is one call of the plan; args reads earlier results.
type browseStep struct {
	id, tool string
	args     func(b browseConvo) (map[string]any, error)
}

// browseConvo is what the agent knows: the task's fields and every tool
// result so far, by call id.
type browseConvo struct {
	task    map[string]string
	results map[string]string
}

func readBrowse(req ChatRequest) browseConvo {
	b := browseConvo{task: map[string]string{}, results: map[string]string{}}
	for _, m := range conversation(req.Messages) {
		switch {
		case m.Role == "tool":
			b.results[strings.TrimPrefix(m.ToolCallID, "browse_")] = m.Content
		case m.Role == "user" && strings.HasPrefix(m.Content, "Shop: "):
			for _, line := range strings.Split(m.Content, "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && b.task[k] == "" {
					b.task[k] = v
				}
			}
		}
	}
	return b
}

// find returns the first submatch of pattern in the result of call id.
func (b browseConvo) find(id, what, pattern string) (string, error) {
	text, ok := b.results[id]
	if !ok {
		return "", fmt.Errorf("no result for %s yet", id)
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("no %s in the %s result: %s", what, id, clip.Runes(text, 400))
	}
	return m[1], nil
}

// browseFacts are what the pages said.
type browseFacts struct{ name, price, sku, verified, ticket, shot string }

func (b browseConvo) facts() (browseFacts, error) {
	var f browseFacts
	for _, x := range []struct {
		dst           *string
		id, what, pat string
	}{
		{&f.name, "detail", "product heading", `heading "([^"]+)" \[level=1\]`},
		{&f.price, "detail", "price", `Price: (\$[0-9.]+)`},
		{&f.sku, "detail", "SKU", `SKU: ([A-Z]+-[0-9]+)`},
		{&f.verified, "send", "verification", `(?m)^(verified[^\n]*)`},
		{&f.ticket, "answer", "ticket", `Ticket: (Q-[0-9a-f]+)`},
		{&f.shot, "shot", "saved screenshot", `\[image: (\S+\.png) \(image/png`},
	} {
		v, err := b.find(x.id, x.what, x.pat)
		if err != nil {
			return f, err
		}
		*x.dst = v
	}
	return f, nil
}

func browsePlan() []browseStep {
	withHandle := func(id, tool string, extra func(b browseConvo) (map[string]any, error)) browseStep {
		return browseStep{id: id, tool: "bobby__" + tool, args: func(b browseConvo) (map[string]any, error) {
			h, err := b.find("start", "workflowHandle", `workflowHandle=(wf_[0-9a-f]+)`)
			if err != nil {
				return nil, err
			}
			args := map[string]any{"workflowHandle": h}
			if extra != nil {
				more, err := extra(b)
				if err != nil {
					return nil, err
				}
				for k, v := range more {
					args[k] = v
				}
			}
			return args, nil
		}}
	}
	fixed := func(m map[string]any) func(browseConvo) (map[string]any, error) {
		return func(browseConvo) (map[string]any, error) { return m, nil }
	}
	return []browseStep{
		{id: "start", tool: "bobby__workflow_start", args: func(b browseConvo) (map[string]any, error) {
			return map[string]any{"profile": "default", "url": b.task["Shop"]}, nil
		}},
		withHandle("search", "intent_complete_form", func(b browseConvo) (map[string]any, error) {
			return map[string]any{"values": map[string]any{"Search the shop": b.task["Product"]}}, nil
		}),
		withHandle("found", "intent_submit_and_verify", fixed(map[string]any{"expect": map[string]any{"urlContains": "/product/"}})),
		withHandle("detail", "a11y_snapshot", nil),
		withHandle("fill", "intent_complete_form", func(b browseConvo) (map[string]any, error) {
			return map[string]any{"values": map[string]any{"Your email": b.task["Email"], "Your question": b.task["Question"]}}, nil
		}),
		withHandle("send", "intent_submit_and_verify", fixed(map[string]any{"expect": map[string]any{"textContains": "Ticket:"}})),
		withHandle("answer", "a11y_snapshot", nil),
		{id: "phase", tool: "bobby__toolset_select", args: fixed(map[string]any{"phase": "verify"})},
		withHandle("shot", "screenshot", nil),
		{id: "report", tool: "write_file", args: func(b browseConvo) (map[string]any, error) {
			f, err := b.facts()
			if err != nil {
				return nil, err
			}
			return map[string]any{"path": BrowseReport, "content": fmt.Sprintf(
				"# %s\n\n- Price: %s\n- SKU: %s\n- Question sent: %s\n- Submission: %s\n- Shop ticket: %s\n- Screenshot: %s\n",
				f.name, f.price, f.sku, b.task["Question"], f.verified, f.ticket, f.shot)}, nil
		}},
	}
}

func browse(req ChatRequest) Reply {
	b := readBrowse(req)
	if b.task["Shop"] == "" {
		return Reply{Text: "I browse only for a request that starts with a \"Shop: <url>\" line, and this one does not."}
	}
	for _, s := range browsePlan() {
		if text, done := b.results[s.id]; done {
			if strings.HasPrefix(strings.TrimSpace(text), "error") {
				return Reply{Text: fmt.Sprintf("I stopped: %s (%s) failed: %s", s.tool, s.id, clip.Runes(text, 600))}
			}
			continue
		}
		if !req.HasTool(s.tool) {
			return browseSearch(req, b, s)
		}
		args, err := s.args(b)
		if err != nil {
			return Reply{Text: fmt.Sprintf("I stopped before %s (%s): %v", s.tool, s.id, err)}
		}
		raw, _ := json.Marshal(args) // maps of strings always marshal
		return Reply{
			Reasoning: "Next step of the plan: " + s.id + ".",
			ToolCalls: []ToolCall{{ID: "browse_" + s.id, Name: s.tool, Arguments: string(raw)}},
		}
	}
	f, err := b.facts()
	if err != nil {
		return Reply{Text: "I stopped before answering: " + err.Error()}
	}
	return Reply{
		Reasoning: "The report is written; I say what I found.",
		Text: fmt.Sprintf("Wrote %s: %s costs %s (SKU %s). The question was submitted and %s; the shop logged it as ticket %s. Screenshot: %s.",
			BrowseReport, f.name, f.price, f.sku, f.verified, f.ticket, f.shot),
	}
}

// browseSearch asks search_tools for a tool the request does not offer.
func browseSearch(req ChatRequest, b browseConvo, s browseStep) Reply {
	if req.HasTool("search_tools") {
		for n := range 3 {
			id := fmt.Sprintf("search_%s_%d", s.id, n)
			if _, done := b.results[id]; !done {
				q, _ := json.Marshal(map[string]string{"query": strings.ReplaceAll(strings.TrimPrefix(s.tool, "bobby__"), "_", " ")})
				return Reply{ToolCalls: []ToolCall{{ID: "browse_" + id, Name: "search_tools", Arguments: string(q)}}}
			}
		}
	}
	return Reply{Text: "I stopped: " + s.tool + " is not offered (is bobby connected as the MCP server named \"bobby\"?)"}
}
