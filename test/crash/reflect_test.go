package crash

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
)

// TestCrashAfterFinishReflectsOnce: kill -9 after a successful run's
// terminal state and its reflection outbox row are committed, before the
// reflection is drained. After the restart the reflection happens exactly
// once: one reflection event, and nothing owed.
func TestCrashAfterFinishReflectsOnce(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, crashBin, fake, "DELTA_REFLECT=1")
	d.start("DELTA_CRASH_AT=" + crashpoint.AfterFinish)
	id, acked := d.submit(&http.Client{Timeout: 30 * time.Second}, "Write brief.md about the otter survey.")
	if code := d.waitExit(30 * time.Second); code != 137 {
		t.Fatalf("exit code %d, want 137 from the crash point; log:\n%s", code, d.logText())
	}
	if !acked {
		t.Fatal("the submission was not acknowledged")
	}
	db := d.openDB()
	var owed, reflections int
	if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM reflection_outbox), (SELECT COUNT(*) FROM events WHERE name = 'reflection')").Scan(&owed, &reflections); err != nil {
		t.Fatal(err)
	}
	if owed != 1 || reflections != 0 {
		t.Fatalf("at the crash: %d owed, %d reflections; want the one owed and none done", owed, reflections)
	}

	d.start() // without DELTA_CRASH_AT
	runs := waitAllTerminal(t, d, db, 30*time.Second)
	if f := runs[id]; f == nil || f.status != "done" || f.finished != 1 {
		t.Fatalf("run %s after restart: %+v", id, runs[id])
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := db.QueryRowContext(context.Background(), "SELECT (SELECT COUNT(*) FROM reflection_outbox), (SELECT COUNT(*) FROM events WHERE name = 'reflection' AND run_id = ?)", id).Scan(&owed, &reflections); err != nil {
			t.Fatal(err)
		}
		if owed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owed reflection was never drained; log:\n%s", d.logText())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if reflections != 1 {
		t.Fatalf("%d reflections after the restart, want exactly 1", reflections)
	}
}
