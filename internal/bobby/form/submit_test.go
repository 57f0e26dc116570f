package form

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

var placeOrder = snapshot.Target{Role: "button", Name: "Place order"}

func TestSubmitBlockedByValidation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		submit snapshot.Target
	}{
		{"submit button", placeOrder},
		{"form target", snapshot.Target{Selector: "#checkout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := openPage(t, "/form.html")
			const bad = "ada-at-example"
			if _, err := Fill(ctx, FieldsFromMap(map[string]any{"Full name": "Ada", "Email": bad}), Options{}); err != nil {
				t.Fatal(err)
			}
			sub, err := SubmitAndVerify(ctx, tt.submit, Verify{})
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != SubmitBlocked || sub.Navigated || !strings.HasSuffix(sub.URL, "/form.html") {
				t.Fatalf("submission = %+v", sub)
			}
			got := map[string]Issue{}
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
			if _, err := Control(ctx, got["email"].Target, Action{Kind: SetText, Text: "ada@example.com"}); err != nil {
				t.Fatal(err)
			}
			if _, err := Control(ctx, got["country"].Target, Action{Kind: SelectOne, Option: "France"}); err != nil {
				t.Fatal(err)
			}
			again, err := SubmitAndVerify(ctx, tt.submit, Verify{WaitFor: WaitNavigation, TextContains: "Order received"})
			if err != nil {
				t.Fatal(err)
			}
			if again.Status != SubmitVerified || !again.Navigated || !strings.Contains(again.URL, "/submitted.html?") {
				t.Errorf("after repair: %+v", again)
			}
		})
	}
}

func TestSubmitVerifiedByNetworkQuiet(t *testing.T) {
	ctx := openPage(t, "/form.html")
	if _, err := Fill(ctx, []FieldValue{{Field: "Newsletter email", Value: "ada@example.com"}}, Options{}); err != nil {
		t.Fatal(err)
	}
	sub, err := SubmitAndVerify(ctx, snapshot.Target{Role: "button", Name: "Subscribe"}, Verify{TextContains: "Subscribed!"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Status != SubmitVerified || sub.Navigated || sub.Requests < 1 {
		t.Errorf("fetch submit = %+v", sub)
	}
}

func TestSubmitUnverified(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target snapshot.Target
		verify Verify
		says   string
	}{
		{"expected text missing", snapshot.Target{Role: "button", Name: "Subscribe"}, Verify{TextContains: "Welcome aboard"}, "page text"},
		{"expected url missing", snapshot.Target{Role: "button", Name: "Subscribe"}, Verify{URLContains: "/thanks"}, "URL"},
		{"no effect at all", snapshot.Target{Role: "button", Name: "Apply referral"}, Verify{QuietFor: 100 * time.Millisecond}, "no navigation and no network request"},
		{"no navigation", snapshot.Target{Role: "button", Name: "Subscribe"}, Verify{WaitFor: WaitNavigation, Timeout: 700 * time.Millisecond}, "did not navigate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := openPage(t, "/form.html")
			sub, err := SubmitAndVerify(ctx, tt.target, tt.verify)
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != SubmitUnverified || !strings.Contains(sub.Reason, tt.says) {
				t.Errorf("submission = %+v, want unverified saying %q", sub, tt.says)
			}
		})
	}
}

func TestSubmitErrors(t *testing.T) {
	ctx := openPage(t, "/form.html")
	if _, err := SubmitAndVerify(ctx, snapshot.Target{Ref: "e999999"}, Verify{}); !errors.Is(err, snapshot.ErrTargetNotFound) {
		t.Errorf("stale submit target = %v", err)
	}
	if _, err := SubmitAndVerify(ctx, placeOrder, Verify{WaitFor: "forever"}); !errors.Is(err, ErrInvalidAction) {
		t.Errorf("bad waitFor = %v", err)
	}
	if _, err := SubmitAndVerify(t.Context(), placeOrder, Verify{}); !errors.Is(err, snapshot.ErrNoPage) {
		t.Errorf("no page = %v", err)
	}
}
