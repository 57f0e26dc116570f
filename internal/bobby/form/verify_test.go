package form_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// TestSubmitVerdicts covers submits that look done but are not: verified
// needs a request answered 2xx/3xx, a committed (not fragment-only)
// navigation, or an expectation that holds.
func TestSubmitVerdicts(t *testing.T) { forEngines(t, testSubmitVerdicts) }

func testSubmitVerdicts(t *testing.T, engine string) {
	for _, tt := range []struct {
		name      string
		target    snapshot.Target
		fill      map[string]any
		status    string
		navigated bool
		says      string // in Reason
		seen      int    // a response with this status is listed
	}{
		{"native post answered 500", snapshot.Target{Role: "button", Name: "Send order"}, nil, form.SubmitUnverified, true, "HTTP 500", 500},
		{"fetch answered 500", snapshot.Target{Role: "button", Name: "Send feedback"}, map[string]any{"Feedback": "slow shipping"}, form.SubmitUnverified, false, "HTTP 500", 500},
		{"fetch answered 200", snapshot.Target{Role: "button", Name: "Send rating"}, nil, form.SubmitVerified, false, "", 200},
		{"fragment-only link", snapshot.Target{Role: "link", Name: "Send message"}, nil, form.SubmitUnverified, false, "no navigation", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := openPage(t, engine, "/verify.html")
			if tt.fill != nil {
				if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(tt.fill), form.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			sub, err := p.tab.SubmitAndVerify(p.ctx, tt.target, form.Verify{})
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != tt.status || sub.Navigated != tt.navigated || !strings.Contains(sub.Reason, tt.says) {
				t.Fatalf("submission = %+v, want %s navigated=%v saying %q", sub, tt.status, tt.navigated, tt.says)
			}
			if tt.seen != 0 {
				found := false
				for _, r := range sub.Responses {
					found = found || r.Status == tt.seen
				}
				if !found {
					t.Errorf("responses %+v lack status %d", sub.Responses, tt.seen)
				}
			}
			if tt.name == "fetch answered 500" {
				// The page's own alert comes back too, without the typed text.
				raw, _ := json.Marshal(sub)
				if !strings.Contains(string(raw), "Could not send your feedback") || strings.Contains(string(raw), "slow shipping") {
					t.Errorf("formValidation = %s", raw)
				}
			}
		})
	}
}

// TestGetFormSubmitNeverEchoesWhatWasTyped: after a GET form the page's
// address holds the submitted values; the evidence shows it without them.
func TestGetFormSubmitNeverEchoesWhatWasTyped(t *testing.T) {
	forEngines(t, testGetFormSubmitNeverEchoesWhatWasTyped)
}

func testGetFormSubmitNeverEchoesWhatWasTyped(t *testing.T, engine string) {
	p := openPage(t, engine, "/verify.html")
	if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(map[string]any{"Login name": "ada", "Login password": "hunter2-secret"}), form.Options{}); err != nil {
		t.Fatal(err)
	}
	sub, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Log in"}, form.Verify{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(sub)
	if sub.Status != form.SubmitVerified || !strings.HasSuffix(sub.URL, "/submitted.html?…") {
		t.Fatalf("submission = %s, want verified at /submitted.html with its query left out", raw)
	}
	if strings.Contains(string(raw), "hunter2-secret") || strings.Contains(string(raw), "ada") {
		t.Fatalf("the evidence echoes a typed value: %s", raw)
	}
}

// TestSubmitPageValidation: a novalidate form that writes its own errors
// (aria-invalid, role=alert) blocks like the browser's validation would,
// with value-free issues.
func TestSubmitPageValidation(t *testing.T) { forEngines(t, testSubmitPageValidation) }

func testSubmitPageValidation(t *testing.T, engine string) {
	p := openPage(t, engine, "/verify.html")
	const typed = "ada-at-example"
	if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(map[string]any{"Signup email": typed}), form.Options{}); err != nil {
		t.Fatal(err)
	}
	sub, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Sign up"}, form.Verify{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(sub)
	if sub.Status != form.SubmitBlocked || sub.Navigated || sub.Requests != 0 {
		t.Fatalf("submission = %s", raw)
	}
	if strings.Contains(string(raw), typed) {
		t.Errorf("formValidation echoes the typed value: %s", raw)
	}
	var field, summary *form.Issue
	for i, is := range sub.FormValidation {
		switch {
		case is.Name == "signupEmail":
			field = &sub.FormValidation[i]
		case strings.Contains(is.Message, "Please fix 1 error"):
			summary = &sub.FormValidation[i]
		}
	}
	if field == nil || field.Constraint != "ariaInvalid" || !strings.Contains(field.Message, "is not an email address") || field.Target.Ref == "" {
		t.Errorf("field issue = %+v in %s", field, raw)
	}
	if summary == nil {
		t.Errorf("the page's summary alert is missing: %s", raw)
	}
	// Repaired, the same form sends and is verified by the 200.
	if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(map[string]any{"Signup email": "ada@example.com"}), form.Options{}); err != nil {
		t.Fatal(err)
	}
	again, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Sign up"}, form.Verify{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != form.SubmitVerified {
		t.Errorf("after repair: %+v", again)
	}
}

// TestSubmitLeftoverMarks: a field the page marked aria-invalid on an
// earlier attempt and never cleared blocks a submit that sends nothing,
// but not one whose request is answered 200, nor a fragment-only link
// outside the form.
func TestSubmitLeftoverMarks(t *testing.T) { forEngines(t, testSubmitLeftoverMarks) }

func testSubmitLeftoverMarks(t *testing.T, engine string) {
	p := openPage(t, engine, "/verify.html")
	save := snapshot.Target{Role: "button", Name: "Save profile"}
	submit := func(target snapshot.Target, fill string) *form.Submission {
		t.Helper()
		if fill != "" {
			if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(map[string]any{"Profile email": fill}), form.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		sub, err := p.tab.SubmitAndVerify(p.ctx, target, form.Verify{})
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	if sub := submit(save, "ada-at-example"); sub.Status != form.SubmitBlocked || !strings.Contains(sub.Reason, "marked 1 field(s) invalid") || len(sub.FormValidation) != 1 {
		t.Fatalf("first, wrong submit = %+v", sub)
	}
	// Still wrong: the page sends nothing and leaves its mark as it was.
	if sub := submit(save, ""); sub.Status != form.SubmitBlocked || !strings.Contains(sub.Reason, "still marks 1 field(s) invalid") ||
		len(sub.FormValidation) != 1 || sub.FormValidation[0].Name != "profileEmail" {
		t.Errorf("second, still wrong submit = %+v", sub)
	}
	// Repaired: the fetch is answered 200 while the old mark stays.
	if sub := submit(save, "ada@example.com"); sub.Status != form.SubmitVerified || len(sub.FormValidation) != 0 {
		t.Errorf("repaired submit = %+v", sub)
	}
	if !evalJS[bool](t, p, `document.getElementById('pr-email').getAttribute('aria-invalid') === 'true'`) {
		t.Fatal("the fixture cleared its mark; the test needs it left")
	}
	// A fragment-only link is no navigation, whatever a form nearby shows.
	if sub := submit(snapshot.Target{Role: "link", Name: "Send message"}, ""); sub.Status != form.SubmitUnverified || !strings.Contains(sub.Reason, "no navigation") || len(sub.FormValidation) != 0 {
		t.Errorf("fragment link = %+v", sub)
	}
}
