package firefox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/form"
	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

func TestConvertEvent(t *testing.T) {
	tab := map[string]bool{"top": true, "frame": true}
	ev := func(method, params string) bidi.Event {
		return bidi.Event{Method: method, Params: json.RawMessage(params)}
	}
	for _, tt := range []struct {
		name string
		in   bidi.Event
		want form.Event
		ok   bool
	}{
		{"document post", ev("network.beforeRequestSent", `{"context":"top","navigation":"n1","request":{"request":"7","url":"http://h/welcome","method":"POST","destination":"document"}}`),
			form.Event{Kind: form.EventRequest, Request: "7", Type: "Document", Method: "POST", URL: "http://h/welcome", Frame: "top"}, true},
		{"fetch in a frame", ev("network.beforeRequestSent", `{"context":"frame","navigation":null,"request":{"request":"8","url":"http://h/api","method":"PUT","destination":"","initiatorType":"fetch"}}`),
			form.Event{Kind: form.EventRequest, Request: "8", Type: "Fetch", Method: "PUT", URL: "http://h/api", Frame: "frame"}, true},
		{"xhr", ev("network.beforeRequestSent", `{"context":"top","request":{"request":"9","initiatorType":"xmlhttprequest"}}`),
			form.Event{Kind: form.EventRequest, Request: "9", Type: "XHR", Frame: "top"}, true},
		{"image", ev("network.beforeRequestSent", `{"context":"top","request":{"request":"10","destination":"image","initiatorType":"img"}}`),
			form.Event{Kind: form.EventRequest, Request: "10", Type: "Image", Frame: "top"}, true},
		{"response", ev("network.responseCompleted", `{"context":"top","request":{"request":"7"},"response":{"status":302}}`),
			form.Event{Kind: form.EventResponse, Request: "7", Status: 302}, true},
		{"failure", ev("network.fetchError", `{"context":"frame","request":{"request":"8"},"errorText":"NS_ERROR_CONNECTION_REFUSED"}`),
			form.Event{Kind: form.EventFailed, Request: "8", Failed: "NS_ERROR_CONNECTION_REFUSED"}, true},
		{"top navigation", ev("browsingContext.navigationStarted", `{"context":"top","url":"http://h/x"}`), form.Event{Kind: form.EventNavRequested}, true},
		{"commit", ev("browsingContext.navigationCommitted", `{"context":"top"}`), form.Event{Kind: form.EventNavigated}, true},
		{"load", ev("browsingContext.load", `{"context":"top"}`), form.Event{Kind: form.EventLoaded}, true},
		{"fragment", ev("browsingContext.fragmentNavigated", `{"context":"top"}`), form.Event{Kind: form.EventSameDocument}, true},
		{"pushState", ev("browsingContext.historyUpdated", `{"context":"top"}`), form.Event{Kind: form.EventSameDocument}, true},
		{"a frame's navigation is activity only", ev("browsingContext.navigationStarted", `{"context":"frame"}`), form.Event{}, true},
		{"another tab", ev("network.beforeRequestSent", `{"context":"other","request":{"request":"1"}}`), form.Event{}, false},
		{"another kind", ev("browsingContext.userPromptOpened", `{"context":"top"}`), form.Event{}, false},
		{"malformed", ev("network.responseCompleted", `{"context":`), form.Event{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := convertEvent("top", tab, tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("convertEvent = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzConvertEvent(f *testing.F) {
	f.Add("network.beforeRequestSent", []byte(`{"context":"top","request":{"request":"1","destination":"document"}}`))
	f.Add("browsingContext.load", []byte(`{"context":"top"}`))
	f.Add("network.fetchError", []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		ev, ok := convertEvent("top", map[string]bool{"top": true}, bidi.Event{Method: method, Params: params})
		if !ok && ev != (form.Event{}) {
			t.Fatalf("a dropped event carries %+v", ev)
		}
	})
}

// TestFormSelectorIntoFrameIsChromiumOnly: a selector that reaches into a
// frame answers unsupportedOnEngine with the repair; a plain one works.
func TestFormSelectorIntoFrameIsChromiumOnly(t *testing.T) {
	p := open(t, "/signup.html")
	tab := form.On(p.Forms())
	_, err := tab.Snapshot(testCtx(t), form.Options{Target: &snapshot.Target{Selector: "iframe >>> form"}})
	if !errors.Is(err, ErrUnsupportedOnEngine) || !strings.Contains(err.Error(), "engine = \"chromium\"") {
		t.Errorf("frame selector scope = %v, want unsupportedOnEngine naming the repair", err)
	}
	fs, err := tab.Snapshot(testCtx(t), form.Options{Target: &snapshot.Target{Selector: "#signup"}})
	if err != nil || len(fs.Controls) != 7 {
		t.Fatalf("scoped to #signup: %v, %+v", err, fs)
	}
	_, err = tab.Snapshot(testCtx(t), form.Options{Target: &snapshot.Target{Selector: "input"}})
	var amb *snapshot.AmbiguousError
	if !errors.As(err, &amb) || amb.Matches != 6 || len(amb.Candidates) != 6 || amb.Candidates[0].Ref == "" {
		t.Errorf("ambiguous selector = %v", err)
	}
	if _, err := tab.Snapshot(testCtx(t), form.Options{Target: &snapshot.Target{Selector: "input["}}); !errors.Is(err, snapshot.ErrInvalidTarget) {
		t.Errorf("malformed selector = %v", err)
	}
}

// TestFormRefsAreSnapshotRefs: a form snapshot's targets are the refs the
// accessibility snapshot shows, in either order of taking them, so a ref
// from one works with the tools of the other.
func TestFormRefsAreSnapshotRefs(t *testing.T) {
	p := open(t, "/signup.html")
	ctx := testCtx(t)
	fs, err := form.On(p.Forms()).Snapshot(ctx, form.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := take(t, p)
	for _, f := range fs.Controls {
		if !f.Visible {
			continue
		}
		want := fmt.Sprintf("%s %q", f.Target.Role, f.Target.Name)
		if !strings.Contains(s.Text, want) || !strings.Contains(s.Text, "[ref="+f.Target.Ref+"]") {
			t.Errorf("form control %s [ref=%s] is not in the snapshot:\n%s", want, f.Target.Ref, s.Text)
		}
		if _, err := p.Click(ctx, f.Target, ClickOptions{}); err != nil {
			t.Errorf("click %s through its form ref: %v", want, err)
		}
	}
}

// TestFormOnAClosedTab: the form functions on a tab that is gone answer
// snapshot.ErrNoPage, as on Chromium.
func TestFormOnAClosedTab(t *testing.T) {
	p := open(t, "/signup.html")
	if err := p.conn.CloseContext(testCtx(t), p.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := form.On(p.Forms()).Snapshot(testCtx(t), form.Options{}); !errors.Is(err, snapshot.ErrNoPage) {
		t.Errorf("form snapshot of a closed tab = %v, want ErrNoPage", err)
	}
}

// TestFormTypingOnFirefox: line breaks go only where a field takes them,
// and text Firefox's key input cannot type is a clear unsupportedOnEngine
// error naming the repair, never a silent difference.
func TestFormTypingOnFirefox(t *testing.T) {
	p := open(t, "/signup.html")
	ctx := testCtx(t)
	tab := form.On(p.Forms())
	name := snapshot.Target{Role: "textbox", Name: "Full name"}
	ev, err := tab.Control(ctx, name, form.Action{Kind: form.SetText, Text: "Ada\nLovelace"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Value == nil || *ev.Value != "AdaLovelace" || eval(t, p, `location.pathname`) != "/signup.html" {
		t.Errorf("a line break in a single-line field: value %v at %v", ev.Value, eval(t, p, `location.href`))
	}
	_, err = tab.Control(ctx, name, form.Action{Kind: form.SetText, Text: "Ada \uE007"})
	if !errors.Is(err, ErrUnsupportedOnEngine) || !strings.Contains(err.Error(), `engine = "chromium"`) {
		t.Errorf("a private-use character = %v, want unsupportedOnEngine", err)
	}
}
