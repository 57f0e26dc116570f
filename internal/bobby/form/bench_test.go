package form_test

import (
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// BenchmarkFormSnapshot measures a form snapshot of the checkout fixture on
// each engine and the size of its JSON.
func BenchmarkFormSnapshot(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			p := openPage(b, engine, "/form.html")
			var size int
			for b.Loop() {
				fs, err := p.tab.Snapshot(p.ctx, form.Options{})
				if err != nil {
					b.Fatal(err)
				}
				raw, err := json.Marshal(fs)
				if err != nil {
					b.Fatal(err)
				}
				size = len(raw)
			}
			b.ReportMetric(float64(size), "bytes/snapshot")
		})
	}
}

// BenchmarkSignupFormLoop measures the whole form loop on the signup page,
// per engine: observe (form snapshot), complete_form (which reveals the team
// field), fill the revealed field, submit_and_verify landing on the welcome
// page. bytes/loop is the JSON an agent reads back from the four steps.
func BenchmarkSignupFormLoop(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			var size int
			for b.Loop() {
				b.StopTimer()
				p := openPage(b, engine, "/signup.html")
				b.StartTimer()
				size = signupLoop(b, p)
			}
			b.ReportMetric(float64(size), "bytes/loop")
		})
	}
}

// signupLoop runs the signup form loop and returns the bytes of its JSON
// results. It fails unless the submit is verified on the welcome page.
func signupLoop(t testing.TB, p *page) int {
	t.Helper()
	var size int
	add := func(v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		size += len(raw)
	}
	fs := formsOf(t, p)
	add(fs)
	c, err := p.tab.CompleteForm(p.ctx, form.FieldsFromMap(map[string]any{
		"Email": "ada@example.com", "Full name": "Ada Lovelace", "Password": "correct horse battery",
		"Plan": "Team", "I accept the terms": true,
	}), form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	add(c)
	if len(c.RevealedControls) != 1 || c.RevealedControls[0].Label != "Team name" {
		t.Fatalf("revealed = %+v, want the team name", c.RevealedControls)
	}
	ev, err := p.tab.Control(p.ctx, c.RevealedControls[0].Target, form.Action{Kind: form.SetText, Text: "Analytical Engines"})
	if err != nil {
		t.Fatal(err)
	}
	add(ev)
	sub, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Create account"}, form.Verify{TextContains: "Welcome aboard"})
	if err != nil {
		t.Fatal(err)
	}
	add(sub)
	if sub.Status != form.SubmitVerified || !sub.Navigated {
		t.Fatalf("submission = %+v, want verified with a navigation", sub)
	}
	return size
}
