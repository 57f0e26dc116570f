package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/api"
)

// A request no route takes is still answered in the error envelope: 405
// with Allow for a known path with the wrong method, 404 otherwise, never
// the mux's plain text, HTML or redirect.
func TestUnroutedRequestsAnswerTheErrorEnvelope(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"POST", "/healthz", 405, "GET"},
		{"POST", "/dev", 405, "GET"},
		{"PUT", "/v1/busy", 405, "GET"},
		{"GET", "/v1/responses", 405, "POST"},
		{"POST", "/v1/tasks/resp_1", 405, "DELETE"},
		{"GET", "/nope", 404, ""},
		{"GET", "/v1//busy", 404, ""},
		{"GET", "/v1/nope", 404, ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(`{}`))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m map[string]any
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(b, &m) != nil || errMessage(m) == "" {
				t.Fatalf("%d %q %s, want %d with the error envelope", resp.StatusCode, resp.Header.Get("Content-Type"), b, tt.status)
			}
			if tt.allow != "" && !strings.Contains(resp.Header.Get("Allow"), tt.allow) {
				t.Fatalf("Allow = %q, want it to name %s", resp.Header.Get("Allow"), tt.allow)
			}
		})
	}
}
