package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/vault"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func add(t testing.TB, s *store.Store, evs ...event.Event) {
	t.Helper()
	if err := s.AddEvents(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

// sink is a collector on real loopback HTTP: it records every request and
// answers with the status fail returns (200 when nil).
type sink struct {
	mu       sync.Mutex
	batches  [][]map[string]any
	auth     []string
	ctypes   []string
	fail     func(n int) int // request number (from 1) → status
	requests int
}

func (k *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests++
	k.auth = append(k.auth, r.Header.Get("Authorization"))
	k.ctypes = append(k.ctypes, r.Header.Get("Content-Type"))
	if k.fail != nil {
		if code := k.fail(k.requests); code != 0 && code != 200 {
			w.WriteHeader(code)
			return
		}
	}
	var batch []map[string]any
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			w.WriteHeader(400)
			return
		}
		batch = append(batch, rec)
	}
	k.batches = append(k.batches, batch)
}

func (k *sink) ids() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, b := range k.batches {
		for _, r := range b {
			out = append(out, r["event.id"].(string))
		}
	}
	return out
}

func newExporter(t testing.TB, s *store.Store, url string, mod func(*Options)) *Exporter {
	t.Helper()
	o := Options{URL: url, Token: "tel-token", AgentID: "agent-1", Outbox: s}
	if mod != nil {
		mod(&o)
	}
	x, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func recalls(n int) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.New("r1", "s1", event.Recall, map[string]any{"i": i})
		evs[i].Owner, evs[i].TaskID, evs[i].Turn = "u1", "t1", 3
	}
	return evs
}

func TestExportDeliversEveryEventInBatchesAndMarksOnlyOn2xx(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	k := &sink{fail: func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return 200
	}}
	srv := httptest.NewServer(k)
	defer srv.Close()
	x := newExporter(t, s, srv.URL, nil)
	add(t, s, recalls(450)...)

	for i := range 2 {
		if err := x.Flush(ctx); err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("flush %d against a failing collector: err %v", i, err)
		}
		if o, _ := s.TelemetryOutbox(ctx); o.Backlog != 450 || o.Exported != 0 {
			t.Fatalf("a non-2xx moved the mark: %+v", o)
		}
	}
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := k.ids()
	if len(ids) != 450 {
		t.Fatalf("collector got %d records, want 450", len(ids))
	}
	for i, id := range ids {
		if want := x.DaemonID() + ":" + strconv.Itoa(i+1); id != want {
			t.Fatalf("record %d has id %q, want %q", i, id, want)
		}
	}
	if len(k.batches) != 3 || len(k.batches[0]) != 200 || len(k.batches[2]) != 50 {
		t.Fatalf("batch sizes %d", len(k.batches))
	}
	for i := range k.auth {
		if k.auth[i] != "Bearer tel-token" || k.ctypes[i] != "application/x-ndjson" {
			t.Fatalf("request %d: auth %q, content type %q", i, k.auth[i], k.ctypes[i])
		}
	}
	rec := k.batches[0][0]
	for key, want := range map[string]any{"event.name": "recall", "user.id": "u1", "agent.id": "agent-1", "session.id": "s1",
		"run.id": "r1", "task.id": "t1", "turn": 3.0} {
		if rec[key] != want {
			t.Errorf("record %s = %v, want %v", key, rec[key], want)
		}
	}
	if _, ok := rec["event.time_unix_ms"].(float64); !ok {
		t.Errorf("no event.time_unix_ms: %v", rec)
	}
	o, _ := s.TelemetryOutbox(ctx)
	if o.Backlog != 0 || o.Exported != 450 {
		t.Fatalf("after delivery %+v", o)
	}
	st := x.Status(ctx)
	if st.Backlog != 0 || st.Exported != 450 || st.LastSuccess == "" {
		t.Fatalf("status %+v", st)
	}
}

// A restarted exporter over the same database keeps its daemon id and
// resumes after the mark: nothing acknowledged is sent again.
func TestExportResumesAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "delta.db")
	k := &sink{}
	srv := httptest.NewServer(k)
	defer srv.Close()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	x := newExporter(t, s, srv.URL, nil)
	add(t, s, recalls(5)...)
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	id := x.DaemonID()
	_ = s.Close()
	s = openStoreAt(t, path)
	add(t, s, recalls(3)...)
	x2 := newExporter(t, s, srv.URL, nil)
	if x2.DaemonID() != id {
		t.Fatalf("daemon id changed across a restart: %s → %s", id, x2.DaemonID())
	}
	if err := x2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := k.ids()
	if len(ids) != 8 || ids[7] != id+":8" {
		t.Fatalf("ids %v", ids)
	}
}

func openStoreAt(t testing.TB, path string) *store.Store {
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// With the collector down the outbox stops at the cap: exported rows go
// first, then the oldest unexported, and the drop is counted and reported.
func TestOutboxCapWithTheCollectorDown(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	up := true
	var mu sync.Mutex
	k := &sink{fail: func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if up {
			return 200
		}
		return http.StatusBadGateway
	}}
	srv := httptest.NewServer(k)
	defer srv.Close()
	x := newExporter(t, s, srv.URL, func(o *Options) { o.Cap = 100; o.Batch = 50 })
	add(t, s, recalls(60)...) // exported while the collector is up
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	up = false
	mu.Unlock()
	add(t, s, recalls(70)...) // 130 rows: 30 exported rows must go, nothing unexported
	if err := x.Flush(ctx); err == nil {
		t.Fatal("flush against a down collector succeeded")
	}
	if o, _ := s.TelemetryOutbox(ctx); o.Backlog != 70 || o.Dropped != 0 {
		t.Fatalf("exported rows were not deleted first: %+v", o)
	}
	add(t, s, recalls(80)...) // backlog 150 > cap 100: the oldest 50 unexported go
	_ = x.Flush(ctx)
	o, _ := s.TelemetryOutbox(ctx)
	if o.Backlog != 100 || o.Dropped != 50 {
		t.Fatalf("outbox %+v, want backlog 100 and 50 dropped", o)
	}
	all, _ := s.Events(ctx, store.EventFilter{})
	if len(all) != 100 || all[0].ID != 111 {
		t.Fatalf("%d rows left starting at %d, want 100 starting at 111", len(all), all[0].ID)
	}
	st := x.Status(ctx)
	if st.Backlog != 100 || st.Dropped != 50 || st.Cap != 100 || !strings.Contains(st.LastError, "") || st.OldestUnexportedAgeS < 0 {
		t.Fatalf("status %+v", st)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := k.ids()
	if len(ids) != 160 || ids[60] != fmt.Sprintf("%s:111", x.DaemonID()) {
		t.Fatalf("after recovery %d records, the first resumed %v", len(ids), ids[60:61])
	}
}

// The loop runs on its own, reports its last error, and recovers.
func TestLoopBacksOffAndRecovers(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var mu sync.Mutex
	down := true
	k := &sink{fail: func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return http.StatusInternalServerError
		}
		return 200
	}}
	srv := httptest.NewServer(k)
	defer srv.Close()
	x := newExporter(t, s, srv.URL, func(o *Options) { o.Interval = 5 * time.Millisecond; o.MaxBackoff = 20 * time.Millisecond })
	add(t, s, recalls(3)...)
	x.Start(ctx)
	defer x.Close(ctx)
	waitFor(t, func() bool {
		st := x.Status(ctx)
		return st.ConsecutiveFailures >= 2 && strings.Contains(st.LastError, "500")
	})
	mu.Lock()
	down = false
	mu.Unlock()
	waitFor(t, func() bool {
		st := x.Status(ctx)
		return st.Backlog == 0 && st.ConsecutiveFailures == 0 && st.LastSuccess != ""
	})
	if n := len(k.ids()); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the deadline")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBackoffGrowsWithJitterWithinBounds(t *testing.T) {
	base, ceiling := 2*time.Second, time.Minute
	for _, tc := range []struct {
		n      int
		u      float64
		lo, hi time.Duration
	}{
		{1, 0, base, base},
		{1, 0.999, base, 4 * time.Second},
		{3, 0.5, base, 16 * time.Second},
		{10, 0.999, 59 * time.Second, ceiling},
		{100, 0.999, 59 * time.Second, ceiling},
	} {
		d := backoff(base, ceiling, tc.n, tc.u)
		if d < tc.lo || d > tc.hi {
			t.Errorf("backoff(n=%d, u=%v) = %v, want in [%v, %v]", tc.n, tc.u, d, tc.lo, tc.hi)
		}
	}
	if backoff(base, ceiling, 3, 0.1) == backoff(base, ceiling, 3, 0.9) {
		t.Error("no jitter")
	}
}

// TestAllowlist: what leaves the box for each payload-bearing event, with
// and without consent; a credential and a vault value never leave.
func TestAllowlist(t *testing.T) {
	const secret = "vault-value-5f2a9c"
	const planted = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345"
	red := vault.NewRedactor()
	red.Register("PLANTED", secret)
	evs := []event.Event{
		event.New("r", "s", event.ModelCall, map[string]any{
			event.KeyModel: "m/primary", event.KeyProvider: "p1", event.KeyFinishReasons: []string{"tool_calls"},
			event.KeyUsage:   map[string]int64{"input_tokens": 1200, "output_tokens": 300, "cache_read_tokens": 900},
			event.KeyCostUSD: 0.004, event.KeyLatencyMS: 1800, event.KeyEffort: "medium", event.KeyFallback: true,
			event.KeyToolCalls: 2, event.KeyCacheHitPct: 75.0,
		}),
		event.New("r", "s", event.ToolCall, map[string]any{event.KeyCallID: "c1", event.KeyName: "read_file",
			event.KeyArguments: json.RawMessage(`{"path":"notes.txt","note":"ARGUMENT-TEXT ` + planted + ` ` + secret + `"}`)}),
		event.New("r", "s", event.ToolResult, map[string]any{event.KeyCallID: "c1", event.KeyName: "read_file",
			event.KeyIsError: true, event.KeyChars: 40, event.KeyPreview: "RESULT-TEXT " + secret}),
		event.New("r", "s", event.Error, map[string]any{event.KeyErrorType: "tool", event.KeyErrorMessage: "ERROR-TEXT Bearer abcdefghijklmnop123 " + strings.Repeat("x", 400)}),
		event.New("r", "s", event.RunFinished, map[string]any{event.KeyStatus: "failed", event.KeyError: "RUN-ERROR-TEXT"}),
		event.New("r", "s", event.Recall, map[string]any{"query": "token=" + "ghp_abcdefghijklmnopqrstuvwxyz0123"}),
	}
	type want struct {
		present, absent []string
	}
	for _, tc := range []struct {
		payloads bool
		want     map[string]want
	}{
		{false, map[string]want{
			event.ModelCall: {present: []string{"gen_ai.request.model", "gen_ai.provider", "gen_ai.response.finish_reasons",
				"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cached_tokens", "gen_ai.usage.cost_usd",
				"latency_ms", "gen_ai.request.effort", "fallback", "cache_hit_pct"}, absent: []string{"tool_calls"}},
			event.ToolCall:    {present: []string{"tool.name", "tool.call_id"}, absent: []string{"tool.arguments"}},
			event.ToolResult:  {present: []string{"tool.name", "tool.call_id", "is_error"}, absent: []string{"tool.result"}},
			event.Error:       {present: []string{"error.type", "error.class"}, absent: []string{"error.message"}},
			event.RunFinished: {present: []string{"status"}, absent: []string{"error"}},
		}},
		{true, map[string]want{
			event.ModelCall:   {present: []string{"gen_ai.request.model", "tool_calls"}},
			event.ToolCall:    {present: []string{"tool.name", "tool.arguments"}},
			event.ToolResult:  {present: []string{"tool.result", "is_error"}},
			event.Error:       {present: []string{"error.type", "error.message"}},
			event.RunFinished: {present: []string{"status", "error"}},
		}},
	} {
		t.Run(fmt.Sprintf("payloads=%v", tc.payloads), func(t *testing.T) {
			s := openStore(t)
			k := &sink{}
			srv := httptest.NewServer(k)
			defer srv.Close()
			x := newExporter(t, s, srv.URL, func(o *Options) { o.Payloads = tc.payloads; o.Redact = red.Redact })
			add(t, s, evs...)
			if err := x.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(k.batches)
			wire := string(raw)
			for _, never := range []string{secret, planted, "abcdefghijklmnop123", "ghp_abcdefghij"} {
				if strings.Contains(wire, never) {
					t.Errorf("%q left the box: %s", never, wire)
				}
			}
			for _, text := range []string{"ARGUMENT-TEXT", "RESULT-TEXT", "ERROR-TEXT", "RUN-ERROR-TEXT"} {
				if strings.Contains(wire, text) != tc.payloads {
					t.Errorf("%s on the wire = %v, want %v", text, !tc.payloads, tc.payloads)
				}
			}
			byName := map[string]map[string]any{}
			for _, r := range k.batches[0] {
				byName[r["event.name"].(string)] = r["attributes"].(map[string]any)
			}
			for name, w := range tc.want {
				a := byName[name]
				for _, key := range w.present {
					if _, ok := a[key]; !ok {
						t.Errorf("%s: %s missing: %v", name, key, a)
					}
				}
				for _, key := range w.absent {
					if _, ok := a[key]; ok {
						t.Errorf("%s: %s exported without consent: %v", name, key, a)
					}
				}
			}
			if tc.payloads {
				if msg := byName[event.Error]["error.message"].(string); len([]rune(msg)) > errorMessageMax {
					t.Errorf("error.message is %d runes, want at most %d", len([]rune(msg)), errorMessageMax)
				}
			}
			if m := byName[event.ModelCall]; m["gen_ai.usage.input_tokens"] != 1200.0 || m["gen_ai.usage.cost_usd"] != 0.004 {
				t.Errorf("model.call attributes %v", m)
			}
		})
	}
}
