package browser

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/target"
)

func TestSessionStateShape(t *testing.T) {
	s := newSessionWith(t, "work", ExecutionPolicy{JavaScriptEvaluation: true, Humanize: true})
	p := pageOf(t, s)
	b, err := json.Marshal(s.State())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "execution_policy", "id", "last_used_at", "page_ids", "profile", "proxy"}; !slices.Equal(keys, want) {
		t.Errorf("session state keys = %v, want %v", keys, want)
	}
	if got["id"] != s.ID || got["profile"] != "work" || got["proxy"] != nil {
		t.Errorf("session state = %s", b)
	}
	if ids, _ := got["page_ids"].([]any); len(ids) != 1 || ids[0] != p.ID {
		t.Errorf("page_ids = %v, want [%s]", got["page_ids"], p.ID)
	}
	pol, _ := got["execution_policy"].(map[string]any)
	wantPol := map[string]any{"javascriptEvaluation": true, "visionAssist": false, "fingerprint": false, "humanize": true}
	if len(pol) != len(wantPol) {
		t.Errorf("execution_policy = %v, want %v", pol, wantPol)
	}
	for k, v := range wantPol {
		if pol[k] != v {
			t.Errorf("execution_policy[%s] = %v, want %v", k, pol[k], v)
		}
	}
	if ts, _ := got["created_at"].(string); !strings.HasSuffix(ts, "Z") || strings.Contains(ts, ".") {
		t.Errorf("created_at = %q, want RFC 3339 UTC seconds like 2026-08-07T12:00:00Z", ts)
	}

	// A session with no pages still reports an empty list, not null.
	empty := newSession(t)
	if b, _ := json.Marshal(empty.State()); !strings.Contains(string(b), `"page_ids":[]`) {
		t.Errorf("empty session state = %s, want page_ids []", b)
	}
}

func TestSessionRegistry(t *testing.T) {
	ctx := context.Background()
	if _, err := shared.NewSession(ctx, " ", ExecutionPolicy{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewSession with blank profile = %v, want ErrInvalidArgument", err)
	}
	a := newSession(t)
	b := newSession(t)
	if got, err := shared.Session(a.ID); err != nil || got != a {
		t.Errorf("Session(a) = %v, %v", got, err)
	}
	ids := []string{}
	for _, s := range shared.Sessions() {
		ids = append(ids, s.ID)
	}
	if !slices.Contains(ids, a.ID) || !slices.Contains(ids, b.ID) {
		t.Errorf("Sessions() = %v, want both %s and %s", ids, a.ID, b.ID)
	}
	p, err := a.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := shared.Page(p.ID); err != nil || got != p {
		t.Errorf("Runtime.Page = %v, %v", got, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Page(p.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Page after Close = %v, want ErrNotFound", err)
	}
	if _, err := p.Evaluate(ctx, "1"); !errors.Is(err, ErrPageClosed) {
		t.Errorf("Evaluate on closed page = %v, want ErrPageClosed", err)
	}
	if len(a.State().PageIDs) != 0 {
		t.Errorf("page_ids after close = %v", a.State().PageIDs)
	}

	c, cp := sessionPage(t, shared, "default")
	if err := shared.CloseSession(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Session(c.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Session after CloseSession = %v, want ErrNotFound", err)
	}
	if err := shared.CloseSession(ctx, c.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second CloseSession = %v, want ErrNotFound", err)
	}
	if _, err := c.NewPage(ctx); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("NewPage on closed session = %v, want ErrSessionClosed", err)
	}
	if out := cp.Navigate(ctx, srv.URL+"/home.html"); out.OK() || out.Error.Code != NavCodePageClosed {
		t.Errorf("Navigate on page of closed session = %+v, want pageClosed", out)
	}
}

func TestSessionsDoNotShareCookies(t *testing.T) {
	a, b := testPage(t), testPage(t)
	open(t, a, "/setcookie")
	open(t, a, "/echo-cookie")
	if got := eval[string](t, a, `document.getElementById("c").textContent`); got != "[sid=abc123]" {
		t.Fatalf("session A sends cookie %s, want [sid=abc123]", got)
	}
	open(t, b, "/echo-cookie")
	if got := eval[string](t, b, `document.getElementById("c").textContent`); got != "[]" {
		t.Errorf("session B sends cookie %s, want none: sessions share a cookie jar", got)
	}
	if got := eval[string](t, b, `localStorage.setItem("k", "b"); document.cookie`); got != "" {
		t.Errorf("session B document.cookie = %q, want empty", got)
	}
	if got := eval[any](t, a, `localStorage.getItem("k")`); got != nil {
		t.Errorf("session A sees session B's localStorage: %v", got)
	}
}

func TestPopupsAreRegistered(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	opener := pageOf(t, s)
	open(t, opener, "/popup.html")

	tests := []struct {
		name     string
		selector string
		opts     ClickOptions
		wantURL  string
	}{
		{"window.open", "#open", ClickOptions{}, "/home.html"},
		{"target blank", "#blank", ClickOptions{}, "/home.html?from=link"},
		{"shift click", "#plainlink", ClickOptions{Modifiers: []string{"shift"}}, "/home.html?from=modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.Pages())
			popup, err := s.WaitPopup(ctx, opener, func() error {
				_, err := opener.Click(ctx, NodeRef{Selector: tt.selector}, tt.opts)
				return err
			})
			if err != nil {
				t.Fatalf("WaitPopup: %v", err)
			}
			// Chromium reports no opener for a shift-click window.
			if wantOpener := opener.ID; popup.OpenerID != wantOpener && !(tt.opts.Modifiers != nil && popup.OpenerID == "") {
				t.Errorf("popup opener = %q, want %q", popup.OpenerID, wantOpener)
			}
			if !popup.Popup() || popup.SessionID() != s.ID {
				t.Errorf("popup Popup() = %v session %q, want true %q", popup.Popup(), popup.SessionID(), s.ID)
			}
			if got := len(s.Pages()); got != before+1 {
				t.Errorf("session has %d pages, want %d", got, before+1)
			}
			if !slices.Contains(s.State().PageIDs, popup.ID) {
				t.Errorf("page_ids %v lack popup %s", s.State().PageIDs, popup.ID)
			}
			res, err := popup.WaitFor(ctx, Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "contains", Value: tt.wantURL}})
			if err != nil || !res.Matched {
				t.Fatalf("popup url wait = %+v, %v (state %+v)", res, err, popup.State())
			}
			if st := popup.State(); st.URL == nil || !strings.HasSuffix(*st.URL, tt.wantURL) {
				t.Errorf("popup state url = %v, want suffix %s", st.URL, tt.wantURL)
			}
			// The popup is a working page.
			if got := eval[string](t, popup, `document.querySelector("h1").textContent`); got != "Hello bobby" {
				t.Errorf("popup h1 = %q", got)
			}
		})
	}

	// A page that closes itself leaves the page list.
	popups := s.Pages()[1:]
	victim := popups[0]
	if _, err := victim.Evaluate(ctx, `setTimeout(() => window.close(), 0); 1`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "self-closed popup leaves the session", func() bool {
		_, err := s.Page(victim.ID)
		return errors.Is(err, ErrNotFound)
	})
	if _, err := victim.Evaluate(ctx, "1"); !errors.Is(err, ErrPageClosed) {
		t.Errorf("Evaluate on self-closed page = %v, want ErrPageClosed", err)
	}
}

// TestOpenedPagesAreNotAdoptedAsPopups: every target the session opens
// itself is one page. The target's creation event reaches the popup
// check too; it must never register the target a second time, whichever
// of the two runs first.
func TestOpenedPagesAreNotAdoptedAsPopups(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	const n = 12
	for range n {
		if _, err := s.NewPage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every target event handled", func() bool { return s.popupChecks.Load() == 0 })
	pages := s.Pages()
	targets := map[target.ID]string{}
	for _, p := range pages {
		if other, ok := targets[p.targetID]; ok {
			t.Errorf("pages %s and %s are the same target %s", other, p.ID, p.targetID)
		}
		targets[p.targetID] = p.ID
	}
	if len(pages) != n {
		t.Errorf("session has %d pages after %d NewPage calls", len(pages), n)
	}
}
