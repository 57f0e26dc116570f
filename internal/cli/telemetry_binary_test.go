package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/test/daemontest"
)

// proc is a long-running delta process (a daemon or the collector).
type proc struct {
	cmd    *exec.Cmd
	stderr *daemontest.Output
	exited chan error
}

func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{stderr: &daemontest.Output{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(deltaBin, args...)
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited; p.exited <- nil })
	return p
}

// stop sends sig and waits for the exit.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(time.Minute):
		t.Fatalf("process did not exit after %v; stderr:\n%s", sig, p.stderr.String())
	}
}

func testPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// poll calls cond until it holds or the deadline passes.
func poll(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func up(port int) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// telemetryStatus reads /v1/status's telemetry object.
func telemetryStatus(port int) map[string]any {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/status", port))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st struct {
		Telemetry map[string]any `json:"telemetry"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.Telemetry
}

// holdProxy forwards exporter posts to the collector. Armed, it forwards
// the next request (the collector lands its rows), reports the ids that
// batch carried, and then never answers, so the daemon dies before it can
// mark the batch exported.
type holdProxy struct {
	target string
	mu     sync.Mutex
	armed  bool
	held   chan []string
	seen   map[string]int // event id → times forwarded
}

func (p *holdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ids []string
	for _, l := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var rec struct {
			ID string `json:"event.id"`
		}
		if json.Unmarshal(l, &rec) == nil {
			ids = append(ids, rec.ID)
		}
	}
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, p.target, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.mu.Lock()
	hold := p.armed && resp.StatusCode == 200 && len(ids) > 0
	if resp.StatusCode == 200 {
		for _, id := range ids {
			p.seen[id]++
		}
	}
	if hold {
		p.armed = false
	}
	p.mu.Unlock()
	if hold {
		p.held <- ids
		<-r.Context().Done() // the daemon is killed while waiting for this answer
		return
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
}

// TestTelemetryEveryEventExactlyOnce: three daemons export to one collector
// on a real PostgreSQL; one daemon is killed with SIGKILL while the
// collector holds its batch and is restarted, and the collector is
// restarted once mid-run. Every durable event of every daemon ends up in
// agent_events exactly once.
func TestTelemetryEveryEventExactlyOnce(t *testing.T) {
	requireDaemon(t)
	ctx := context.Background()
	dbURL := postgresDatabase(t, "telemetry")
	fake := modeltest.Serve(t, modeltest.DemoScript())

	const token = "collector-secret-token"
	colPort := testPort(t)
	colEnv := cleanEnv("DELTA_COLLECTOR_TOKEN=" + token)
	startCollector := func() *proc {
		c := startProc(t, colEnv, "collector", "--database", dbURL, "--listen", fmt.Sprintf("127.0.0.1:%d", colPort))
		poll(t, "collector up", time.Minute, func() bool { return up(colPort) })
		return c
	}
	col := startCollector()
	ingest := fmt.Sprintf("http://127.0.0.1:%d/telemetry/ingest", colPort)

	proxy := &holdProxy{target: ingest, held: make(chan []string, 1), seen: map[string]int{}}
	proxySrv := httptest.NewServer(proxy)
	t.Cleanup(proxySrv.Close)

	type daemon struct {
		port int
		db   string
		env  []string
		p    *proc
	}
	daemons := make([]*daemon, 3)
	for i := range daemons {
		bundle := filepath.Join(t.TempDir(), "agent")
		if r := runBin(t, cleanEnv(), "init", bundle); r.code != 0 {
			t.Fatalf("init: %s", r.stderr)
		}
		target := ingest
		if i == 0 {
			target = proxySrv.URL + "/telemetry/ingest"
		}
		d := &daemon{port: testPort(t), db: filepath.Join(t.TempDir(), "delta.db")}
		d.env = cleanEnv("PORT="+strconv.Itoa(d.port), "DELTA_DB="+d.db, "DELTA_WORKSPACE="+bundle,
			"MODEL_BASE_URL="+fake.URL()+"/", "MODEL_API_KEY=test-key", "DELTA_MODEL_PRIMARY=scripted",
			"DELTA_AGENT_ID=agent-"+strconv.Itoa(i), "DELTA_LEASE_TTL_MS=5000",
			"TELEMETRY_URL="+target, "TELEMETRY_TOKEN="+token)
		d.p = startProc(t, d.env)
		daemons[i] = d
	}
	for _, d := range daemons {
		poll(t, "daemon up", time.Minute, func() bool { return up(d.port) })
	}
	send := func(d *daemon, text string) {
		t.Helper()
		r := runBin(t, cleanEnv(), "send", "--json", "--port", strconv.Itoa(d.port), text)
		if r.code != 0 {
			t.Fatalf("send: exit %d %s\ndaemon:\n%s", r.code, r.stderr, d.p.stderr.String())
		}
	}
	round := func(n int) {
		for _, d := range daemons {
			send(d, fmt.Sprintf("Write notes%d.md about the plan.", n))
		}
	}
	round(1)

	// Daemon 0: the collector lands a batch, the daemon is killed before
	// the answer reaches it, and restarts over the same database.
	proxy.mu.Lock()
	proxy.armed = true
	proxy.mu.Unlock()
	send(daemons[0], "Write held.md about the plan.")
	var held []string
	select {
	case held = <-proxy.held:
	case <-time.After(time.Minute):
		t.Fatal("daemon 0 posted no batch")
	}
	daemons[0].p.stop(t, syscall.SIGKILL)
	daemons[0].p = startProc(t, daemons[0].env)
	poll(t, "daemon 0 back", time.Minute, func() bool { return up(daemons[0].port) })
	round(2)

	// The collector goes away mid-run and comes back.
	col.stop(t, syscall.SIGTERM)
	round(3)
	for i, d := range daemons[1:] {
		poll(t, fmt.Sprintf("daemon %d sees the collector down", i+1), time.Minute, func() bool {
			st := telemetryStatus(d.port)
			return st != nil && st["last_error"] != nil
		})
	}
	col = startCollector()
	round(4)

	for i, d := range daemons {
		poll(t, fmt.Sprintf("daemon %d backlog drained", i), 3*time.Minute, func() bool {
			st := telemetryStatus(d.port)
			return st != nil && st["backlog"] == 0.0 && st["last_success"] != nil
		})
	}
	proxy.mu.Lock()
	for _, id := range held {
		if proxy.seen[id] < 2 {
			t.Errorf("%s from the held batch was not sent again after the kill (seen %d)", id, proxy.seen[id])
		}
	}
	proxy.mu.Unlock()
	for _, d := range daemons {
		d.p.stop(t, syscall.SIGTERM)
	}
	col.stop(t, syscall.SIGTERM)

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	total := 0
	for i, d := range daemons {
		st, err := store.Open(ctx, d.db)
		if err != nil {
			t.Fatal(err)
		}
		o, err := st.TelemetryOutbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for since := int64(0); ; {
			evs, err := st.Events(ctx, store.EventFilter{Since: since})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				want[fmt.Sprintf("%s:%d", o.DaemonID, e.ID)] = true
			}
			since = evs[len(evs)-1].ID
		}
		_ = st.Close()
		rows, err := conn.Query(ctx, "SELECT event_id, agent_id FROM agent_events WHERE event_id LIKE $1", o.DaemonID+":%")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var id, agent string
			if err := rows.Scan(&id, &agent); err != nil {
				t.Fatal(err)
			}
			got[id]++
			if agent != "agent-"+strconv.Itoa(i) {
				t.Errorf("%s landed with agent %q", id, agent)
			}
		}
		rows.Close()
		for id := range want {
			if got[id] != 1 {
				t.Errorf("daemon %d: %s is in agent_events %d times", i, id, got[id])
			}
		}
		for id := range got {
			if !want[id] {
				t.Errorf("daemon %d: agent_events has %s, which its events table does not", i, id)
			}
		}
		if len(want) < 20 {
			t.Errorf("daemon %d has only %d events: the runs did not happen", i, len(want))
		}
		total += len(want)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM agent_events").Scan(&n); err != nil || n != total {
		t.Fatalf("agent_events holds %d rows, the daemons %d (%v)", n, total, err)
	}
	t.Logf("%d events from 3 daemons, each exactly once; %d re-sent after the kill", total, len(held))
}

func TestCollectorBinaryRefusals(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{cleanEnv(), []string{"collector"}, 2, "--database is required"},
		{cleanEnv(), []string{"collector", "--database", "postgres://127.0.0.1:1/x", "--listen", "0.0.0.0:0"}, 1, "set DELTA_COLLECTOR_TOKEN"},
		{cleanEnv("DELTA_COLLECTOR_TOKEN=t"), []string{"collector", "--database", "postgres://127.0.0.1:1/x", "--listen", "127.0.0.1:0"}, 1, "collector: "},
		{cleanEnv(), []string{"collector", "-h"}, 0, ""},
	} {
		r := runBin(t, tc.env, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("delta %v: exit %d stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if r := runBin(t, cleanEnv("TELEMETRY_URL=http://collector.example/telemetry/ingest"), "serve"); r.code == 0 || !strings.Contains(r.stderr, "TELEMETRY_ALLOW_INSECURE") {
		t.Errorf("a plaintext non-loopback TELEMETRY_URL booted: exit %d %s", r.code, r.stderr)
	}
}
