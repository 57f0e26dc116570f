package crash

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
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
// processes) and the machine's one-minute load average at the end: on a
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
							if _, ok := ws[i%n].submit(client, fmt.Sprintf("Say ok, %d.", i)); !ok {
								b.Errorf("task %d not acknowledged", i)
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
				for {
					var live int
					if err := db.QueryRow("SELECT count(*) FROM runs WHERE status IN ('queued','running')").Scan(&live); err != nil {
						b.Fatal(err)
					}
					if live == 0 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				elapsed += time.Since(t0)
			}
			b.StopTimer()
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
			rate := float64(batch*b.N) / elapsed.Seconds()
			ideal := float64(n*perWorker) / latency.Seconds()
			b.ReportMetric(rate, "tasks/s")
			b.ReportMetric(100*rate/ideal, "%ideal")
			var failed int
			var first string
			_ = db.QueryRow(`SELECT count(*), COALESCE(MIN(id || ' ' || status || ': ' || error), '')
				FROM runs WHERE status <> 'done'`).Scan(&failed, &first)
			if failed > 0 {
				b.Fatalf("%d runs did not complete; the first: %s", failed, first)
			}
		})
	}
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
