package crash

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// TestKillWhileCommitAheadIsInFlight kills the daemon while a read-only
// step's checkpoint is still committing in the background and the next
// model call has already answered with a write_file: a second connection
// holds the database's write lock from the first call on, so the commit
// cannot land. Before the kill, nothing of that answer may have been acted
// on (no file, no intent); after the restart the turn is asked again and
// write_file runs exactly once, never as an interrupted call.
func TestKillWhileCommitAheadIsInFlight(t *testing.T) {
	var (
		mu       sync.Mutex
		first    = true // the first process is still running
		calls    int    // model calls of the first process
		blocker  *sql.Tx
		stepsMid = -1
		errs     []string
	)
	answered := make(chan struct{}) // the second call of the first process has its reply
	var db *sql.DB
	script := func(req modeltest.ChatRequest) modeltest.Reply {
		reply := modeltest.DemoScript()(req)
		mu.Lock()
		defer mu.Unlock()
		if !first {
			return reply
		}
		calls++
		switch calls {
		case 1: // list_files next: hold the write lock before its step commits
			tx, err := db.BeginTx(context.Background(), nil)
			if err == nil {
				_, err = tx.Exec(`UPDATE runs SET seq = seq WHERE 0`)
			}
			if err != nil {
				errs = append(errs, "take the write lock: "+err.Error())
				return reply
			}
			blocker = tx
		case 2: // write_file next, asked while list_files' step is committing
			if blocker == nil {
				errs = append(errs, "second call without the lock held")
				return reply
			}
			if err := blocker.QueryRow(`SELECT steps FROM runs`).Scan(&stepsMid); err != nil {
				errs = append(errs, "read steps: "+err.Error())
			}
			close(answered)
		}
		return reply
	}
	fake, err := modeltest.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	d := newDaemon(t, plainBin, fake)
	db, err = sql.Open("sqlite", "file:"+d.dbPath()+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	d.start()
	id, ok := d.submit(&http.Client{Timeout: 30 * time.Second}, "List the workspace, then write brief.md about the otter survey.")
	if !ok {
		t.Fatalf("task not acknowledged; log:\n%s", tail(d.logText(), 3000))
	}
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatalf("the second model call never came; log:\n%s", tail(d.logText(), 3000))
	}
	// The daemon has the write_file reply. Give it the chance to act on it
	// (it must not), then look: no file, no intent, no step.
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	var intents, steps int
	if err := blocker.QueryRow(`SELECT count(*) FROM tool_journal`).Scan(&intents); err != nil {
		t.Fatal(err)
	}
	if err := blocker.QueryRow(`SELECT steps FROM runs`).Scan(&steps); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(filepath.Join(d.dir, "ws", "brief.md"))
	d.kill9()
	first = false
	_ = blocker.Rollback() // the lock held nothing of its own
	mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("script: %v", errs)
	}
	if stepsMid != 0 {
		t.Fatalf("the second call was made with %d steps committed, want 0 (the first step's commit in flight)", stepsMid)
	}
	if statErr == nil || intents != 0 || steps != 0 {
		t.Fatalf("before the kill: brief.md exists = %v, %d intents, %d steps; want no file, none and 0", statErr == nil, intents, steps)
	}

	d.start()
	runs := waitAllTerminal(t, d, d.openDB(), 30*time.Second)
	f := runs[id]
	if f == nil || len(runs) != 1 {
		t.Fatalf("runs %v, want only %s", runs, id)
	}
	if f.status != "done" || f.finished != 1 {
		t.Fatalf("run %s with %d run.finished, want done with 1; log:\n%s", f.status, f.finished, tail(d.logText(), 3000))
	}
	var writes, interrupted int
	rodb := d.openDB()
	if err := rodb.QueryRow(`SELECT count(*), coalesce(sum(result LIKE '[interrupted]%'), 0) FROM tool_journal WHERE run_id = ? AND name = 'write_file'`, id).Scan(&writes, &interrupted); err != nil {
		t.Fatal(err)
	}
	if writes != 1 || interrupted != 0 {
		t.Fatalf("write_file journalled %d times (%d interrupted), want once, run to completion", writes, interrupted)
	}
	if _, err := os.Stat(filepath.Join(d.dir, "ws", "brief.md")); err != nil {
		t.Fatalf("brief.md after the restart: %v", err)
	}
}
