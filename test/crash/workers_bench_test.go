package crash

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// BenchmarkWorkersThroughput measures tasks per second with 1, 2 and 3
// worker processes on one PostgreSQL, each task one model call the fake
// holds for 200 ms, each task its own session. Each worker runs
// DELTA_MAX_CONCURRENCY=32 (scaled down from 256 for a two-core machine),
// so the ideal is workers × 32 / 0.2 s; one op is a batch of three waves
// (workers × 96 tasks) from the first submission to the last run terminal.
// It reports tasks/s, the share of the ideal, the workers' CPU (per task,
// and in cores over the batch), PostgreSQL's CPU in cores (its server
// processes), the mean number of backends waiting on a lock and idle in a
// transaction (sampled every 5 ms), the median run from start to finish
// and the machine's one-minute load average at the end: on a
// two-core machine the workers, PostgreSQL, the fake and anything else
// running share the cores, so the cores are the ceiling.
//
//	go test -run '^$' -bench WorkersThroughput -benchtime 3x ./test/crash/
func BenchmarkWorkersThroughput(b *testing.B) {
	const perWorker, latency = 32, 200 * time.Millisecond
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			c := newCluster(b)
			c.fake.Close()
			fake, err := modeltest.Start(func(modeltest.ChatRequest) modeltest.Reply {
				time.Sleep(latency)
				return modeltest.TextReply("ok")
			})
			if err != nil {
				b.Fatal(err)
			}
			fake.ForgetRequests()
			b.Cleanup(func() { fake.Close() })
			c.fake = fake
			var ws []*daemon
			for i := range n {
				w := c.worker(plainBin, c.ws, fmt.Sprintf("DELTA_MAX_CONCURRENCY=%d", perWorker), fmt.Sprintf("DELTA_LEASE_HOLDER=b%d", i))
				w.start()
				ws = append(ws, w)
			}
			db := c.openDB()
			batch := n * perWorker * 3
			client := &http.Client{Timeout: 30 * time.Second}
			var elapsed time.Duration
			cpu0 := time.Duration(0)
			for _, w := range ws {
				cpu0 += processCPU(b, w.proc.Cmd.Process.Pid)
			}
			pg0 := serverCPU(b, db)
			sampler := sampleBackends(b, c.openDB())
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				var wg sync.WaitGroup
				jobs := make(chan int)
				for range 32 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range jobs {
							if _, why := ws[i%n].postWhy(client, fmt.Sprintf(`{"input":"Say ok, %d."}`, i)); why != "" {
								b.Errorf("task %d not acknowledged by worker b%d: %s", i, i%n, why)
							}
						}
					}()
				}
				for i := range batch {
					jobs <- i
				}
				close(jobs)
				wg.Wait()
				// Every task of the batch is acknowledged, so the batch is over
				// when no run is live. Counting the live rows reads a few index
				// entries; counting the finished ones would read a range that
				// grows every round, PostgreSQL CPU charged to the workers.
				// A hang guard, not a timing assertion: a batch takes seconds.
				stuck := time.Now().Add(3 * time.Minute)
				for {
					var live int
					if err := db.QueryRow("SELECT count(*) FROM runs WHERE status IN ('queued','running')").Scan(&live); err != nil {
						b.Fatal(err)
					}
					if live == 0 {
						break
					}
					if time.Now().After(stuck) {
						b.Fatalf("%d runs still live 3 minutes after the batch was submitted:\n%s", live,
							describeRuns(b, db, "status IN ('queued','running')", ws))
					}
					time.Sleep(5 * time.Millisecond)
				}
				elapsed += time.Since(t0)
			}
			b.StopTimer()
			lockWait, idleInTx := sampler.stop()
			pgCPU := time.Duration(0)
			for pid, t := range serverCPU(b, db) {
				pgCPU += t - pg0[pid] // a server process started since counts whole
			}
			cpu := -cpu0
			for _, w := range ws {
				cpu += processCPU(b, w.proc.Cmd.Process.Pid)
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(batch*b.N), "worker-cpu-ms/task")
			b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "worker-cores")
			b.ReportMetric(pgCPU.Seconds()/elapsed.Seconds(), "pg-cores")
			b.ReportMetric(loadAverage(b), "load1")
			b.ReportMetric(lockWait, "pg-lock-waiting")
			b.ReportMetric(idleInTx, "pg-idle-in-tx")
			var runMS float64
			if err := db.QueryRow(`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - started_at) FROM runs`).Scan(&runMS); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(runMS, "run-p50-ms")
			rate := float64(batch*b.N) / elapsed.Seconds()
			ideal := float64(n*perWorker) / latency.Seconds()
			b.ReportMetric(rate, "tasks/s")
			b.ReportMetric(100*rate/ideal, "%ideal")
			var failed int
			if err := db.QueryRow(`SELECT count(*) FROM runs WHERE status <> 'done'`).Scan(&failed); err != nil {
				b.Fatal(err)
			}
			if failed > 0 {
				b.Fatalf("%d runs did not complete:\n%s", failed, describeRuns(b, db, "status <> 'done'", ws))
			}
		})
	}
}

// backendSampler counts, every few milliseconds while a benchmark runs,
// the PostgreSQL backends waiting on a lock (a row, an advisory lock, a
// relation extension) and those idle inside a transaction (waiting for
// their worker's next statement): where a task's time goes between the
// database and the workers.
type backendSampler struct {
	done         chan struct{}
	wg           sync.WaitGroup
	samples      int
	locked, inTx int
}

// sampleBackends starts sampling pg_stat_activity through db.
func sampleBackends(b *testing.B, db *sql.DB) *backendSampler {
	b.Helper()
	s := &backendSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			var locked, inTx int
			err := db.QueryRow(`SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'),
				count(*) FILTER (WHERE state LIKE 'idle in transaction%')
				FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&locked, &inTx)
			if err != nil {
				continue // the cluster stopping at the end
			}
			s.samples++
			s.locked += locked
			s.inTx += inTx
		}
	}()
	return s
}

// stop ends the sampling and returns the mean number of backends waiting
// on a lock and idle in a transaction.
func (s *backendSampler) stop() (lockWait, idleInTx float64) {
	close(s.done)
	s.wg.Wait()
	if s.samples == 0 {
		return 0, 0
	}
	return float64(s.locked) / float64(s.samples), float64(s.inTx) / float64(s.samples)
}

// describeRuns reports the first five runs matching where (a condition on
// the runs table): id, status, attempts and error, then each one's events
// with their data, and the end of every worker's log.
func describeRuns(b *testing.B, db *sql.DB, where string, ws []*daemon) string {
	b.Helper()
	var out strings.Builder
	var ids []string
	each(b, db, "SELECT id, status, attempts, COALESCE(error, '') FROM runs WHERE "+where+" ORDER BY seq LIMIT 5", func(rows *sql.Rows) error {
		var id, status, errText string
		var attempts int
		if err := rows.Scan(&id, &status, &attempts, &errText); err != nil {
			return err
		}
		ids = append(ids, id)
		fmt.Fprintf(&out, "run %s: %s after %d attempts, error %q\n", id, status, attempts, errText)
		return nil
	})
	for _, id := range ids {
		fmt.Fprintf(&out, "events of %s:\n", id)
		each(b, db, "SELECT id, name, COALESCE(data, '') FROM events WHERE run_id = '"+id+"' ORDER BY id", func(rows *sql.Rows) error {
			var seq int64
			var name, data string
			if err := rows.Scan(&seq, &name, &data); err != nil {
				return err
			}
			fmt.Fprintf(&out, "  %d %s %.400s\n", seq, name, data)
			return nil
		})
	}
	for i, w := range ws {
		log := w.logText()
		fmt.Fprintf(&out, "worker b%d log, last 4 KB:\n%s\n", i, log[max(0, len(log)-4096):])
	}
	return out.String()
}

// serverCPU is the CPU time of each PostgreSQL server process, by pid: the
// backends and background processes pg_stat_activity lists (the server
// runs on this machine).
func serverCPU(b *testing.B, db *sql.DB) map[int]time.Duration {
	b.Helper()
	rows, err := db.Query("SELECT pid FROM pg_stat_activity")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := make(map[int]time.Duration)
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			out[pid] = processCPU(b, pid)
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// loadAverage is the machine's one-minute load average.
func loadAverage(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	var l float64
	if _, err := fmt.Sscan(string(raw), &l); err != nil {
		b.Fatal(err)
	}
	return l
}
