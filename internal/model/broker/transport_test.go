package broker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// backend is a TLS server standing in for the subscription backend: it
// records the credentials it saw and refuses the tokens in reject.
type backend struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []string // "token|account"
	reject map[string]bool
}

func startBackend(t *testing.T, reject ...string) *backend {
	t.Helper()
	be := &backend{reject: map[string]bool{}}
	for _, r := range reject {
		be.reject[r] = true
	}
	be.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		be.mu.Lock()
		be.seen = append(be.seen, tok+"|"+r.Header.Get(AccountHeader))
		refused := be.reject[tok]
		be.mu.Unlock()
		if refused {
			http.Error(w, `{"error":{"message":"token revoked"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(be.srv.Close)
	return be
}

func (be *backend) requests() []string {
	be.mu.Lock()
	defer be.mu.Unlock()
	return append([]string(nil), be.seen...)
}

func get(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(`{"model":"x"}`))
	res, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}

// TestTransportRemintsAfter401: the backend refuses the first token; the
// transport forgets it and the next request carries a fresh one.
func TestTransportRemintsAfter401(t *testing.T) {
	be := startBackend(t, "tok1")
	fb := startBroker(t, func(n int, w http.ResponseWriter, r *http.Request) {
		tokenReply("tok"+string(rune('0'+n)), "acct-9", epoch.Add(time.Hour))(n, w, r)
	})
	b := newBroker(t, Options{URL: fb.srv.URL, AllowedHosts: []string{"127.0.0.1"}})
	c := &http.Client{Transport: b.Transport(be.srv.Client().Transport)}
	code1, _, err1 := get(t, c, be.srv.URL+"/responses")
	code2, body2, err2 := get(t, c, be.srv.URL+"/responses")
	if err1 != nil || err2 != nil || code1 != 401 || code2 != 200 || body2 != "ok" {
		t.Fatalf("codes %d %d (%v %v); want 401 then 200", code1, code2, err1, err2)
	}
	want := []string{"tok1|acct-9", "tok2|acct-9"}
	if got := be.requests(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("backend saw %q, want %q", got, want)
	}
	if fb.mints.Load() != 2 {
		t.Fatalf("mints %d, want 2", fb.mints.Load())
	}
}

// TestTransportAllowlist: the token never leaves for a host outside the
// allowlist, nor over plain HTTP, and the broker is not even asked.
func TestTransportAllowlist(t *testing.T) {
	be := startBackend(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("plain-HTTP server received a request with Authorization %q", r.Header.Get("Authorization"))
	}))
	defer plain.Close()
	fb := startBroker(t, tokenReply("tok", "acct", epoch.Add(time.Hour)))
	for _, tt := range []struct {
		name    string
		allowed []string
		url     string
	}{
		{"default allowlist is chatgpt.com only", nil, be.srv.URL},
		{"name, not address", []string{"localhost"}, be.srv.URL},
		{"https only", []string{"127.0.0.1"}, plain.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBroker(t, Options{URL: fb.srv.URL, AllowedHosts: tt.allowed})
			c := &http.Client{Transport: b.Transport(be.srv.Client().Transport)}
			_, _, err := get(t, c, tt.url)
			if err == nil || !strings.Contains(err.Error(), "DELTA_BROKER_ALLOWED_HOSTS") {
				t.Fatalf("err %v, want a refusal naming the allowlist", err)
			}
		})
	}
	if n := len(be.requests()); n != 0 {
		t.Fatalf("backend saw %d requests", n)
	}
	if fb.mints.Load() != 0 {
		t.Fatalf("broker minted %d tokens for refused hosts", fb.mints.Load())
	}
}

// TestTransportMintStatus: a broker refusal reaches the wire client as that
// status, so the cascade can advance (409) or cool the credential (429).
func TestTransportMintStatus(t *testing.T) {
	for _, status := range []int{401, 409, 429, 503} {
		be := startBackend(t)
		fb := startBroker(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no seat for broker-secret", status)
		})
		b := newBroker(t, Options{URL: fb.srv.URL, Auth: "broker-secret", AllowedHosts: []string{"127.0.0.1"}})
		c := &http.Client{Transport: b.Transport(be.srv.Client().Transport)}
		code, body, err := get(t, c, be.srv.URL)
		if err != nil || code != status {
			t.Fatalf("broker %d: got %d, %v", status, code, err)
		}
		var doc struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(body), &doc) != nil || !strings.Contains(doc.Error.Message, "mint subscription token") ||
			strings.Contains(body, "broker-secret") {
			t.Fatalf("broker %d: body %s; want an error message naming the mint, without the broker secret", status, body)
		}
		if len(be.requests()) != 0 {
			t.Fatalf("backend called without a token")
		}
	}
}
