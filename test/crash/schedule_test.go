package crash

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/test/daemontest"
)

// schedulerProc is one `delta scheduler` child process.
type schedulerProc struct {
	*daemontest.Process
	log string
}

func startScheduler(t *testing.T, dir string, env []string) *schedulerProc {
	t.Helper()
	p := &schedulerProc{log: filepath.Join(dir, "scheduler.log")}
	p.Process = daemontest.Start(t, daemontest.OpenLog(t, p.log, false), env, crashBin, "scheduler", "--poll", "20ms")
	t.Cleanup(p.Kill9)
	return p
}

func (p *schedulerProc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// waitExit returns the exit code of a process that must end by itself.
func (p *schedulerProc) waitExit(t *testing.T) int {
	t.Helper()
	return p.WaitExit(t, 30*time.Second, p.logText)
}

// TestSchedulerKillNineNeverDoubleFires: a real `delta scheduler` dies
// (exit 137, as kill -9) after recording a firing and before posting it,
// or after the daemon acknowledged it and before recording that; the next
// start re-sends the firing with the same key and the daemon holds exactly
// one run per firing. The schedules were due while the scheduler was down:
// an interval that missed two slots fires once, for the latest; a one-time
// schedule fires late, once.
func TestSchedulerKillNineNeverDoubleFires(t *testing.T) {
	for _, point := range []string{crashpoint.SchedulerAfterIntent, crashpoint.SchedulerAfterPost} {
		t.Run(point, func(t *testing.T) {
			d := newDaemon(t, plainBin, startFake(t))
			d.start()
			dir := t.TempDir()
			dbPath := filepath.Join(dir, "scheduler.db")
			now := time.Now().UTC().Truncate(time.Second)
			ivCreated := now.Add(-2*time.Hour - 5*time.Minute)
			onceAt := now.Add(-10 * time.Minute)
			seed(t, dbPath,
				store.ScheduleRow{ID: "sch_iv", Kind: "interval", EverySeconds: 3600, Input: "check the build", Status: "active",
					CreatedAt: ivCreated, NextFireAt: ivCreated.Add(time.Hour)},
				store.ScheduleRow{ID: "sch_once", Owner: "alice", Kind: "once", At: onceAt.Format(time.RFC3339), Input: "remind me",
					Status: "active", CreatedAt: now.Add(-time.Hour), NextFireAt: onceAt})
			port := daemontest.FreePort(t)
			env := []string{
				"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
				"DELTA_SCHEDULER_DB=" + dbPath,
				fmt.Sprintf("DELTA_SCHEDULER_LISTEN=127.0.0.1:%d", port),
				"DELTA_CONTROL_TOKEN=" + token,
				"DELTA_URL=" + d.url,
			}
			p := startScheduler(t, dir, append(env, "DELTA_CRASH_AT="+point))
			if code := p.waitExit(t); code != 137 {
				t.Fatalf("exit %d, want 137 at %s; log:\n%s", code, point, p.logText())
			}
			first := firingsOf(t, dbPath, "sch_iv")
			if len(first) != 1 || first[0].State != store.FiringIntended {
				t.Fatalf("after the crash: %+v, want one owed firing", first)
			}
			if point == crashpoint.SchedulerAfterPost {
				// The daemon's run for the firing finishes before the
				// scheduler comes back, so only the key's re-attachment to
				// a finished run stands between the re-sent firing and a
				// second run.
				waitRunTerminal(t, d, first[0].Key)
			}
			p = startScheduler(t, dir, env)
			deadline := time.Now().Add(30 * time.Second)
			for !allDone(t, dbPath, "sch_iv", "sch_once") {
				if time.Now().After(deadline) {
					t.Fatalf("firings never done; log:\n%s\ndaemon:\n%s", p.logText(), d.logText())
				}
				time.Sleep(20 * time.Millisecond)
			}
			iv, once := firingsOf(t, dbPath, "sch_iv"), firingsOf(t, dbPath, "sch_once")
			if len(iv) != 1 || !iv[0].Slot.Equal(ivCreated.Add(2*time.Hour)) || iv[0].Skipped != 1 {
				t.Fatalf("interval firings %+v, want one for the latest missed slot %s", iv, ivCreated.Add(2*time.Hour))
			}
			if len(once) != 1 || !once[0].Slot.Equal(onceAt) {
				t.Fatalf("one-time firings %+v, want one at %s", once, onceAt)
			}
			// Exactly one run per firing on the daemon, the one the firing records.
			db := d.openDB()
			runs, owners := schedRuns(t, db)
			var total int
			if err := db.QueryRow("SELECT count(*) FROM runs").Scan(&total); err != nil {
				t.Fatal(err)
			}
			for _, f := range []store.FiringRow{iv[0], once[0]} {
				if got := runs[f.Key]; len(got) != 1 || got[0] != f.TaskID {
					t.Errorf("firing %s: runs %v, want exactly [%s]", f.Key, got, f.TaskID)
				}
			}
			if total != 2 || owners[once[0].Key] != "alice" || owners[iv[0].Key] != "" {
				t.Errorf("daemon has %d runs, owners %v; want 2, the one-time firing alice's", total, owners)
			}
			if strings.Contains(p.logText(), token) {
				t.Error("the scheduler logged its token")
			}
			if want := schedule.FireKey("sch_iv", iv[0].Slot); iv[0].Key != want {
				t.Errorf("key %s, want %s", iv[0].Key, want)
			}
		})
	}
}

// schedRuns maps each firing key on the daemon to its runs and owner.
func schedRuns(t *testing.T, db *sql.DB) (runs map[string][]string, owners map[string]string) {
	t.Helper()
	runs, owners = map[string][]string{}, map[string]string{}
	rows, err := db.Query("SELECT idempotency_key, id, owner FROM runs WHERE idempotency_key LIKE 'sched-%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, id, owner string
		if err := rows.Scan(&key, &id, &owner); err != nil {
			t.Fatal(err)
		}
		runs[key] = append(runs[key], id)
		owners[key] = owner
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return runs, owners
}

func waitRunTerminal(t *testing.T, d *daemon, key string) {
	t.Helper()
	db := d.openDB()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status string
		err := db.QueryRow("SELECT status FROM runs WHERE idempotency_key = ?", key).Scan(&status)
		if err == nil && status != "queued" && status != "running" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's run for %s never finished (%q, %v); log:\n%s", key, status, err, d.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func seed(t *testing.T, path string, rows ...store.ScheduleRow) {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range rows {
		if err := st.CreateSchedule(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func firingsOf(t *testing.T, path, id string) []store.FiringRow {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs, err := st.Firings(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func allDone(t *testing.T, path string, ids ...string) bool {
	for _, id := range ids {
		fs := firingsOf(t, path, id)
		if len(fs) == 0 {
			return false
		}
		for _, f := range fs {
			if f.State != store.FiringDone {
				return false
			}
		}
	}
	return true
}
