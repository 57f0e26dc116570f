package scheduler

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
)

const token = "sched-token"

func newServer(t *testing.T, now time.Time) (*httptest.Server, *store.Schedules) {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := New(st, Options{Token: token, DaemonURL: "http://127.0.0.1:1", Now: func() time.Time { return now }})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, st
}

func do(t *testing.T, srv *httptest.Server, method, path, auth, owner, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if owner != "" {
		req.Header.Set(schedule.HeaderUser, owner)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRESTRefusals: every refusal is a 4xx with {"error":{"message":…}}
// that says what to send instead.
func TestRESTRefusals(t *testing.T) {
	srv, _ := newServer(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		words                          string
	}{
		{"no token", "GET", "/v1/schedules", "", "", 401, "bearer"},
		{"wrong token", "GET", "/v1/schedules", "nope", "", 401, "bearer"},
		{"unknown route", "GET", "/v1/nothing", token, "", 404, "the routes are"},
		{"nested id", "GET", "/v1/schedules/a/b", token, "", 404, "no route"},
		{"bad method", "PUT", "/v1/schedules", token, "{}", 405, "not allowed"},
		{"not an object", "POST", "/v1/schedules", token, `[1]`, 400, "JSON object"},
		{"malformed", "POST", "/v1/schedules", token, `{"kind":`, 400, "not a valid schedule"},
		{"unknown field", "POST", "/v1/schedules", token, `{"kind":"interval","every":60,"input":"x"}`, 400, "unknown field"},
		{"wrong type", "POST", "/v1/schedules", token, `{"kind":"interval","every_seconds":"60","input":"x"}`, 400, "not a valid schedule"},
		{"short interval", "POST", "/v1/schedules", token, `{"kind":"interval","every_seconds":30,"input":"x"}`, 400, "60-second minimum"},
		{"never fires", "POST", "/v1/schedules", token, `{"kind":"cron","cron":"0 0 30 2 *","input":"x"}`, 400, "never fires"},
		{"too large", "POST", "/v1/schedules", token, `{"input":"` + strings.Repeat("a", DefaultMaxBody) + `"}`, 413, "larger than"},
		{"unknown id", "DELETE", "/v1/schedules/sch_nope", token, "", 404, "no schedule sch_nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, srv, tc.method, tc.path, tc.auth, "", tc.body)
			var eb schedule.ErrorBody
			if status != tc.status || json.Unmarshal([]byte(body), &eb) != nil || !strings.Contains(eb.Error.Message, tc.words) {
				t.Fatalf("got %d %s; want %d with %q", status, body, tc.status, tc.words)
			}
		})
	}
}

// TestRESTIsOwnerScoped: a schedule is read, listed and cancelled only by
// the owner that created it.
func TestRESTIsOwnerScoped(t *testing.T) {
	srv, _ := newServer(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	status, body := do(t, srv, "POST", "/v1/schedules", token, "alice", `{"kind":"once","at":"2026-12-01T12:00:00+01:00","input":"ping"}`)
	var s schedule.Schedule
	if status != 201 || json.Unmarshal([]byte(body), &s) != nil || s.Owner != "alice" || s.NextFireAt == nil || !s.NextFireAt.Equal(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)) {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := do(t, srv, "GET", "/v1/schedules", token, "bob", ""); status != 200 || !strings.Contains(body, `"data":[]`) {
		t.Fatalf("bob lists: %d %s", status, body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if status, _ := do(t, srv, m, "/v1/schedules/"+s.ID, token, "bob", ""); status != 404 {
			t.Fatalf("bob %s alice's schedule: %d", m, status)
		}
	}
	if status, body := do(t, srv, "DELETE", "/v1/schedules/"+s.ID, token, "alice", ""); status != 200 || !strings.Contains(body, `"status":"cancelled"`) {
		t.Fatalf("alice cancels: %d %s", status, body)
	}
	if status, body := do(t, srv, "GET", "/v1/schedules/"+s.ID, token, "alice", ""); status != 200 || !strings.Contains(body, `"status":"cancelled"`) || strings.Contains(body, "next_fire_at") {
		t.Fatalf("alice reads the cancelled schedule: %d %s", status, body)
	}
}

func FuzzDecodeCreate(f *testing.F) {
	f.Add([]byte(`{"kind":"cron","cron":"0 8 * * *","timezone":"Europe/Paris","input":"x"}`))
	f.Add([]byte(`{"kind":"once","at":"2027-01-01T00:00:00Z","input":"x","previous_response_id":"resp_1"}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCreate(b)
		if err != nil {
			return
		}
		if strings.TrimSpace(c.Input) == "" || len(c.Input) > schedule.MaxInputBytes {
			t.Fatalf("accepted input %q", c.Input)
		}
		_, _ = c.Compile(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	})
}
