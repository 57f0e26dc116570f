package gateway

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestFormLoopText: the text of the form loop is written for a model, one
// fact per line, never the JSON record and never a secret value, while
// structuredContent keeps the whole record; evidenceDetail:"full" puts the
// JSON back in the text. The goldens fix the shape of each answer.
func TestFormLoopText(t *testing.T) {
	alice := aliceClient(t)
	const password = "correct-horse"
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/signup.html"})
	h := start["workflowHandle"]

	res, obs := callTool(t, alice, "workflow_observe", map[string]any{"workflowHandle": h, "includeForms": true})
	observe := resultTextOf(t, "workflow_observe", res)
	if obs["formSnapshot"] == nil {
		t.Fatalf("structuredContent lost the form snapshot: %s", dump(obs))
	}

	// Submitting the empty form is blocked: the text lists each issue.
	res, _ = callTool(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h})
	blocked := resultTextOf(t, "intent_submit_and_verify", res)

	res, done := callTool(t, alice, "intent_complete_form", map[string]any{"workflowHandle": h, "values": map[string]any{
		"Email": "ada@example.com", "Full name": "Ada Lovelace", "Password": password, "Plan": "Team",
		"Team name": "Analytical Engines", "I accept the terms": true}})
	complete := resultTextOf(t, "intent_complete_form", res)
	if n, _ := get(done, "evidence", "fields").([]any); len(n) != 6 {
		t.Errorf("structuredContent lost the field outcomes: %s", dump(done))
	}

	res, sub := callTool(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h, "expect": map[string]any{"textContains": "Welcome aboard"}})
	submit := resultTextOf(t, "intent_submit_and_verify", res)
	if get(sub, "evidence", "submission", "status") != "verified" {
		t.Fatalf("submission = %s", dump(sub))
	}

	for name, text := range map[string]string{"observe": observe, "blocked": blocked, "complete": complete, "submit": submit} {
		if strings.Contains(text, password) {
			t.Errorf("%s text echoes the password:\n%s", name, text)
		}
		if strings.Contains(text, `":`) || strings.Contains(text, "{\"") {
			t.Errorf("%s text holds JSON:\n%s", name, text)
		}
	}
	for _, want := range []string{"Password = (13 chars)\n", "Plan = Team\n", "Team name = Analytical Engines (revealed and filled) [ref=e"} {
		if !strings.Contains(complete, want) {
			t.Errorf("complete_form text lacks %q:\n%s", want, complete)
		}
	}

	// The header carries the ids, which change per run; the goldens fix the
	// rest, with refs and the fixture's port normalised.
	norm := func(s string) string {
		_, body, _ := strings.Cut(s, "\n")
		head, _, _ := strings.Cut(s, "\n")
		head = regexp.MustCompile(` (workflowHandle|sessionId|pageId|workflowId)=\S+`).ReplaceAllString(head, "")
		s = head + "\n" + body
		s = strings.ReplaceAll(s, fixtures.URL, "http://fixture")
		return regexp.MustCompile(`ref=e\d+`).ReplaceAllString(s, "ref=eN")
	}
	golden := norm(observe) + "\n---\n" + norm(blocked) + "\n---\n" + norm(complete) + "\n---\n" + norm(submit) + "\n"
	const file = "testdata/formloop.golden"
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(file, []byte(golden), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if golden != string(want) {
		t.Errorf("form loop text:\n%s\nwant (%s):\n%s", golden, file, want)
	}

	// The loop costs a model far less than the record it summarises.
	var sc int
	for _, m := range []map[string]any{obs, done, sub} {
		b, _ := json.Marshal(m)
		sc += len(b)
	}
	if total := len(observe) + len(complete) + len(submit); total*3 > sc {
		t.Errorf("the loop's text is %d bytes for %d of structuredContent; want under a third", total, sc)
	}
}

// TestEvidenceDetailFullText: evidenceDetail "full" keeps the header line
// and puts the whole structuredContent JSON in the text, as an argument of
// a flat tool and inside command_execute's envelope.
func TestEvidenceDetailFullText(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/signup.html"})
	h := start["workflowHandle"]
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"intent_complete_form", map[string]any{"workflowHandle": h, "evidenceDetail": "full", "values": map[string]any{"Email": "ada@example.com"}}},
		{"workflow_observe", map[string]any{"workflowHandle": h, "includeForms": true, "evidenceDetail": "full"}},
	} {
		res, m := callTool(t, alice, tc.tool, tc.args)
		text := resultTextOf(t, tc.tool, res)
		head, body, _ := strings.Cut(text, "\n")
		if !strings.HasPrefix(head, "completed "+tc.tool) {
			t.Errorf("%s: header %q", tc.tool, head)
		}
		var back map[string]any
		if err := json.Unmarshal([]byte(body), &back); err != nil {
			t.Fatalf("%s: the full text is not the JSON record: %v\n%s", tc.tool, err, text)
		}
		if dump(back) != dump(m) {
			t.Errorf("%s: the text's JSON differs from structuredContent", tc.tool)
		}
	}
	// Any other detail is refused with the pointer and a repair.
	res, _ := callTool(t, alice, "intent_complete_form", map[string]any{"workflowHandle": h, "evidenceDetail": "verbose", "values": map[string]any{"Email": "x"}})
	if text := resultTextOf(t, "intent_complete_form", res); !res.IsError ||
		!strings.Contains(text, "error schemaViolation at /evidenceDetail (enum)") || !strings.Contains(text, "\nrepair: fixArguments ") {
		t.Errorf("evidenceDetail verbose: isError %v\n%s", res.IsError, text)
	}

	// The default stays the compact lines: the field, then what is still
	// invalid, each with the target to repair it.
	res, _ = callTool(t, alice, "intent_complete_form", map[string]any{"workflowHandle": h, "values": map[string]any{"Email": "ada@example.com"}})
	text := resultTextOf(t, "intent_complete_form", res)
	if !regexp.MustCompile(`^completed intent_complete_form\nEmail = ada@example.com\ninvalid textbox "Full name" \[ref=e\d+\]: valueMissing — `).MatchString(text) {
		t.Errorf("compact text = %q", text)
	}
}
