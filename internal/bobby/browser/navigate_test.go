package browser

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestPageStateBeforeNavigation(t *testing.T) {
	p := testPage(t)
	b, err := json.Marshal(p.State())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id":               p.ID,
		"session_id":       p.SessionID(),
		"url":              nil,
		"mode":             "Interactive",
		"ready_state":      "complete",
		"pending_requests": float64(0),
	}
	if len(got) != len(want) {
		t.Errorf("state has keys %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("state[%q] = %v, want %v (state %s)", k, got[k], v, b)
		}
	}
}

func TestNavigateOutcomes(t *testing.T) {
	// A port that was just free: connecting to it is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/"
	l.Close()

	tests := []struct {
		name       string
		url        string
		timeout    time.Duration
		wantStatus string
		wantCode   string
		wantHTTP   int
		wantFinal  string // suffix of finalUrl
		wantMsg    string // substring of the error message
	}{
		{name: "ok", url: srv.URL + "/home.html", wantStatus: NavCompleted, wantHTTP: 200, wantFinal: "/home.html"},
		{name: "redirect", url: srv.URL + "/redirect", wantStatus: NavCompleted, wantHTTP: 200, wantFinal: "/home.html"},
		{name: "fragment", url: srv.URL + "/home.html#part", wantStatus: NavCompleted, wantFinal: "/home.html#part"},
		{name: "about blank", url: "about:blank", wantStatus: NavCompleted, wantFinal: "about:blank"},
		{name: "404", url: srv.URL + "/missing.html", wantStatus: NavFailed, wantCode: NavCodeHTTPError, wantHTTP: 404, wantFinal: "/missing.html", wantMsg: "404"},
		{name: "500", url: srv.URL + "/error", wantStatus: NavFailed, wantCode: NavCodeHTTPError, wantHTTP: 500},
		{name: "connection refused", url: refused, wantStatus: NavFailed, wantCode: NavCodeNetworkError, wantMsg: "ERR_CONNECTION_REFUSED"},
		{name: "deadline", url: srv.URL + "/hang", timeout: 700 * time.Millisecond, wantStatus: NavFailed, wantCode: NavCodeTimeout},
		{name: "file denied", url: "file:///etc/passwd", wantStatus: NavFailed, wantCode: NavCodePolicyDenied},
		{name: "javascript denied", url: "javascript:alert(1)", wantStatus: NavFailed, wantCode: NavCodePolicyDenied},
		{name: "data denied", url: "data:text/html,<p>x</p>", wantStatus: NavFailed, wantCode: NavCodePolicyDenied},
		{name: "relative", url: "home.html", wantStatus: NavFailed, wantCode: NavCodeInvalidRequest},
		{name: "empty", url: "  ", wantStatus: NavFailed, wantCode: NavCodeInvalidRequest},
	}
	p := testPage(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			out := p.Navigate(ctx, tt.url)
			if out.Status != tt.wantStatus || out.URL != tt.url {
				t.Fatalf("Navigate(%q) = %+v (error %+v), want status %s", tt.url, out, out.Error, tt.wantStatus)
			}
			if tt.wantCode == "" && out.Error != nil {
				t.Errorf("completed outcome carries error %+v", out.Error)
			}
			if tt.wantCode != "" && (out.Error == nil || out.Error.Code != tt.wantCode) {
				t.Errorf("error = %+v, want code %s", out.Error, tt.wantCode)
			}
			if tt.wantMsg != "" && (out.Error == nil || !strings.Contains(out.Error.Message, tt.wantMsg)) {
				t.Errorf("error = %+v, want message with %q", out.Error, tt.wantMsg)
			}
			gotHTTP := 0
			if out.HTTPStatus != nil {
				gotHTTP = *out.HTTPStatus
			}
			if tt.wantHTTP != 0 && gotHTTP != tt.wantHTTP {
				t.Errorf("httpStatus = %d, want %d", gotHTTP, tt.wantHTTP)
			}
			if !strings.HasSuffix(out.FinalURL, tt.wantFinal) {
				t.Errorf("finalUrl = %q, want suffix %q", out.FinalURL, tt.wantFinal)
			}
		})
	}

	// After all that the page still works and reports a loaded document.
	open(t, p, "/home.html")
	st := p.State()
	if st.URL == nil || *st.URL != srv.URL+"/home.html" || st.ReadyState != "complete" || st.PendingRequests != 0 {
		t.Errorf("state after navigation = %+v (url %v)", st, st.URL)
	}
}

func TestNetworkPolicyHook(t *testing.T) {
	// The hook is the gateway's SSRF policy: here it refuses /secret.
	ctx := context.Background()
	rt := openRuntime(t, Options{DataDir: t.TempDir(), Logger: testLogger(), AllowURL: denySecret})
	hits := secretHits.Load()

	s, p := sessionPage(t, rt, "default")
	tests := []struct {
		name string
		url  string
	}{
		{"direct", srv.URL + "/secret"},
		{"redirect hop", srv.URL + "/redirect-secret"},
	}
	for _, tt := range tests {
		out := p.Navigate(ctx, tt.url)
		if out.OK() || out.Error.Code != NavCodePolicyDenied {
			t.Errorf("%s: Navigate = %+v (error %+v), want networkPolicyDenied", tt.name, out, out.Error)
		}
	}
	// Requests from page scripts are refused too, and allowed ones pass.
	open(t, p, "/home.html")
	if _, err := p.Evaluate(ctx, `fetch("/secret").then(r => r.text())`); err == nil {
		t.Error("page fetch of a refused url succeeded")
	}
	if got := eval[string](t, p, `fetch("/slow?ms=0").then(r => r.text())`); got != "slow done" {
		t.Errorf("allowed fetch = %q", got)
	}
	// A popup opened straight onto a refused url does not keep it.
	popup, err := s.WaitPopup(ctx, p, func() error {
		_, err := p.Evaluate(ctx, `window.open("/secret"); 1`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "refused popup is blanked", func() bool {
		st := popup.State()
		return st.URL != nil && *st.URL == "about:blank"
	})
	if got := eval[string](t, popup, `document.body ? document.body.innerText : ""`); strings.Contains(got, "secret") {
		t.Errorf("popup shows the refused document: %q", got)
	}
	// Only the popup's first request (sent before anyone can attach) may
	// have reached the server.
	if n := secretHits.Load() - hits; n > 1 {
		t.Errorf("%d requests reached the refused endpoint, want at most the popup's first", n)
	}
}

func TestNavigationPolicyCheck(t *testing.T) {
	tests := []struct {
		raw   string
		allow []string
		want  error
	}{
		{"https://example.com/a?b=c", nil, nil},
		{"HTTP://EXAMPLE.COM", nil, nil},
		{"about:blank", nil, nil},
		{"about:config", nil, ErrPolicyDenied},
		{"file:///tmp/x.html", nil, ErrPolicyDenied},
		{"file:///tmp/x.html", []string{"file"}, nil},
		{"data:text/plain,hi", []string{"FILE", "data"}, nil},
		{"javascript:alert(1)", []string{"javascript"}, ErrPolicyDenied},
		{"chrome://settings", nil, ErrPolicyDenied},
		{"http:///nohost", nil, ErrInvalidArgument},
		{"/relative", nil, ErrInvalidArgument},
		{"", nil, ErrInvalidArgument},
		{"http://[::1", nil, ErrInvalidArgument},
		{"https://x/" + strings.Repeat("a", MaxURLLength), nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		_, err := NavigationPolicy{AllowSchemes: tt.allow}.Check(tt.raw)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			name := tt.raw
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			t.Errorf("Check(%q, allow %v) = %v, want %v", name, tt.allow, err, tt.want)
		}
	}
}
