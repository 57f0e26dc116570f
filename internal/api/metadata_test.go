package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/store"
)

// metadataServer is newServer with the database directory exposed; close
// stops everything and closes the database, so its files can be read whole.
func metadataServer(t *testing.T, o api.Options) (url, dbDir string, close func()) {
	t.Helper()
	srv, dir, close := startServer(t, o, echoProvider)
	return srv.URL, dir, close
}

func TestRequestMetadataKeptAndEchoed(t *testing.T) {
	const secret, secret2 = "tok-per-run-9f3c1a", "tok-other-case-77d2"
	body := `{"input":"hi","metadata":{
		"authToken":"` + secret + `", "AuthToken":"` + secret2 + `",
		"review_kind":"submission_disposition", "widen_authorized":true, "Widen_Authorized":true,
		"task_id":"task-marker-4411", "task_type":"brief", "submission_id":"sub_123",
		"context":{"team":"otters","n":12345678901234567890}}}`
	for _, tt := range []struct {
		name    string
		trusted bool
		keys    []string // the echoed metadata keys, sorted
	}{
		{"default strips review keys", false, []string{"context", "submission_id", "task_id", "task_type"}},
		{"trusted keeps review keys", true, []string{"Widen_Authorized", "context", "review_kind", "submission_id", "task_id", "task_type", "widen_authorized"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, dir, closeAll := metadataServer(t, api.Options{TrustReviewMetadata: tt.trusted})
			status, resp := do(t, "POST", url+"/v1/responses", body, nil)
			if status != 200 {
				t.Fatalf("POST /v1/responses = %d %v", status, resp)
			}
			md, ok := resp["metadata"].(map[string]any)
			if !ok {
				t.Fatalf("response metadata = %#v, want an object", resp["metadata"])
			}
			var keys []string
			for k := range md {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
				t.Fatalf("echoed metadata keys %v, want %v", keys, tt.keys)
			}
			if md["task_id"] != "task-marker-4411" {
				t.Fatalf("task_id echoed as %v", md["task_id"])
			}
			// Values are kept as sent: a 20-digit number is not rounded.
			raw, _ := json.Marshal(resp["metadata"])
			if tt.trusted && md["review_kind"] != "submission_disposition" {
				t.Fatalf("trusted review_kind echoed as %v", md["review_kind"])
			}
			if strings.Contains(string(raw), secret) || strings.Contains(string(raw), secret2) {
				t.Fatalf("a per-run token was echoed: %s", raw)
			}

			// The same object is on the task's result.
			status, task := do(t, "POST", url+"/v1/tasks", body, nil)
			if status != 202 {
				t.Fatalf("POST /v1/tasks = %d %v", status, task)
			}
			id, _ := task["id"].(string)
			waitTerminal(t, url, id)
			_, got := do(t, "GET", url+"/v1/tasks/"+id, "", nil)
			result, _ := got["result"].(map[string]any)
			if b, _ := json.Marshal(result["metadata"]); string(b) != string(raw) {
				t.Fatalf("task result metadata %s, want %s", b, raw)
			}

			// Nothing of either token reaches the database files, which do
			// hold the rest of the metadata.
			closeAll()
			files, _ := filepath.Glob(filepath.Join(dir, "delta.db*"))
			var all []byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, b...)
			}
			if !bytes.Contains(all, []byte("task-marker-4411")) {
				t.Fatalf("the database files (%v) do not hold the kept metadata: the scan proves nothing", files)
			}
			if !bytes.Contains(all, []byte("12345678901234567890")) {
				t.Fatalf("a large number in metadata was not stored verbatim")
			}
			for _, s := range []string{secret, secret2} {
				if bytes.Contains(all, []byte(s)) {
					t.Fatalf("the database files hold the per-run token %q", s)
				}
			}
			if got := bytes.Contains(all, []byte("submission_disposition")); got != tt.trusted {
				t.Fatalf("review_kind stored = %v, want %v", got, tt.trusted)
			}
		})
	}
}

func TestRequestMetadataAbsentOrOnlySecret(t *testing.T) {
	url, _, _ := metadataServer(t, api.Options{})
	for _, body := range []string{
		`{"input":"hi"}`,
		`{"input":"hi","metadata":null}`,
		`{"input":"hi","metadata":{}}`,
		`{"input":"hi","metadata":{"authToken":"tok-x","review_kind":"submission_disposition"}}`,
	} {
		status, resp := do(t, "POST", url+"/v1/responses", body, nil)
		md, ok := resp["metadata"].(map[string]any)
		if status != 200 || !ok || len(md) != 0 {
			t.Fatalf("%s: %d metadata %#v, want 200 and {}", body, status, resp["metadata"])
		}
	}
}

func waitTerminal(t *testing.T, url, id string) {
	t.Helper()
	for range 2000 {
		_, got := do(t, "GET", url+"/v1/tasks/"+id, "", nil)
		if st, _ := got["status"].(string); store.Terminal(st) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("task %s never finished", id)
}
