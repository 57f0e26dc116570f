// Package crash runs the real delta binary as a child process and breaks it:
// at every named crash point (a binary built with -tags crashtest) and with
// SIGKILL at random moments (the ordinary binary). After each restart it
// reads the SQLite file directly and checks the durability promise: an
// acknowledged run is never lost, a write_file is never executed twice, and
// every run ends terminal with exactly one run.finished. It also checks the
// single-writer lease at the store level.
package crash

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/daemontest"

	_ "modernc.org/sqlite" // the test reads the daemon's database directly
)

var (
	plainBin string // the shipped binary
	crashBin string // built with -tags crashtest
)

func TestMain(m *testing.M) {
	os.Exit(daemontest.Main(m, "delta-crash-bin",
		daemontest.Binary{Path: &plainBin, Name: "delta"},
		daemontest.Binary{Path: &crashBin, Name: "delta-crashtest", Tags: []string{"crashtest"}}))
}

// daemon is one database and workspace, served by successive processes.
type daemon struct {
	t    testing.TB
	bin  string
	dir  string
	url  string
	env  []string
	proc *daemontest.Process // the running process, nil between processes
}

const token = "crash-control-token"

func startFake(t testing.TB) *modeltest.Server {
	fake, err := modeltest.Start(modeltest.DemoScript())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return fake
}

func newDaemon(t testing.TB, bin string, fake *modeltest.Server, extra ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	daemontest.Init(t, plainBin, filepath.Join(dir, "ws"))
	port := daemontest.FreePort(t)
	d := &daemon{t: t, bin: bin, dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	d.env = append(daemontest.Env(dir, port, fake.URL(), token), "DELTA_LEASE_HOLDER=crash-test")
	d.env = append(d.env, extra...)
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) dbPath() string { return daemontest.DBPath(d.dir) }

func (d *daemon) logPath() string { return filepath.Join(d.dir, "daemon.log") }

// start launches a process with the extra environment and waits until it
// answers /healthz.
func (d *daemon) start(extra ...string) {
	d.t.Helper()
	log := daemontest.OpenLog(d.t, d.logPath(), false)
	d.proc = daemontest.Start(d.t, log, append(append([]string{}, d.env...), extra...), d.bin, "serve")
	d.proc.WaitHealthy(d.t, d.url, 30*time.Second, d.logText)
}

// startExpectingExit launches a process that must exit by itself (a
// refused start) and returns its log.
func (d *daemon) startExpectingExit() string {
	d.t.Helper()
	d.proc = daemontest.Start(d.t, daemontest.OpenLog(d.t, d.logPath(), true), d.env, d.bin, "serve")
	if code := d.waitExit(20 * time.Second); code == 0 {
		d.t.Fatalf("daemon exited 0, want a refusal")
	}
	return d.logText()
}

func (d *daemon) logText() string {
	b, _ := os.ReadFile(d.logPath())
	return string(b)
}

// waitExit waits for the process to end by itself and returns its exit code.
func (d *daemon) waitExit(timeout time.Duration) int {
	d.t.Helper()
	code := d.proc.WaitExit(d.t, timeout, d.logText)
	d.proc = nil
	return code
}

func (d *daemon) kill9() {
	if d.proc == nil {
		return
	}
	d.proc.Kill9()
	d.proc = nil
}

func (d *daemon) stop() {
	if d.proc == nil {
		return
	}
	d.proc.Stop(10 * time.Second)
	d.proc = nil
}

// submit posts a task; ok is false when the client saw no 202 (an error
// or a dropped connection), i.e. the task was not acknowledged.
func (d *daemon) submit(client *http.Client, input string) (id string, ok bool) {
	return d.post(client, fmt.Sprintf(`{"input":%q}`, input))
}

// post posts a task body; ok as for submit.
func (d *daemon) post(client *http.Client, body string) (id string, ok bool) {
	id, why := d.postWhy(client, body)
	return id, why == ""
}

// postWhy is post saying why a task was not acknowledged ("" when it was):
// the client's error, or the status and body answered.
func (d *daemon) postWhy(client *http.Client, body string) (id, why string) {
	req, _ := http.NewRequest("POST", d.url+"/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err.Error()
	}
	defer resp.Body.Close()
	// A process that dies right after flushing its 202 never sends the
	// final chunk, so the body ends early: the status line and the id
	// arrived, which is the acknowledgement a client acts on.
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
		return "", fmt.Sprintf("%s: %.300s (reading the body: %v)", resp.Status, b, err)
	}
	// {"id":"resp_…",…}: avoid a JSON dependency on the response shape
	// beyond the id.
	s := string(b)
	i := strings.Index(s, `"id":"`)
	if i < 0 {
		return "", fmt.Sprintf("%s with no id: %.300s", resp.Status, b)
	}
	s = s[i+6:]
	return s[:strings.IndexByte(s, '"')], ""
}

// openDB opens the daemon's database read-only beside the live daemon.
func (d *daemon) openDB() *sql.DB {
	d.t.Helper()
	db, err := sql.Open("sqlite", "file:"+d.dbPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { db.Close() })
	return db
}

// runFacts is what the database says about one run.
type runFacts struct {
	status      string
	finished    int // run.finished events
	toolResults int // tool.result events
	interrupted int // tool.result events whose preview starts with [interrupted]
	journal     int // tool journal rows
}

func facts(t testing.TB, db *sql.DB) map[string]*runFacts {
	t.Helper()
	out := map[string]*runFacts{}
	each(t, db, "SELECT id, status FROM runs", func(rows *sql.Rows) error {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return err
		}
		out[id] = &runFacts{status: st}
		return nil
	})
	each(t, db, `SELECT run_id, name, coalesce(data,'') FROM events WHERE name IN ('run.finished','tool.result')`, func(rows *sql.Rows) error {
		var id, name, data string
		if err := rows.Scan(&id, &name, &data); err != nil {
			return err
		}
		f := out[id]
		if f == nil {
			return fmt.Errorf("event %s for unknown run %s", name, id)
		}
		if name == "run.finished" {
			f.finished++
		} else {
			f.toolResults++
			if strings.Contains(data, `[interrupted]`) {
				f.interrupted++
			}
		}
		return nil
	})
	each(t, db, "SELECT run_id FROM tool_journal", func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		if f := out[id]; f != nil {
			f.journal++
		}
		return nil
	})
	return out
}

// each runs q and calls scan on every row, failing t on any error.
func each(t testing.TB, db *sql.DB, q string, scan func(*sql.Rows) error) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// waitAllTerminal polls the database until every run is terminal.
func waitAllTerminal(t testing.TB, d *daemon, db *sql.DB, timeout time.Duration) map[string]*runFacts {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var open int
		if err := db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM runs WHERE status NOT IN ('done','failed','cancelled')").Scan(&open); err != nil {
			t.Fatalf("count open runs: %v", err)
		}
		if open == 0 {
			return facts(t, db)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still not terminal after %s; log tail:\n%s", open, timeout, tail(d.logText(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
