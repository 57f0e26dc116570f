package broker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeBroker serves tokens: the nth mint answers reply(n).
type fakeBroker struct {
	srv   *httptest.Server
	mints atomic.Int32
	auth  atomic.Value // last Authorization header
}

func startBroker(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request)) *fakeBroker {
	t.Helper()
	fb := &fakeBroker{}
	fb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(fb.mints.Add(1))
		fb.auth.Store(r.Header.Get("Authorization"))
		if r.Method != http.MethodGet {
			http.Error(w, "want GET", http.StatusMethodNotAllowed)
			return
		}
		reply(n, w, r)
	}))
	t.Cleanup(fb.srv.Close)
	return fb
}

func tokenReply(access, account string, exp time.Time) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"accessToken": access, "accountId": account, "expiresAt": exp.Format(time.RFC3339)})
	}
}

func newBroker(t *testing.T, o Options) *Broker {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return epoch }
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCoalescing: 100 concurrent first callers share one mint.
func TestCoalescing(t *testing.T) {
	release := make(chan struct{})
	fb := startBroker(t, func(n int, w http.ResponseWriter, r *http.Request) {
		<-release
		tokenReply("tok", "acct", epoch.Add(time.Hour))(n, w, r)
	})
	b := newBroker(t, Options{URL: fb.srv.URL})
	const callers = 100
	var wg sync.WaitGroup
	toks := make([]Token, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { toks[i], errs[i] = b.Token(context.Background()) })
	}
	// Hold the mint open until every caller is waiting on it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		b.mu.Lock()
		waiting := 0
		if b.inflight != nil {
			waiting = b.inflight.waiters
		}
		b.mu.Unlock()
		if waiting == callers {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("only %d callers joined the mint", waiting)
		case <-time.After(time.Millisecond):
		}
	}
	close(release)
	wg.Wait()
	if got := fb.mints.Load(); got != 1 || b.Mints() != 1 {
		t.Fatalf("broker saw %d mints (counted %d), want 1", got, b.Mints())
	}
	for i := range callers {
		if errs[i] != nil || toks[i].AccessToken != "tok" || toks[i].AccountID != "acct" {
			t.Fatalf("caller %d got %+v, %v", i, toks[i], errs[i])
		}
	}
	// Cached afterwards.
	if _, err := b.Token(context.Background()); err != nil || fb.mints.Load() != 1 {
		t.Fatalf("cached call: err %v, mints %d", err, fb.mints.Load())
	}
}

// TestTokenAcceptance: only a complete token more than five minutes from
// expiry is accepted.
func TestTokenAcceptance(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		code int
		want string // "" = accepted
	}{
		{"valid", `{"accessToken":"a","accountId":"b","expiresAt":"2026-03-01T12:06:00Z"}`, 200, ""},
		{"fractional seconds and offset", `{"accessToken":"a","accountId":"b","expiresAt":"2026-03-01T13:30:00.123+01:00"}`, 200, ""},
		{"inside the margin", `{"accessToken":"a","accountId":"b","expiresAt":"2026-03-01T12:04:59Z"}`, 200, "less than 5m0s"},
		{"exactly the margin", `{"accessToken":"a","accountId":"b","expiresAt":"2026-03-01T12:05:00Z"}`, 200, "less than 5m0s"},
		{"expired", `{"accessToken":"a","accountId":"b","expiresAt":"2020-01-01T00:00:00Z"}`, 200, "less than"},
		{"no token", `{"accessToken":"","accountId":"b","expiresAt":"2026-03-01T13:00:00Z"}`, 200, "lacks accessToken"},
		{"no account", `{"accessToken":"a","expiresAt":"2026-03-01T13:00:00Z"}`, 200, "lacks accessToken or accountId"},
		{"not ISO", `{"accessToken":"a","accountId":"b","expiresAt":"1772370000"}`, 200, "not an ISO 8601"},
		{"not JSON", `<html>`, 200, "not a JSON token object"},
		{"null", `null`, 200, "lacks accessToken"},
		{"broker refuses", `nope`, 403, "http 403"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := startBroker(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.body)
			})
			b := newBroker(t, Options{URL: fb.srv.URL})
			tok, err := b.Token(context.Background())
			if tt.want == "" {
				if err != nil || tok.AccessToken != "a" {
					t.Fatalf("got %+v, %v; want accepted", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestExpiryRemints: a cached token is reused until it is within the
// margin of expiry, then replaced.
func TestExpiryRemints(t *testing.T) {
	var mu sync.Mutex
	now := epoch
	fb := startBroker(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		exp := now.Add(time.Hour)
		mu.Unlock()
		tokenReply("tok"+string(rune('0'+n)), "acct", exp)(n, w, r)
	})
	b := newBroker(t, Options{URL: fb.srv.URL, Auth: "broker-secret", Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	first, _ := b.Token(context.Background())
	mu.Lock()
	now = now.Add(54 * time.Minute) // 6 min left: still good
	mu.Unlock()
	again, _ := b.Token(context.Background())
	mu.Lock()
	now = now.Add(2 * time.Minute) // 4 min left: too close
	mu.Unlock()
	fresh, err := b.Token(context.Background())
	if err != nil || first.AccessToken != "tok1" || again.AccessToken != "tok1" || fresh.AccessToken != "tok2" {
		t.Fatalf("tokens %q %q %q (%v); want tok1 reused, then tok2", first.AccessToken, again.AccessToken, fresh.AccessToken, err)
	}
	if got := fb.auth.Load(); got != "Bearer broker-secret" {
		t.Errorf("broker saw Authorization %q", got)
	}
}

func TestNewRequiresHTTPS(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://control.example/api/broker/openai-token", true},
		{"http://127.0.0.1:9/token", true},
		{"http://localhost:9/token", true},
		{"http://[::1]:9/token", true},
		{"http://control.example/token", false},
		{"http://10.0.0.1/token", false},
		{"ftp://control.example/token", false},
		{"/relative", false},
		{"", false},
	} {
		_, err := New(Options{URL: tt.url})
		if (err == nil) != tt.ok {
			t.Errorf("New(%q) err = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestMintTimeout(t *testing.T) {
	stop := make(chan struct{})
	fb := startBroker(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	defer close(stop)
	b := newBroker(t, Options{URL: fb.srv.URL, Timeout: 20 * time.Millisecond})
	if _, err := b.Token(context.Background()); err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err %v, want a deadline error", err)
	}
}

func TestAllowed(t *testing.T) {
	b := newBroker(t, Options{URL: "https://broker.example/t"})
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://chatgpt.com/backend-api/codex/responses", true},
		{"https://CHATGPT.com:443/x", true},
		{"http://chatgpt.com/x", false},
		{"https://api.chatgpt.com/x", false},
		{"https://chatgpt.com.evil.example/x", false},
		{"https://evilchatgpt.com/x", false},
	} {
		u, _ := url.Parse(tt.url)
		if got := b.Allowed(u); got != tt.ok {
			t.Errorf("Allowed(%s) = %v, want %v", tt.url, got, tt.ok)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add([]byte(`{"accessToken":"a","accountId":"b","expiresAt":"2026-03-01T12:06:00Z"}`))
	f.Add([]byte(`{"accessToken":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"expiresAt":"9999-99-99"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tok, err := parseToken(body, epoch, DefaultMargin)
		if err == nil && (tok.AccessToken == "" || tok.AccountID == "" || !tok.ExpiresAt.After(epoch)) {
			t.Fatalf("accepted an unusable token %+v", tok)
		}
	})
}
