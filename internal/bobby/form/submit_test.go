package form_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

var placeOrder = snapshot.Target{Role: "button", Name: "Place order"}

func TestSubmitBlockedByValidation(t *testing.T) { forEngines(t, testSubmitBlockedByValidation) }

func testSubmitBlockedByValidation(t *testing.T, engine string) {
	for _, tt := range []struct {
		name   string
		submit snapshot.Target
	}{
		{"submit button", placeOrder},
		{"form target", snapshot.Target{Selector: "#checkout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := openPage(t, engine, "/form.html")
			const bad = "ada-at-example"
			if _, err := p.tab.Fill(p.ctx, form.FieldsFromMap(map[string]any{"Full name": "Ada", "Email": bad}), form.Options{}); err != nil {
				t.Fatal(err)
			}
			sub, err := p.tab.SubmitAndVerify(p.ctx, tt.submit, form.Verify{})
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != form.SubmitBlocked || sub.Navigated || !strings.HasSuffix(sub.URL, "/form.html") {
				t.Fatalf("submission = %+v", sub)
			}
			got := map[string]form.Issue{}
			for _, is := range sub.FormValidation {
				got[is.Name] = is
			}
			if len(got) != 2 || got["email"].Constraint != "typeMismatch" || got["country"].Constraint != "valueMissing" {
				t.Fatalf("issues = %+v", sub.FormValidation)
			}
			if e := got["email"]; e.Target.Ref == "" || e.Target.Name != "Email" || e.Message == "" {
				t.Errorf("email issue = %+v", e)
			}
			raw, _ := json.Marshal(sub)
			if strings.Contains(string(raw), bad) || strings.Contains(string(raw), "Ada") {
				t.Errorf("formValidation echoes submitted values: %s", raw)
			}
			// The repair loop: fix the listed fields, submit again.
			if _, err := p.tab.Control(p.ctx, got["email"].Target, form.Action{Kind: form.SetText, Text: "ada@example.com"}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.tab.Control(p.ctx, got["country"].Target, form.Action{Kind: form.SelectOne, Option: "France"}); err != nil {
				t.Fatal(err)
			}
			again, err := p.tab.SubmitAndVerify(p.ctx, tt.submit, form.Verify{WaitFor: form.WaitNavigation, TextContains: "Order received"})
			if err != nil {
				t.Fatal(err)
			}
			if again.Status != form.SubmitVerified || !again.Navigated || !strings.Contains(again.URL, "/submitted.html?") {
				t.Errorf("after repair: %+v", again)
			}
		})
	}
}

func TestSubmitVerifiedByNetworkQuiet(t *testing.T) { forEngines(t, testSubmitVerifiedByNetworkQuiet) }

func testSubmitVerifiedByNetworkQuiet(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	if _, err := p.tab.Fill(p.ctx, []form.FieldValue{{Field: "Newsletter email", Value: "ada@example.com"}}, form.Options{}); err != nil {
		t.Fatal(err)
	}
	sub, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Subscribe"}, form.Verify{TextContains: "Subscribed!"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Status != form.SubmitVerified || sub.Navigated || sub.Requests < 1 {
		t.Errorf("fetch submit = %+v", sub)
	}
}

func TestSubmitUnverified(t *testing.T) { forEngines(t, testSubmitUnverified) }

func testSubmitUnverified(t *testing.T, engine string) {
	for _, tt := range []struct {
		name   string
		target snapshot.Target
		verify form.Verify
		says   string
	}{
		{"expected text missing", snapshot.Target{Role: "button", Name: "Subscribe"}, form.Verify{TextContains: "Welcome aboard"}, "page text"},
		{"expected url missing", snapshot.Target{Role: "button", Name: "Subscribe"}, form.Verify{URLContains: "/thanks"}, "URL"},
		{"no effect at all", snapshot.Target{Role: "button", Name: "Apply referral"}, form.Verify{QuietFor: 100 * time.Millisecond}, "no navigation and no network request"},
		{"no navigation", snapshot.Target{Role: "button", Name: "Subscribe"}, form.Verify{WaitFor: form.WaitNavigation, Timeout: 700 * time.Millisecond}, "did not navigate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := openPage(t, engine, "/form.html")
			sub, err := p.tab.SubmitAndVerify(p.ctx, tt.target, tt.verify)
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != form.SubmitUnverified || !strings.Contains(sub.Reason, tt.says) {
				t.Errorf("submission = %+v, want unverified saying %q", sub, tt.says)
			}
		})
	}
}

func TestSubmitErrors(t *testing.T) { forEngines(t, testSubmitErrors) }

func testSubmitErrors(t *testing.T, engine string) {
	p := openPage(t, engine, "/form.html")
	if _, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Ref: "e999999"}, form.Verify{}); !errors.Is(err, snapshot.ErrTargetNotFound) {
		t.Errorf("stale submit target = %v", err)
	}
	if _, err := p.tab.SubmitAndVerify(p.ctx, placeOrder, form.Verify{WaitFor: "forever"}); !errors.Is(err, form.ErrInvalidAction) {
		t.Errorf("bad waitFor = %v", err)
	}
	if engine == "chromium" {
		if _, err := form.SubmitAndVerify(t.Context(), placeOrder, form.Verify{}); !errors.Is(err, snapshot.ErrNoPage) {
			t.Errorf("no page = %v", err)
		}
	}
}
