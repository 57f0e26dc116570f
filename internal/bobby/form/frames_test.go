package form_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// TestFramesPage runs the form loop across an open shadow root and a
// same-origin iframe: the snapshot lists both fields with usable targets,
// the fill reaches into both (the page holds the values), an invalid card
// number in the frame is blocked with a value-free issue, the repaired frame
// form submits inside its frame, verified by its 2xx document, and the top
// form submits, verified by the page it lands on.
func TestFramesPage(t *testing.T) { forEngines(t, testFramesPage) }

func testFramesPage(t *testing.T, engine string) {
	p := openPage(t, engine, "/frames.html")
	fs := formsOf(t, p)
	note, card := field(t, fs, "Note for the courier"), field(t, fs, "Card number")
	if note.Target.Ref == "" || note.Target.Role != "textbox" || note.FrameID != "" || note.Form != "" {
		t.Errorf("shadow field = %+v", note)
	}
	if card.Target.Ref == "" || card.Target.Name != "Card number" || card.FrameID == "" || card.Form != "redeem" || !card.Required {
		t.Errorf("iframe field = %+v", card)
	}

	c, err := p.tab.CompleteForm(p.ctx, form.FieldsFromMap(map[string]any{
		"Recipient": "Ada Lovelace", "Note for the courier": "Ring twice", "Card number": "12345678",
	}), form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Fields {
		if o.Status != form.StatusFilled || o.Evidence == nil || !o.Evidence.Applied || !o.Evidence.Changed {
			t.Errorf("%s: %+v", o.Field, o)
		}
	}
	if got := evalJS[string](t, p, `document.getElementById('note-host').shadowRoot.getElementById('courier-note').value`); got != "Ring twice" {
		t.Errorf("the shadow field holds %q", got)
	}
	if !evalJS[bool](t, p, `window.noteChanged === true`) {
		t.Error("the shadow field never saw change")
	}
	if got := evalJS[string](t, p, `document.getElementById('card').contentDocument.getElementById('card-number').value`); got != "12345678" {
		t.Errorf("the iframe field holds %q", got)
	}
	if len(c.InvalidControls) != 1 || c.InvalidControls[0].Label != "Card number" || c.InvalidControls[0].Validation.Constraint != "patternMismatch" {
		t.Errorf("invalid = %+v, want the card number's pattern", c.InvalidControls)
	}

	redeem := snapshot.Target{Role: "button", Name: "Redeem"}
	blocked, err := p.tab.SubmitAndVerify(p.ctx, redeem, form.Verify{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(blocked)
	if blocked.Status != form.SubmitBlocked || len(blocked.FormValidation) != 1 || blocked.FormValidation[0].Name != "card" ||
		blocked.FormValidation[0].Target.Ref != card.Target.Ref || strings.Contains(string(raw), "12345678") {
		t.Fatalf("blocked submit = %s", raw)
	}

	if _, err := p.tab.Control(p.ctx, card.Target, form.Action{Kind: form.SetText, Text: "1234-5678"}); err != nil {
		t.Fatal(err)
	}
	inFrame, err := p.tab.SubmitAndVerify(p.ctx, redeem, form.Verify{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(inFrame)
	redeemed := false
	for _, r := range inFrame.Responses {
		redeemed = redeemed || (r.Method == "POST" && strings.HasSuffix(r.URL, "/redeemed.html") && r.Status == 200 && r.Type == "Document")
	}
	if inFrame.Status != form.SubmitVerified || inFrame.Navigated || !redeemed || !strings.HasSuffix(inFrame.URL, "/frames.html") {
		t.Fatalf("frame submit = %s, want verified by POST /redeemed.html 200 without a top-level navigation", raw)
	}
	if got := evalJS[string](t, p, `document.getElementById('card').contentDocument.title`); got != "Card redeemed" {
		t.Errorf("the frame shows %q", got)
	}

	top, err := p.tab.SubmitAndVerify(p.ctx, snapshot.Target{Role: "button", Name: "Continue"}, form.Verify{TextContains: "Order received"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(top)
	if top.Status != form.SubmitVerified || !top.Navigated || !strings.HasSuffix(top.URL, "/submitted.html?…") || strings.Contains(string(raw), "Ada") {
		t.Errorf("top submit = %s", raw)
	}
}
