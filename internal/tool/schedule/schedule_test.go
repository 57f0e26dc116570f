package schedule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/scheduler"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

const token = "control-token"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// rig is a real delta scheduler (its SQLite file, its HTTP surface on
// loopback) and tools pointed at it, with a count of the requests it got.
type rig struct {
	tools    map[string]tool.Tool
	requests atomic.Int64
	st       *store.Schedules
}

func newRig(t *testing.T, now time.Time) *rig {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), filepath.Join(t.TempDir(), "sched.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{t: now}
	s := scheduler.New(st, scheduler.Options{Token: token, DaemonURL: "http://127.0.0.1:1", Now: clk.Now})
	r := &rig{tools: map[string]tool.Tool{}, st: st}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		s.Handler().ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	c := New(Options{URL: srv.URL, Token: token, Agent: "agent-1", Now: clk.Now})
	for _, tl := range c.Tools() {
		r.tools[tl.Spec().Name] = tl
	}
	return r
}

func (r *rig) call(t *testing.T, name, owner, args string) tool.Result {
	t.Helper()
	res, err := r.tools[name].Run(context.Background(), tool.Call{RunID: "resp_1", SessionID: "sess_1", Owner: owner, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// TestCreateRefusesBadArgumentsBeforeAnyNetworkCall: each bad call is a
// tool error naming the problem and the repair, and the control plane
// never hears of it.
func TestCreateRefusesBadArgumentsBeforeAnyNetworkCall(t *testing.T) {
	r := newRig(t, now)
	for _, tc := range []struct {
		name, args string
		words      []string
	}{
		{"bad cron", `{"kind":"cron","cron":"0 25 * * *","input":"x"}`, []string{"not a valid cron expression", "Fix:"}},
		{"cron with seconds", `{"kind":"cron","cron":"0 0 8 * * *","input":"x"}`, []string{"has 6 fields", "five fields"}},
		{"interval 59 s", `{"kind":"interval","every_seconds":59,"input":"x"}`, []string{"shorter than the 60-second minimum", "send 60 or more"}},
		{"past timestamp", `{"kind":"once","at":"2026-11-30T08:00:00Z","input":"x"}`, []string{"not in the future", "2026-12-01T10:00:00Z"}},
		{"timestamp without offset", `{"kind":"once","at":"2026-12-24T08:00:00","input":"x"}`, []string{"with an offset"}},
		{"unknown tz", `{"kind":"cron","cron":"0 8 * * *","timezone":"Mars/Olympus","input":"x"}`, []string{"unknown timezone", "IANA"}},
		{"unknown kind", `{"kind":"daily","input":"x"}`, []string{"unknown kind", "once"}},
		{"two kinds at once", `{"kind":"once","at":"2027-01-01T00:00:00Z","cron":"0 8 * * *","input":"x"}`, []string{"does not apply to kind once"}},
		{"empty input", `{"kind":"interval","every_seconds":60,"input":"  "}`, []string{"input is empty"}},
		{"bad session", `{"kind":"interval","every_seconds":60,"input":"x","session":"other"}`, []string{"same or new"}},
		{"missing input", `{"kind":"interval","every_seconds":60}`, []string{"input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.call(t, CreateName, "", tc.args)
			if !res.IsError {
				t.Fatalf("accepted: %s", res.Text)
			}
			for _, w := range tc.words {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
		})
	}
	if n := r.requests.Load(); n != 0 {
		t.Fatalf("the control plane got %d requests for invalid calls", n)
	}
}

// TestToolsAreOwnerScoped: what one owner schedules, another neither
// lists nor cancels.
func TestToolsAreOwnerScoped(t *testing.T) {
	r := newRig(t, now)
	res := r.call(t, CreateName, "alice", `{"kind":"cron","cron":"0 8 * * *","timezone":"Europe/Paris","input":"check the build"}`)
	if res.IsError || !strings.Contains(res.Text, "next 2026-12-02T07:00:00Z") {
		t.Fatalf("create: %+v", res)
	}
	id := strings.Fields(strings.TrimPrefix(res.Text, "scheduled "))[0]
	rows, err := r.st.OwnedSchedules(context.Background(), "alice", "agent-1")
	if err != nil || len(rows) != 1 || rows[0].PreviousResponseID != "resp_1" || rows[0].Session != "sess_1" || rows[0].Input != "check the build" {
		t.Fatalf("stored %+v, %v; want alice's schedule routed to resp_1 in sess_1", rows, err)
	}
	if res := r.call(t, ListName, "alice", `{}`); !strings.Contains(res.Text, id) || !strings.Contains(res.Text, "task: check the build") {
		t.Fatalf("alice's list: %q", res.Text)
	}
	if res := r.call(t, ListName, "bob", `{}`); res.Text != "no schedules" {
		t.Fatalf("bob's list: %q", res.Text)
	}
	if res := r.call(t, CancelName, "bob", `{"id":"`+id+`"}`); !res.IsError || !strings.Contains(res.Text, "404") {
		t.Fatalf("bob cancelled alice's schedule: %+v", res)
	}
	if res := r.call(t, CancelName, "alice", `{"id":"`+id+`"}`); res.IsError || !strings.Contains(res.Text, "cancelled") {
		t.Fatalf("alice's cancel: %+v", res)
	}
	if res := r.call(t, CancelName, "alice", `{"id":"../x"}`); !res.IsError {
		t.Fatalf("a path as id was sent: %+v", res)
	}
}

// TestUnreachableControlPlaneIsAToolError: a dead control plane gives the
// model a result it can act on, without the token in it.
func TestUnreachableControlPlaneIsAToolError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := New(Options{URL: url, Token: "secret-token-value", Now: func() time.Time { return now }})
	res, err := c.Tools()[1].Run(context.Background(), tool.Call{Args: json.RawMessage(`{}`)})
	if err != nil || !res.IsError || !strings.Contains(res.Text, "did not answer") || strings.Contains(res.Text, "secret-token-value") {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestToolsAreTimedAndOnlyListIsReadOnly(t *testing.T) {
	c := New(Options{URL: "http://127.0.0.1:1", Token: token})
	for _, tl := range c.Tools() {
		if u, ok := tl.(interface{ Untimed() bool }); ok && u.Untimed() {
			t.Errorf("%s is untimed", tl.Spec().Name)
		}
		if want := tl.Spec().Name == ListName; tl.ReadOnly() != want {
			t.Errorf("%s ReadOnly = %v, want %v", tl.Spec().Name, tl.ReadOnly(), want)
		}
	}
}
