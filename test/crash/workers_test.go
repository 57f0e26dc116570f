package crash

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/collector/pgtest"
	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/daemontest"

	_ "github.com/jackc/pgx/v5/stdlib" // the test reads the workers' database directly
)

// workerTTL is the session lease TTL of the workers under test (the
// smallest the configuration allows), so a takeover comes quickly.
const workerTTL = 5 * time.Second

// cluster is one throwaway PostgreSQL database and one workspace shared by
// worker processes.
type cluster struct {
	t    testing.TB
	url  string
	ws   string
	fake *modeltest.Server
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	return newClusterWith(t, modeltest.DemoScript())
}

// newClusterWith is newCluster with the fake model answering by script.
func newClusterWith(t testing.TB, script modeltest.Script) *cluster {
	t.Helper()
	return newClusterOn(t, pgtest.Start, script)
}

// newClusterOn is newClusterWith on a server that start starts.
func newClusterOn(t testing.TB, start func() (*pgtest.Cluster, error), script modeltest.Script) *cluster {
	t.Helper()
	pg, err := start()
	if errors.Is(err, pgtest.ErrNoPostgres) {
		t.Skip("PostgreSQL server binaries not installed:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	url, err := pg.NewDatabase(context.Background(), "workers")
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	daemontest.Init(t, plainBin, ws)
	fake, err := modeltest.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return &cluster{t: t, url: url, ws: ws, fake: fake}
}

// worker is a daemon process on the cluster's database, in its own
// directory (log, HOME) and on its own port.
func (c *cluster) worker(bin, ws string, extra ...string) *daemon {
	t := c.t
	t.Helper()
	dir := t.TempDir()
	port := daemontest.FreePort(t)
	d := &daemon{t: t, bin: bin, dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	d.env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		fmt.Sprintf("PORT=%d", port),
		"DELTA_DB=" + c.url,
		"DELTA_WORKSPACE=" + ws,
		"MODEL_BASE_URL=" + c.fake.URL(),
		"MODEL_API_KEY=fake-key",
		"DELTA_MODEL_PRIMARY=scripted/demo",
		"DELTA_CONTROL_TOKEN=" + token,
		fmt.Sprintf("DELTA_LEASE_TTL_MS=%d", workerTTL.Milliseconds()),
		"DELTA_MAX_CONCURRENCY=8",
	}, extra...)
	t.Cleanup(d.stop)
	return d
}

func (c *cluster) openDB() *sql.DB {
	c.t.Helper()
	db, err := sql.Open("pgx", c.url)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { db.Close() })
	return db
}

// submitAfter posts a task continuing prev's session ("" = a new session)
// under an idempotency key that holds for a finished task too, as a client
// that retries does: a submission whose answer was lost (the worker died
// after committing it) and is sent again is the same task.
func (d *daemon) submitAfter(client *http.Client, input, prev, key string) (id string, ok bool) {
	body := fmt.Sprintf(`{"input":%q,"idempotency_key":%q,"idempotency_terminal":true}`, input, key)
	if prev != "" {
		body = fmt.Sprintf(`{"input":%q,"previous_response_id":%q,"idempotency_key":%q,"idempotency_terminal":true}`, input, prev, key)
	}
	return d.post(client, body)
}

// task reads GET /v1/tasks/{id}.
func (d *daemon) task(client *http.Client, id string) (status, session string, err error) {
	req, _ := http.NewRequest("GET", d.url+"/v1/tasks/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("GET %s: %d %s", id, resp.StatusCode, b)
	}
	var v struct {
		Status    string `json:"status"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", "", err
	}
	return v.Status, v.SessionID, nil
}

// waitTerminalPG polls the shared database until every run is terminal.
func waitTerminalPG(t testing.TB, db *sql.DB, timeout time.Duration, logs func() string) map[string]*runFacts {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var open int
		if err := db.QueryRow("SELECT count(*) FROM runs WHERE status NOT IN ('done','failed','cancelled')").Scan(&open); err != nil {
			t.Fatalf("count open runs: %v", err)
		}
		if open == 0 {
			return facts(t, db)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still not terminal after %s; logs:\n%s", open, timeout, logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkersSharePostgres is three workers on one PostgreSQL and one
// workspace: 60 write_file tasks over 20 sessions, each session's tasks
// sent through different workers, while the third worker dies mid-tool-call
// (the crashtest binary exits at the mid-tool point like kill -9: no
// deferred work, leases left to expire). Afterwards: no acknowledged task
// lost, no write_file executed twice, every run done with exactly one
// run.finished, each session's runs one after another in acceptance order
// (read from the event ids, which commit in order), and GET
// /v1/tasks/{id} answering the same from every worker — the restarted
// third one included. A worker with another workspace is refused.
func TestWorkersSharePostgres(t *testing.T) {
	const sessions, perSession = 20, 3
	c := newCluster(t)
	workers := []*daemon{
		c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=w1"),
		c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=w2"),
		c.worker(crashBin, c.ws, "DELTA_LEASE_HOLDER=w3"),
	}
	workers[0].start() // the first boot migrates and records the workspace
	workers[1].start()
	workers[2].start("DELTA_CRASH_AT=" + crashpoint.MidTool)

	var mu sync.Mutex
	var acked []string
	chains := make([][]string, sessions) // each session's acknowledged ids in order
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			prev := ""
			for k := range perSession {
				input := fmt.Sprintf("Write s%d-t%d.md about the otter survey.", s, k)
				// Round robin over the workers; a refused or dropped
				// submission (the dying worker) is not acknowledged and
				// goes to the next worker under the same key.
				var id string
				for try := 0; try < 6; try++ {
					var ok bool
					if id, ok = workers[(s+k+try)%len(workers)].submitAfter(client, input, prev, fmt.Sprintf("s%d-t%d", s, k)); ok {
						break
					}
					id = ""
				}
				if id == "" {
					t.Errorf("session %d task %d: no worker acknowledged it", s, k)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				chains[s] = append(chains[s], id)
				mu.Unlock()
				prev = id
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if code := workers[2].waitExit(60 * time.Second); code != 137 {
		t.Fatalf("worker 3 exited %d, want 137 from the mid-tool crash point; log:\n%s", code, workers[2].logText())
	}
	died := time.Now()
	db := c.openDB()
	logs := func() string {
		var b strings.Builder
		for i, w := range workers {
			fmt.Fprintf(&b, "--- worker %d\n%s\n", i+1, tail(w.logText(), 2000))
		}
		return b.String()
	}
	// Takeover: the dead worker's in-flight run resumes on another worker
	// once its lease expired (a figure, logged, not asserted).
	for {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM events WHERE name = 'run.resumed'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Logf("takeover: first run.resumed %s after the worker died (lease TTL %s)", time.Since(died).Round(10*time.Millisecond), workerTTL)
			break
		}
		if time.Since(died) > 60*time.Second {
			t.Fatalf("no run resumed within 60s of the worker's death; logs:\n%s", logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	runs := waitTerminalPG(t, db, 90*time.Second, logs)

	var interrupted int
	for _, id := range acked {
		if runs[id] == nil {
			t.Fatalf("acknowledged task %s lost", id)
		}
	}
	for id, f := range runs {
		if f.status != "done" || f.finished != 1 {
			t.Errorf("run %s: status %s with %d run.finished, want done with exactly 1", id, f.status, f.finished)
		}
		if f.toolResults > 1 || f.journal > 1 {
			t.Errorf("run %s: %d tool.result events, %d journal rows: write_file ran more than once", id, f.toolResults, f.journal)
		}
		interrupted += f.interrupted
	}
	if interrupted == 0 {
		t.Errorf("no write_file call was settled as interrupted: the worker did not die mid-tool-call with a run of its own")
	}

	// Per-session order: every event of a session's run comes after the
	// run.finished of the session's previous run, and runs start in
	// acceptance order.
	type span struct{ first, finished int64 }
	spans := map[string]*span{}
	each(t, db, "SELECT run_id, name, id FROM events WHERE run_id <> '' ORDER BY id", func(rows *sql.Rows) error {
		var run, name string
		var id int64
		if err := rows.Scan(&run, &name, &id); err != nil {
			return err
		}
		if name == "run.queued" {
			return nil // written at acceptance, before any run executes
		}
		sp := spans[run]
		if sp == nil {
			sp = &span{first: id}
			spans[run] = sp
		}
		if name == "run.finished" {
			sp.finished = id
		}
		return nil
	})
	bySession := map[string][]string{}
	each(t, db, "SELECT session_id, id FROM runs ORDER BY seq", func(rows *sql.Rows) error {
		var sess, id string
		if err := rows.Scan(&sess, &id); err != nil {
			return err
		}
		bySession[sess] = append(bySession[sess], id)
		return nil
	})
	if len(bySession) != sessions {
		t.Errorf("%d sessions in the database, want %d", len(bySession), sessions)
	}
	for sess, ids := range bySession {
		for i := 1; i < len(ids); i++ {
			a, b := spans[ids[i-1]], spans[ids[i]]
			if a == nil || b == nil || b.first <= a.finished {
				t.Errorf("session %s: run %s began (event %v) before run %s finished (event %v)", sess, ids[i], b, ids[i-1], a)
			}
		}
	}

	// Any worker answers for any task, the restarted one included.
	workers[2].bin = plainBin
	workers[2].start()
	client := &http.Client{Timeout: 10 * time.Second}
	for s, chain := range chains {
		for _, id := range chain {
			var seen []string
			for i, w := range workers {
				st, sess, err := w.task(client, id)
				if err != nil {
					t.Fatalf("worker %d: %v", i+1, err)
				}
				seen = append(seen, st+"/"+sess)
			}
			sort.Strings(seen)
			if seen[0] != seen[len(seen)-1] || !strings.HasPrefix(seen[0], "done/") {
				t.Fatalf("session %d task %s: workers answer %v, want the same done status", s, id, seen)
			}
		}
	}
	t.Logf("%d tasks acknowledged over %d sessions by 3 workers, %d runs, %d interrupted write_file calls settled", len(acked), sessions, len(runs), interrupted)

	// A worker whose workspace is not the recorded one is refused.
	other := filepath.Join(t.TempDir(), "ws")
	daemontest.Init(t, plainBin, other)
	stray := c.worker(plainBin, other)
	log := stray.startExpectingExit()
	if !strings.Contains(log, c.ws) || !strings.Contains(log, other) {
		t.Fatalf("refusal does not name both workspaces; log:\n%s", log)
	}
}
