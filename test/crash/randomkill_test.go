package crash

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRandomKill submits write_file tasks from several clients while the
// ordinary binary is killed with SIGKILL at random moments, then checks on
// the final start: no acknowledged task lost, no write_file executed twice in
// a run, every run terminal with exactly one run.finished.
func TestRandomKill(t *testing.T) {
	d, acked, kills := killAtRandom(t, 200, func(n int64) string { return fmt.Sprintf("Write brief-%d.md about the otter survey.", n) })
	_, runs := settleAfterKills(t, d, acked)
	var done, interrupted int
	for id, f := range runs {
		if f.toolResults > 1 || f.journal > 1 {
			t.Fatalf("run %s: %d tool.result events, %d journal rows: write_file ran more than once", id, f.toolResults, f.journal)
		}
		if f.status == "done" {
			done++
		}
		interrupted += f.interrupted
	}
	t.Logf("%d kills, %d acknowledged, %d runs, %d done, %d interrupted write_file calls settled", kills, len(acked), len(runs), done, interrupted)
}

// settleAfterKills starts d once more after killAtRandom and waits until
// every run is terminal; it fails the test when an acknowledged task has
// no run or a run has other than one run.finished. It returns d's
// database and the runs' facts.
func settleAfterKills(t *testing.T, d *daemon, acked []string) (*sql.DB, map[string]*runFacts) {
	t.Helper()
	d.start()
	db := d.openDB()
	runs := waitAllTerminal(t, d, db, 60*time.Second)
	for _, id := range acked {
		if runs[id] == nil {
			t.Fatalf("acknowledged task %s lost", id)
		}
	}
	for id, f := range runs {
		if f.finished != 1 {
			t.Fatalf("run %s (%s): %d run.finished events, want 1", id, f.status, f.finished)
		}
	}
	return db, runs
}

// killAtRandom submits tasks written by prompt from six clients while the
// ordinary binary is killed with SIGKILL at random moments, until want are
// acknowledged; it returns the daemon (stopped) and the acknowledged ids.
func killAtRandom(t *testing.T, want int, prompt func(n int64) string) (*daemon, []string, int) {
	d := newDaemon(t, plainBin, startFake(t), "DELTA_MAX_CONCURRENCY=16")
	deadline := time.Now().Add(60 * time.Second)
	var acked []string
	var mu sync.Mutex
	var seq atomic.Int64
	kills := 0
	for len(acked) < want && time.Now().Before(deadline) {
		d.start()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 5 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					if id, ok := d.submit(client, prompt(seq.Add(1))); ok {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
		d.kill9()
		kills++
		close(stop)
		wg.Wait()
	}
	if len(acked) < want {
		t.Fatalf("only %d tasks acknowledged before the deadline", len(acked))
	}
	return d, acked, kills
}

// TestRandomKillReadThenWrite is TestRandomKill for tasks that list the
// workspace (a read-only call, whose result rides on the next checkpoint)
// before writing: on the final start no acknowledged task is lost, every
// run is terminal with one run.finished, and no call has more than one
// journal row or tool.result — a done call never runs again, and
// write_file runs at most once per run.
func TestRandomKillReadThenWrite(t *testing.T) {
	d, acked, kills := killAtRandom(t, 120, func(n int64) string {
		return fmt.Sprintf("List the files, then write brief-%d.md about the otter survey.", n)
	})
	db, runs := settleAfterKills(t, d, acked)
	perCall := map[string]int{}
	each(t, db, `SELECT run_id, coalesce(json_extract(data, '$.call_id'), '') FROM events WHERE name = 'tool.result'`, func(rows *sql.Rows) error {
		var run, call string
		if err := rows.Scan(&run, &call); err != nil {
			return err
		}
		perCall[run+" "+call]++
		return nil
	})
	writes := map[string]int{}
	each(t, db, "SELECT run_id, call_id, name FROM tool_journal", func(rows *sql.Rows) error {
		var run, call, name string
		if err := rows.Scan(&run, &call, &name); err != nil {
			return err
		}
		perCall[run+" "+call+" journal"]++
		if name == "write_file" {
			writes[run]++
		}
		return nil
	})
	lists := 0
	for k, n := range perCall {
		if n > 1 {
			t.Fatalf("%s: %d rows, want at most 1", k, n)
		}
	}
	for run, n := range writes {
		if n > 1 {
			t.Fatalf("run %s: write_file journalled %d times", run, n)
		}
	}
	each(t, db, "SELECT count(*) FROM tool_journal WHERE name = 'list_files' AND status = 'done'", func(rows *sql.Rows) error { return rows.Scan(&lists) })
	t.Logf("%d kills, %d acknowledged, %d runs, %d list_files results", kills, len(acked), len(runs), lists)
}
