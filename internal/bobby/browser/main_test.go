package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/bobby/pagetest"
)

// One Chromium serves the whole test binary (a launch costs ~0.5 s); tests
// that kill or close a browser start their own Runtime.
var (
	shared  *Runtime
	srv     *httptest.Server
	srvStop = make(chan struct{})
	// secretHits counts requests that reached /secret, the endpoint the
	// network-policy tests refuse.
	secretHits atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "browser-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv = httptest.NewServer(testHandler())
	defer func() {
		close(srvStop)
		srv.Close()
	}()

	shared = New(Options{
		DataDir:         dir,
		Logger:          testLogger(),
		NavigateTimeout: 10 * time.Second,
		ActionTimeout:   10 * time.Second,
		DownloadsDir:    filepath.Join(dir, "downloads"),
	})
	ctx := context.Background()
	if err := shared.Open(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "the browser tests need Chromium (apt-get install -y chromium):", err)
		return 1
	}
	code := m.Run()
	if err := shared.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close shared runtime:", err)
		code = 1
	}
	return code
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testHandler serves testdata/ plus a few dynamic endpoints.
func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("testdata")))
	mux.HandleFunc("/slow", pagetest.Slow(srvStop))
	mux.HandleFunc("/gate", func(w http.ResponseWriter, r *http.Request) {
		// answers once the test opens the gate of that name (see openGate)
		select {
		case <-gate(r.URL.Query().Get("name")):
			fmt.Fprint(w, "open")
		case <-r.Context().Done():
		case <-srvStop:
		}
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-srvStop:
		}
	})
	mux.HandleFunc("/setcookie", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "abc123", Path: "/"})
		fmt.Fprint(w, "<!doctype html><p>cookie set</p>")
	})
	mux.HandleFunc("/echo-cookie", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><p id=c>[%s]</p>", html.EscapeString(r.Header.Get("Cookie")))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/home.html", http.StatusFound)
	})
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "<!doctype html><p>secret</p>")
	})
	mux.HandleFunc("/redirect-secret", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/secret", http.StatusFound)
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(bytes.Repeat([]byte("x"), n))
	})
	mux.HandleFunc("/attachment", func(w http.ResponseWriter, r *http.Request) {
		// A response the browser saves rather than shows.
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Disposition", `attachment; filename="dl.txt"`)
		w.Write(bytes.Repeat([]byte("a"), n))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for i := 0; i < n; i += 100 {
			w.Write(bytes.Repeat([]byte("y"), min(100, n-i)))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/slow-download", func(w http.ResponseWriter, r *http.Request) {
		// A large file served in chunks with a pause between them and no
		// Content-Length, so a size limit must act while it downloads.
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		chunk, _ := strconv.Atoi(r.URL.Query().Get("chunk"))
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		chunk = max(chunk, 1)
		w.Header().Set("Content-Type", "application/octet-stream")
		for i := 0; i < n; i += chunk {
			if _, err := w.Write(bytes.Repeat([]byte("z"), min(chunk, n-i))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Duration(min(ms, 100)) * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-srvStop:
				return
			}
		}
	})
	mux.HandleFunc("/echo-headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "Accept-Language: %s\nUser-Agent: %s\n", r.Header.Get("Accept-Language"), r.Header.Get("User-Agent"))
	})
	mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"items":[1,2,3]}`)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	return mux
}

// newSession opens a session in the shared runtime, closed at cleanup.
func newSession(t testing.TB) *Session {
	t.Helper()
	return newSessionWith(t, "default", ExecutionPolicy{})
}

// newSessionWith opens a session of profile under policy in the shared
// runtime, closed at cleanup.
func newSessionWith(t testing.TB, profile string, policy ExecutionPolicy) *Session {
	t.Helper()
	s, err := shared.NewSession(context.Background(), profile, policy)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() {
		if err := shared.CloseSession(context.Background(), s.ID); err != nil {
			t.Errorf("CloseSession: %v", err)
		}
	})
	return s
}

// pageOf opens a page in s.
func pageOf(t testing.TB, s *Session) *Page {
	t.Helper()
	p, err := s.NewPage(context.Background())
	if err != nil {
		t.Fatalf("NewPage: %v", err)
	}
	return p
}

// testPage opens a page in a fresh session.
func testPage(t testing.TB) *Page {
	t.Helper()
	return pageOf(t, newSession(t))
}

// pageAt opens a page in a fresh session at a path of the test server.
func pageAt(t testing.TB, path string) *Page {
	t.Helper()
	p := testPage(t)
	open(t, p, path)
	return p
}

// sessionPage opens a session of rt and a page in it, with no cleanup: the
// test closes the session itself or its runtime ends both.
func sessionPage(t testing.TB, rt *Runtime, profile string) (*Session, *Page) {
	t.Helper()
	s, err := rt.NewSession(context.Background(), profile, ExecutionPolicy{})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	return s, pageOf(t, s)
}

// openRuntime launches a Runtime of the test's own, for a test that kills
// or closes its browser or needs options the shared one lacks; it is
// closed at cleanup.
func openRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	rt := New(opts)
	if err := rt.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// denySecret is the network policy (the hook the gateway's SSRF policy
// uses) of the tests that check a refusal: it refuses /secret.
func denySecret(u *url.URL) error {
	if u.Path == "/secret" {
		return errors.New("private address")
	}
	return nil
}

// open navigates p to a path of the test server and fails on a failed outcome.
func open(t testing.TB, p *Page, path string) {
	t.Helper()
	out := p.Navigate(context.Background(), srv.URL+path)
	if !out.OK() {
		t.Fatalf("Navigate(%s) = %+v (error %+v)", path, out, out.Error)
	}
}

// eval evaluates expr and decodes the result into T.
func eval[T any](t testing.TB, p *Page, expr string) T {
	t.Helper()
	raw, err := p.Evaluate(context.Background(), expr)
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", expr, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("Evaluate(%s) = %s: decode: %v", expr, raw, err)
	}
	return v
}

// eventually polls cond until it holds; it fails the test after a generous
// bound (this is a liveness check, not a timing assertion).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	gatesMu sync.Mutex
	gates   = map[string]chan struct{}{}
)

// gate returns the channel of the named gate, closed when it opens.
func gate(name string) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	ch, ok := gates[name]
	if !ok {
		ch = make(chan struct{})
		gates[name] = ch
	}
	return ch
}

// openGate lets a page's request to /gate?name=… answer: a page that waits
// on it changes only when the test says so, however slow the machine.
func openGate(name string) {
	ch := gate(name)
	gatesMu.Lock()
	defer gatesMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}
