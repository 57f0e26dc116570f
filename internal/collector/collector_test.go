package collector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/deltaharness/delta/internal/collector"
	"github.com/deltaharness/delta/internal/collector/pgtest"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/telemetry"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) {
	var err error
	cluster, err = pgtest.Start()
	if err != nil && !errors.Is(err, pgtest.ErrNoPostgres) {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		os.Exit(1)
	}
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	os.Exit(code)
}

var dbSeq int

// start opens a collector over a fresh database behind a loopback server.
func start(t *testing.T, token string) (*collector.Collector, *httptest.Server, *pgx.Conn) {
	t.Helper()
	if cluster == nil {
		t.Skip(pgtest.ErrNoPostgres)
	}
	ctx := context.Background()
	dbSeq++
	url, err := cluster.NewDatabase(ctx, fmt.Sprintf("c%d", dbSeq))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collector.Open(ctx, url, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return c, srv, conn
}

func post(t *testing.T, srv *httptest.Server, token string, body []byte) (int, collector.Counts) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+collector.IngestPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c collector.Counts
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &c)
	return resp.StatusCode, c
}

func rec(id, name, agent string, attrs string) string {
	return fmt.Sprintf(`{"event.id":%q,"event.name":%q,"event.time_unix_ms":1780000000000,"agent.id":%q,"run.id":"r1","turn":2,"attributes":%s}`, id, name, agent, attrs)
}

func count(t *testing.T, conn *pgx.Conn, where string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM agent_events "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIngestDedupesAndSkipsMalformedLines(t *testing.T) {
	c, srv, conn := start(t, "col-token")
	body := strings.Join([]string{
		rec("d1:1", "run.started", "a", `{}`),
		`{not json`,
		rec("d1:2", "model.call", "a", `{"gen_ai.request.model":"m","note":"nul \u0000 here"}`),
		`{"event.name":"no id","event.time_unix_ms":1}`,
		rec("d1:2", "model.call", "a", `{}`), // twice in one batch
		rec("d1:3", "x", "a", `[1,2]`),       // attributes not an object
		"",
	}, "\n")
	code, got := post(t, srv, "col-token", []byte(body))
	if code != 200 || got != (collector.Counts{Accepted: 2, Duplicates: 1, Malformed: 3}) {
		t.Fatalf("first post: %d %+v", code, got)
	}
	// The same batch again: nothing new lands.
	code, got = post(t, srv, "col-token", []byte(body))
	if code != 200 || got.Accepted != 0 || got.Duplicates != 3 {
		t.Fatalf("re-sent batch: %d %+v", code, got)
	}
	if n := count(t, conn, ""); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	var model string
	var turn int
	if err := conn.QueryRow(context.Background(), "SELECT attributes->>'gen_ai.request.model', turn FROM agent_events WHERE event_id = 'd1:2'").Scan(&model, &turn); err != nil || model != "m" || turn != 2 {
		t.Fatalf("row d1:2: %q %d %v", model, turn, err)
	}
	if c.Counts().Malformed != 6 {
		t.Fatalf("counts %+v", c.Counts())
	}
}

func TestIngestAuthAndBodyCap(t *testing.T) {
	_, srv, conn := start(t, "col-token")
	line := []byte(rec("d:1", "e", "a", `{}`) + "\n")
	for _, tok := range []string{"", "wrong"} {
		if code, _ := post(t, srv, tok, line); code != http.StatusUnauthorized {
			t.Fatalf("token %q: %d, want 401", tok, code)
		}
	}
	big := bytes.Repeat(line, collector.MaxBody/len(line)+1)
	if code, _ := post(t, srv, "col-token", big); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("over 8 MB: %d, want 413", code)
	}
	if n := count(t, conn, ""); n != 0 {
		t.Fatalf("%d rows landed from refused requests", n)
	}
	under := bytes.Repeat(line, (collector.MaxBody-1)/len(line))
	if code, got := post(t, srv, "col-token", under); code != 200 || got.Accepted != 1 {
		t.Fatalf("just under the cap: %d %+v", code, got)
	}
}

// The schema is created when absent and left alone when present, so a
// restarted collector keeps its rows.
func TestSchemaSurvivesARestart(t *testing.T) {
	_, srv, conn := start(t, "")
	if code, _ := post(t, srv, "", []byte(rec("d:1", "e", "a", `{}`))); code != 200 {
		t.Fatal(code)
	}
	c2, err := collector.Open(context.Background(), conn.Config().ConnString(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if n := count(t, conn, ""); n != 1 {
		t.Fatalf("%d rows after reopening", n)
	}
}

// Every dashboard query runs and answers from the attributes the exporter
// sends by default; the README prints each one.
func TestDashboards(t *testing.T) {
	_, srv, conn := start(t, "")
	lines := []string{
		rec("d:1", "model.call", "a1", `{"gen_ai.request.model":"m1","gen_ai.usage.cost_usd":0.25,"latency_ms":100}`),
		rec("d:2", "model.call", "a1", `{"gen_ai.request.model":"m1","gen_ai.usage.cost_usd":0.5,"latency_ms":300,"fallback":true}`),
		rec("d:3", "model.call", "a2", `{"gen_ai.request.model":"m2","gen_ai.usage.cost_usd":1,"latency_ms":50}`),
		rec("d:4", "tool.result", "a1", `{"tool.name":"read_file","is_error":true}`),
		rec("d:5", "tool.result", "a1", `{"tool.name":"read_file","is_error":false}`),
	}
	if code, _ := post(t, srv, "", []byte(strings.Join(lines, "\n"))); code != 200 {
		t.Fatal(code)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a1|2026-05-28|2|0.75\na2|2026-05-28|1|1",
		"a1|2|0.5\na2|1|0", "m1|2|290\nm2|1|50", "read_file|2|0.5"}
	for i, d := range collector.Dashboards {
		if !strings.Contains(string(readme), d.SQL) {
			t.Errorf("README.md does not print the %q query", d.Title)
		}
		rows, err := conn.Query(context.Background(), d.SQL)
		if err != nil {
			t.Fatalf("%s: %v", d.Title, err)
		}
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var cells []string
			for _, v := range vals {
				cells = append(cells, cell(v))
			}
			out = append(out, strings.Join(cells, "|"))
		}
		rows.Close()
		if got := strings.Join(out, "\n"); got != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", d.Title, got, want[i])
		}
	}
}

func cell(v any) string {
	switch x := v.(type) {
	case pgtype.Numeric:
		f, _ := x.Float64Value()
		return fmt.Sprint(f.Float64)
	case time.Time:
		return x.UTC().Format("2006-01-02")
	}
	return fmt.Sprint(v)
}

// BenchmarkExportIntoCollector measures the exporter draining a backlog
// of 20,000 stored events into this collector on PostgreSQL, over loopback
// HTTP in batches of 200: shaping, posting, landing and marking.
func BenchmarkExportIntoCollector(b *testing.B) {
	if cluster == nil {
		b.Skip(pgtest.ErrNoPostgres)
	}
	ctx := context.Background()
	const n = 20_000
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dbSeq++
		url, err := cluster.NewDatabase(ctx, fmt.Sprintf("bench%d", dbSeq))
		if err != nil {
			b.Fatal(err)
		}
		c, err := collector.Open(ctx, url, "tok", nil)
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(c.Handler())
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "delta.db"))
		if err != nil {
			b.Fatal(err)
		}
		evs := make([]event.Event, 0, 1000)
		for j := 0; j < n; j++ {
			evs = append(evs, event.New("run_1", "sess_1", event.ModelCall, map[string]any{
				event.KeyModel: "m", event.KeyProvider: "p", event.KeyUsage: map[string]int64{"input_tokens": 1000, "output_tokens": 100},
				event.KeyCostUSD: 0.001, event.KeyLatencyMS: 900, event.KeyFinishReasons: []string{"stop"}}))
			if len(evs) == cap(evs) {
				if err := st.AddEvents(ctx, evs); err != nil {
					b.Fatal(err)
				}
				evs = evs[:0]
			}
		}
		x, err := telemetry.New(ctx, telemetry.Options{URL: srv.URL + collector.IngestPath, Token: "tok", Outbox: st, AgentID: "a"})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := x.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if got := c.Counts().Accepted; got != n {
			b.Fatalf("collector landed %d of %d", got, n)
		}
		srv.Close()
		c.Close()
		_ = st.Close()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "events/s")
}
