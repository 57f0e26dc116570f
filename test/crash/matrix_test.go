package crash

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
)

// TestCrashMatrix kills the tagged binary at every named point of one
// write_file task, restarts it without the crash point and checks the
// documented outcome.
func TestCrashMatrix(t *testing.T) {
	cases := []struct {
		point string
		acked bool // the client got its 202 before the crash
		// interrupted: the write_file call was in doubt at the crash, so
		// its one result is [interrupted] (it is never run twice).
		interrupted bool
		artifact    bool // brief.md exists afterwards
		// modelCalls, when set, is how many model calls the task costs
		// across both processes: a reply the crash left uncommitted is
		// asked for again, a committed one never is.
		modelCalls int
	}{
		{crashpoint.BeforeAck, false, false, true, 0},
		{crashpoint.AfterAck, true, false, true, 0},
		{crashpoint.ModelCall, true, false, true, 0},
		{crashpoint.AfterIntent, true, true, false, 0},
		{crashpoint.MidTool, true, true, true, 0},
		{crashpoint.AfterResult, true, false, true, 0},
		// The final reply commits with the run's end: a crash before that
		// commit asks for it once more.
		{crashpoint.BeforeFinish, true, false, true, 3},
	}
	// The compaction point needs a run long enough to compact, the point
	// after a reflecting finish needs reflection on, and the promotion
	// point a recurring lesson and a product: each has a test of its own
	// (TestCrashMidCompaction, TestCrashAfterFinishReflectsOnce,
	// TestCrashDuringPromotionPromotesOnce).
	if len(cases)+3 != len(crashpoint.Points()) {
		t.Fatalf("the matrix covers %d points and its own tests three, crashpoint names %d", len(cases), len(crashpoint.Points()))
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			t.Parallel()
			fake := startFake(t)
			d := newDaemon(t, crashBin, fake)
			d.start("DELTA_CRASH_AT=" + tc.point)
			id, acked := d.submit(&http.Client{Timeout: 30 * time.Second}, "Write brief.md about the otter survey.")
			if code := d.waitExit(30 * time.Second); code != 137 {
				t.Fatalf("exit code %d, want 137 from the crash point; log:\n%s", code, d.logText())
			}
			if acked != tc.acked {
				t.Fatalf("acknowledged = %v (id %q), want %v", acked, id, tc.acked)
			}

			d.start() // without DELTA_CRASH_AT
			runs := waitAllTerminal(t, d, d.openDB(), 30*time.Second)
			if len(runs) > 1 {
				t.Fatalf("%d runs exist after one submission: %v", len(runs), runs)
			}
			if tc.acked {
				if runs[id] == nil {
					t.Fatalf("acknowledged run %s lost; runs: %v", id, runs)
				}
			}
			for rid, f := range runs {
				if f.status != "done" || f.finished != 1 {
					t.Fatalf("run %s: status %s with %d run.finished, want done with exactly 1", rid, f.status, f.finished)
				}
				if f.toolResults != 1 || f.journal != 1 {
					t.Fatalf("run %s: %d tool.result events, %d journal rows, want 1 each (write_file never repeated)", rid, f.toolResults, f.journal)
				}
				if got := f.interrupted == 1; got != tc.interrupted {
					t.Fatalf("run %s: interrupted result = %v, want %v", rid, got, tc.interrupted)
				}
			}
			if tc.modelCalls > 0 && fake.Calls() != tc.modelCalls {
				t.Fatalf("the model was called %d times, want %d", fake.Calls(), tc.modelCalls)
			}
			_, err := os.Stat(filepath.Join(d.dir, "ws", "brief.md"))
			if exists := err == nil; exists != tc.artifact {
				t.Fatalf("brief.md exists = %v, want %v", exists, tc.artifact)
			}
		})
	}
}
