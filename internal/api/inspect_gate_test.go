package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/api"
)

// With DELTA_INSPECT_TOKEN empty the inspection surface is not open: it
// answers loopback clients only, whatever the request claims about itself.
func TestEmptyInspectTokenMeansLoopbackOnly(t *testing.T) {
	h := api.New(api.Options{InspectWrite: true, DevConfig: func() any { return map[string]any{"ok": true} }})
	serve := func(method, path, remote string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = remote
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	routes := []struct{ method, path string }{
		{"GET", "/dev"},
		{"GET", "/v1/dev/stream?live=0"},
		{"GET", "/v1/dev/config"},
		{"GET", "/v1/dev/runs/resp_x"},
		{"POST", "/v1/dev/secrets/KB_TOKEN"},
		{"DELETE", "/v1/dev/secrets/KB_TOKEN"},
		{"GET", "/dev/app.js"},
		{"GET", "/v1/dev/runs"},
		{"GET", "/v1/dev/runs/resp_x/calls"},
		{"GET", "/v1/dev/sessions"},
		{"GET", "/v1/dev/session"},
		{"GET", "/v1/dev/files"},
		{"GET", "/v1/dev/files/DELTA.md"},
		{"PUT", "/v1/dev/files/DELTA.md"},
		{"GET", "/v1/dev/pprof/heap"},
		{"GET", "/v1/dev/revisions"},
		{"GET", "/v1/dev/revisions/1/compare"},
		{"POST", "/v1/dev/revisions/1/restore"},
	}
	for _, rt := range routes {
		for _, remote := range []string{"203.0.113.7:40000", "[2001:db8::1]:40000", "10.0.0.5:40000"} {
			w := serve(rt.method, rt.path, remote, map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-Ip": "127.0.0.1", "Host": "localhost"})
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "DELTA_INSPECT_TOKEN") {
				t.Errorf("%s %s from %s with no inspect token = %d %s, want 403 naming DELTA_INSPECT_TOKEN", rt.method, rt.path, remote, w.Code, clip(w.Body.String()))
			}
		}
	}
	for _, remote := range []string{"127.0.0.1:40000", "[::1]:40000"} {
		if w := serve("GET", "/dev", remote, nil); w.Code != http.StatusOK {
			t.Errorf("/dev from %s = %d, want 200", remote, w.Code)
		}
		if w := serve("GET", "/v1/dev/config", remote, nil); w.Code != http.StatusOK {
			t.Errorf("/v1/dev/config from %s = %d, want 200", remote, w.Code)
		}
	}
	// A configured token opens it to remote clients that present it.
	gated := api.New(api.Options{InspectToken: "look"})
	r := httptest.NewRequest("GET", "/dev", nil)
	r.RemoteAddr = "203.0.113.7:40000"
	r.Header.Set("Authorization", "Bearer look")
	w := httptest.NewRecorder()
	gated.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("/dev from a remote client with the inspect token = %d, want 200", w.Code)
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// DELTA_INSPECT=off removes every inspection route, the Cockpit's files and
// the session exchange included, whatever credential the client brings.
func TestInspectOffRemovesEveryInspectionRoute(t *testing.T) {
	h := api.New(api.Options{InspectOff: true, InspectToken: "look", InspectWrite: true})
	for _, rt := range []struct{ method, path string }{
		{"GET", "/dev"}, {"GET", "/dev/app.js"}, {"GET", "/v1/dev/runs"}, {"GET", "/v1/dev/runs/resp_x"},
		{"GET", "/v1/dev/runs/resp_x/calls"}, {"GET", "/v1/dev/sessions"}, {"GET", "/v1/dev/files"},
		{"GET", "/v1/dev/files/DELTA.md"}, {"PUT", "/v1/dev/files/DELTA.md"}, {"POST", "/v1/dev/session"},
		{"GET", "/v1/dev/session"}, {"GET", "/v1/dev/stream?live=0"},
	} {
		r := httptest.NewRequest(rt.method, rt.path, strings.NewReader(`{"token":"look"}`))
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("Authorization", "Bearer look")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusNotFound {
			t.Errorf("%s %s with DELTA_INSPECT=off = %d, want 404", rt.method, rt.path, w.Code)
		}
	}
}
