package browser

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCookiesGetSetDelete(t *testing.T) {
	ctx := context.Background()
	p := testPage(t)
	s := p.Session()
	open(t, p, "/setcookie")
	host := mustHost(t)
	expires := time.Now().Add(30 * 24 * time.Hour).Unix()

	got, truncated, err := s.Cookies(ctx, CookieFilter{URL: srv.URL + "/"})
	if err != nil || truncated || len(got) != 1 || got[0].Name != "sid" || got[0].Value != "abc123" || got[0].Expires != nil {
		t.Fatalf("Cookies after /setcookie = %+v, %v, %v", got, truncated, err)
	}

	if err := s.SetCookies(ctx, []NewCookie{
		{Name: "theme", Value: "dark", URL: srv.URL},
		{Name: "scoped", Value: "1", Domain: host, Path: "/api", HTTPOnly: true, Expires: expires},
	}); err != nil {
		t.Fatalf("SetCookies: %v", err)
	}
	// The page sends what was set (the /api path cookie only under /api).
	open(t, p, "/echo-cookie")
	if c := eval[string](t, p, `document.getElementById("c").textContent`); !strings.Contains(c, "theme=dark") || strings.Contains(c, "scoped") {
		t.Errorf("page sent cookies %s, want theme=dark and not the /api one", c)
	}
	all, _, err := s.Cookies(ctx, CookieFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("all cookies = %+v, %v", all, err)
	}
	if sc := find(all, "scoped"); sc == nil || sc.Expires == nil || *sc.Expires != expires || !sc.HTTPOnly || sc.Path != "/api" {
		t.Errorf("scoped cookie = %+v", sc)
	}

	// Another session sees none of them.
	if other, _, _ := newSession(t).Cookies(ctx, CookieFilter{}); len(other) != 0 {
		t.Errorf("another session sees cookies %+v", other)
	}

	n, err := s.DeleteCookies(ctx, CookieFilter{Name: "theme"})
	if err != nil || n != 1 {
		t.Fatalf("DeleteCookies(theme) = %d, %v", n, err)
	}
	if left, _, _ := s.Cookies(ctx, CookieFilter{}); len(left) != 2 || find(left, "theme") != nil {
		t.Errorf("after deleting theme: %+v", left)
	}
	if n, err := s.DeleteCookies(ctx, CookieFilter{}); err != nil || n != 2 {
		t.Errorf("DeleteCookies(all) = %d, %v", n, err)
	}
	if left, _, _ := s.Cookies(ctx, CookieFilter{}); len(left) != 0 {
		t.Errorf("after deleting all: %+v", left)
	}

	bad := []NewCookie{
		{Name: "", Value: "x", URL: srv.URL},
		{Name: "a", Value: "x"},
		{Name: "a", Value: "x", URL: srv.URL, Domain: host},
		{Name: "a;b", Value: "x", URL: srv.URL},
		{Name: "a", Value: "x", URL: "file:///etc/passwd"},
		{Name: "a", Value: "x", URL: srv.URL, SameSite: "sometimes"},
	}
	for _, c := range bad {
		if err := s.SetCookies(ctx, []NewCookie{c}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("SetCookies(%+v) = %v, want ErrInvalidArgument", c, err)
		}
	}
	if _, _, err := s.Cookies(ctx, CookieFilter{URL: "not a url"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Cookies(bad url) = %v", err)
	}
}

func mustHost(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

func find(cs []Cookie, name string) *Cookie {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

type facts struct {
	Width     int      `json:"width"`
	Screen    string   `json:"screen"`
	DPR       float64  `json:"dpr"`
	Language  string   `json:"language"`
	Languages []string `json:"languages"`
	UA        string   `json:"ua"`
	Platform  string   `json:"platform"`
	Timezone  string   `json:"timezone"`
	Price     string   `json:"price"`
	Touch     int      `json:"touch"`
}

func pageFacts(t *testing.T, p *Page) facts {
	t.Helper()
	return eval[facts](t, p, `facts()`)
}

func TestEmulateViewportDeviceLocaleTimezone(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/adaptive.html")
	before := pageFacts(t, p)
	if eval[bool](t, p, `getComputedStyle(document.querySelector(".mobile")).display !== "none"`) {
		t.Fatalf("desktop page shows the mobile layout (width %d)", before.Width)
	}

	st, err := p.Emulate(ctx, Emulation{Device: "pixel 7", Locale: "de-DE", Timezone: "Europe/Berlin"})
	if err != nil {
		t.Fatalf("Emulate: %v", err)
	}
	if st.Device != "Pixel 7" || st.Viewport == nil || st.Viewport.Width != 412 || !st.Touch || st.Locale != "de-DE" || st.Timezone != "Europe/Berlin" || !strings.Contains(st.UserAgent, "Android") {
		t.Errorf("emulation state = %+v", st)
	}
	// Layout follows at once; navigator and Accept-Language after a reload.
	if !eval[bool](t, p, `getComputedStyle(document.querySelector(".mobile")).display !== "none"`) {
		t.Errorf("emulated phone still shows the desktop layout")
	}
	open(t, p, "/adaptive.html")
	f := pageFacts(t, p)
	if f.Width != 412 || f.DPR != 2.625 || f.Touch == 0 || !strings.Contains(f.UA, "Pixel 7") {
		t.Errorf("page sees %+v, want a 412px touch Pixel 7", f)
	}
	if f.Language != "de-DE" || f.Timezone != "Europe/Berlin" || !strings.Contains(f.Price, "€") || !strings.Contains(f.Price, "1.234,50") {
		t.Errorf("page sees language %q timezone %q price %q, want de-DE, Europe/Berlin, 1.234,50 €", f.Language, f.Timezone, f.Price)
	}
	if got := p.Emulation(); got.Locale != "de-DE" {
		t.Errorf("Emulation() = %+v", got)
	}
	// Another page of the same session is unaffected.
	q, err := p.Session().NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	open(t, q, "/adaptive.html")
	if g := pageFacts(t, q); g.Width == 412 || g.Timezone == "Europe/Berlin" && before.Timezone != "Europe/Berlin" {
		t.Errorf("emulation leaked to another page: %+v", g)
	}

	bad := []Emulation{
		{},
		{Device: "Nokia 3310"},
		{Viewport: &Viewport{Width: 0, Height: 100}},
		{Viewport: &Viewport{Width: 100, Height: 20000}},
		{Locale: "not a locale!"},
		{Timezone: "Mars/Olympus"},
		{UserAgent: "a\r\nX-Evil: 1"},
	}
	for _, e := range bad {
		if _, err := p.Emulate(ctx, e); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Emulate(%+v) = %v, want ErrInvalidArgument", e, err)
		}
	}
}

func TestFingerprintPersonaIsCoherentPerProfile(t *testing.T) {
	ctx := context.Background()
	for _, profile := range []string{"default", "shopper", "research"} {
		t.Run(profile, func(t *testing.T) {
			s := newSessionWith(t, profile, ExecutionPolicy{Fingerprint: true})
			ps, ok := s.Persona()
			if !ok || ps != PersonaFor(profile) {
				t.Fatalf("Persona() = %+v, %v", ps, ok)
			}
			p := pageOf(t, s)
			open(t, p, "/adaptive.html")
			f := pageFacts(t, p)
			if strings.Contains(f.UA, "Headless") || !strings.Contains(f.UA, ps.OS) {
				t.Errorf("user agent %q: want %q and no Headless", f.UA, ps.OS)
			}
			if f.Platform != ps.Platform || f.Language != ps.Locale || f.Timezone != ps.Timezone || f.Width != int(ps.Viewport.Width) {
				t.Errorf("page sees %+v, want persona %+v", f, ps)
			}
			// The Accept-Language header agrees with navigator.language.
			open(t, p, "/echo-headers")
			if h := eval[string](t, p, `document.body.textContent`); !strings.Contains(h, "Accept-Language: "+ps.Locale) || !strings.Contains(h, "User-Agent: "+f.UA) {
				t.Errorf("headers %s disagree with persona %+v", h, ps)
			}
			// A popup of the session presents the same identity.
			open(t, p, "/popup.html?to=adaptive")
			popup, err := s.WaitPopup(ctx, p, func() error { _, err := p.Click(ctx, NodeRef{Selector: "#open"}, ClickOptions{}); return err })
			if err != nil {
				t.Fatal(err)
			}
			if err := popupReady(ctx, popup); err != nil {
				t.Fatal(err)
			}
			if g := pageFacts(t, popup); g.Timezone != ps.Timezone || g.Language != ps.Locale || g.UA != f.UA {
				t.Errorf("popup presents %+v, want persona %+v", g, ps)
			}
		})
	}
	// Without the policy the browser's own identity stays.
	p := testPage(t)
	if _, ok := p.Session().Persona(); ok {
		t.Errorf("a session without fingerprint has a persona")
	}
	open(t, p, "/adaptive.html")
	if f := pageFacts(t, p); !strings.Contains(f.UA, "Headless") {
		t.Errorf("plain session user agent %q changed", f.UA)
	}
}

func popupReady(ctx context.Context, p *Page) error {
	if _, err := p.WaitFor(ctx, Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "contains", Value: "adaptive"}}); err != nil {
		return err
	}
	_, err := p.WaitFor(ctx, Condition{Kind: WaitDocument, ReadyState: "complete"})
	return err
}
