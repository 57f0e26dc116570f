package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// DELTA_PPROF=1 reaches the served handler: a daemon started with it
// answers the heap profile on loopback, and one started without it says
// how to turn profiles on.
func TestProfilingFlagReachesTheServedRoutes(t *testing.T) {
	for _, v := range []string{"1", "0"} {
		cfg, stop := serveWith(t, map[string]string{"DELTA_PPROF": v})
		resp, err := http.Get(listenAddr(t, cfg) + "/v1/dev/pprof/heap?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if v == "1" && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile:")) {
			t.Errorf("DELTA_PPROF=1: heap = %d %.120q, want the heap profile", resp.StatusCode, body)
		}
		if v == "0" && (resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "DELTA_PPROF")) {
			t.Errorf("DELTA_PPROF=0: heap = %d %.120q, want a 404 naming DELTA_PPROF", resp.StatusCode, body)
		}
	}
}
