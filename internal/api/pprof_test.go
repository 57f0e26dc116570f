package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/api"
)

// An operator who set DELTA_PPROF reads the daemon's runtime profiles from
// loopback (or with the inspect token); without it, or from elsewhere
// without the token, the profiles are not served.
func TestRuntimeProfilesBehindFlagAndGate(t *testing.T) {
	get := func(h http.Handler, path, remote string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	on := api.New(api.Options{Profiling: true})
	for _, tt := range []struct{ path, want string }{
		{"/v1/dev/pprof/", "goroutine"},
		{"/v1/dev/pprof/goroutine?debug=1", "goroutine profile: total"},
		{"/v1/dev/pprof/heap?debug=1", "heap profile:"},
		{"/v1/dev/pprof/mutex?debug=1", "mutex"},
	} {
		w := get(on, tt.path, "127.0.0.1:40000")
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("GET %s from loopback = %d %q, want 200 containing %q", tt.path, w.Code, clip(w.Body.String()), tt.want)
		}
	}
	if w := get(on, "/v1/dev/pprof/nosuch", "127.0.0.1:40000"); w.Code != http.StatusNotFound {
		t.Errorf("unknown profile = %d, want 404", w.Code)
	}
	if w := get(on, "/v1/dev/pprof/cmdline", "127.0.0.1:40000"); w.Code != http.StatusNotFound {
		t.Errorf("cmdline = %d %q, want 404: the command line is not a profile", w.Code, clip(w.Body.String()))
	}
	if w := get(on, "/v1/dev/pprof/heap?debug=1", "203.0.113.7:40000"); w.Code != http.StatusForbidden {
		t.Errorf("heap from a remote client without the inspect token = %d, want 403", w.Code)
	}
	off := api.New(api.Options{})
	w := get(off, "/v1/dev/pprof/heap?debug=1", "127.0.0.1:40000")
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "DELTA_PPROF") || !strings.Contains(w.Body.String(), `"error"`) {
		t.Errorf("heap with profiling off = %d %q, want a 404 error naming DELTA_PPROF", w.Code, clip(w.Body.String()))
	}
}

// A bad or unbounded seconds, a second CPU recording at once and an
// unknown profile each get a JSON error, never a silent 30 s profile or
// plain text.
func TestRuntimeProfilesRefuseBadRequests(t *testing.T) {
	on := api.New(api.Options{Profiling: true})
	get := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		on.ServeHTTP(w, r)
		return w
	}
	for _, tt := range []struct {
		path string
		code int
	}{
		{"/v1/dev/pprof/profile?seconds=abc", 400}, {"/v1/dev/pprof/profile?seconds=-1", 400},
		{"/v1/dev/pprof/profile?seconds=0", 400}, {"/v1/dev/pprof/trace?seconds=3600", 400},
		{"/v1/dev/pprof/nosuch", 404},
	} {
		w := get(tt.path)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("GET %s = %d %q, want %d with a JSON error", tt.path, w.Code, clip(w.Body.String()), tt.code)
		}
	}
	// Two recordings asked for at once: whichever starts first records,
	// the other is refused while it does (each would take 3 s, far longer
	// than the two requests take to arrive).
	codes := make(chan *httptest.ResponseRecorder, 2)
	for range 2 {
		go func() { codes <- get("/v1/dev/pprof/profile?seconds=3") }()
	}
	a, b := <-codes, <-codes
	if a.Code == http.StatusConflict {
		a, b = b, a
	}
	if a.Code != http.StatusOK || b.Code != http.StatusConflict || !strings.Contains(b.Body.String(), `"error"`) {
		t.Errorf("two CPU profiles at once = %d and %d %q, want one 200 and one 409 with a JSON error", a.Code, b.Code, clip(b.Body.String()))
	}
}
