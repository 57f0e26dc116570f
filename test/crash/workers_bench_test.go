package crash

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"sort"
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
// running share the cores, so the cores are the ceiling. With
// pg_stat_statements loaded (pgtest loads it where the server ships it) it
// also reports the workers' statements per task and, with -v, logs the
// statements by server time and by calls, the active backends by wait
// and statement (CPU/ is running or waiting for a core), the server's
// CPU by kind of process, and the last batch's timeline.
//
//	go test -run '^$' -bench WorkersThroughput -benchtime 3x -v ./test/crash/
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
			// pg_stat_statements is there when the cluster preloads it; the
			// report below is then empty and the figures the same.
			_, _ = db.Exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
			_, _ = db.Exec("SELECT pg_stat_statements_reset()")
			pg0 := serverCPU(b, db)
			sessions0 := serverSessions(b, db)
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
			b.Logf("active backends waiting, mean over the batch:\n%s", sampler.waitReport())
			if r := statementReport(db, "total_exec_time", 15); r != "" {
				b.Logf("statements by server time:\n%s", r)
				b.Logf("statements by calls:\n%s", statementReport(db, "calls", 40))
				var calls float64
				if err := db.QueryRow(`SELECT sum(calls) FROM pg_stat_statements WHERE ` + benchOwn).Scan(&calls); err == nil {
					b.ReportMetric(calls/float64(batch*b.N), "pg-statements/task")
				}
			}
			pgCPU := time.Duration(0)
			for pid, t := range serverCPU(b, db) {
				pgCPU += t - pg0[pid] // a server process started since counts whole
			}
			b.Logf("the last batch:\n%s", batchTimeline(b, db, batch))
			b.ReportMetric(float64(serverSessions(b, db)-sessions0)/float64(b.N), "pg-connections/batch")
			b.Logf("server CPU by backend kind:\n%s", cpuByBackend(b, db, pg0, elapsed))
			cpu := -cpu0
			for _, w := range ws {
				cpu += processCPU(b, w.proc.Cmd.Process.Pid)
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(batch*b.N), "worker-cpu-ms/task")
			b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "worker-cores")
			b.ReportMetric(pgCPU.Seconds()/elapsed.Seconds(), "pg-cores")
			b.ReportMetric(float64(pgCPU.Microseconds())/1000/float64(batch*b.N), "pg-cpu-ms/task")
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
// database and the workers. It also counts every active backend's wait
// by type and event (Lock/advisory is an advisory lock, Lock/object the
// NOTIFY queue's lock taken at commit, LWLock/* the server's own latches),
// so a report can tell which lock the waiting is on.
type backendSampler struct {
	done         chan struct{}
	wg           sync.WaitGroup
	samples      int
	locked, inTx int
	waits        map[string]int // "type/event" → backends seen waiting on it, summed over samples
}

// sampleBackends starts sampling pg_stat_activity through db.
func sampleBackends(b *testing.B, db *sql.DB) *backendSampler {
	b.Helper()
	s := &backendSampler{done: make(chan struct{}), waits: make(map[string]int)}
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
			locked, inTx, waits, err := sampleOnce(db)
			if err != nil {
				continue // the cluster stopping at the end
			}
			s.samples++
			s.locked += locked
			s.inTx += inTx
			for k, v := range waits {
				s.waits[k] += v
			}
		}
	}()
	return s
}

// sampleOnce reads pg_stat_activity once: the backends waiting on a
// lock, those idle in a transaction, and the active ones by
// "type/event statement".
func sampleOnce(db *sql.DB) (locked, inTx int, waits map[string]int, err error) {
	rows, err := db.Query(`SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, ''), COALESCE(state, ''), left(regexp_replace(query, '\s+', ' ', 'g'), 48)
		FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)
	if err != nil {
		return 0, 0, nil, err
	}
	defer rows.Close()
	waits = make(map[string]int)
	for rows.Next() {
		var typ, ev, state, q string
		if err := rows.Scan(&typ, &ev, &state, &q); err != nil {
			return 0, 0, nil, err
		}
		if typ == "Lock" {
			locked++
		}
		if strings.HasPrefix(state, "idle in transaction") {
			inTx++
		}
		if state == "active" {
			waits[typ+"/"+ev+" "+q]++
		}
	}
	return locked, inTx, waits, rows.Err()
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

// waitReport is the mean number of active backends waiting on each
// type/event, largest first, one per line.
func (s *backendSampler) waitReport() string {
	type w struct {
		k string
		n int
	}
	var ws []w
	for k, n := range s.waits {
		ws = append(ws, w{k, n})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].n > ws[j].n })
	var out strings.Builder
	for _, x := range ws[:min(len(ws), 20)] {
		fmt.Fprintf(&out, "  %-80s %6.2f\n", x.k, float64(x.n)/float64(max(s.samples, 1)))
	}
	return out.String()
}

// benchOwn is a condition on pg_stat_statements leaving out the
// benchmark's own statements (the sampler, the end-of-batch poll, its
// reports), so what remains is the workers'.
const benchOwn = `query NOT LIKE '%pg_stat%' AND query NOT LIKE 'SELECT count(*) FROM runs WHERE status IN%' AND query NOT LIKE 'WITH r AS%'`

// statementReport is the server's statements by total execution time,
// the first n, from pg_stat_statements when the cluster loads it (""
// when it does not). The sampler's own query is among them.
func statementReport(db *sql.DB, order string, n int) string {
	rows, err := db.Query(`SELECT calls, total_exec_time, mean_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements WHERE `+benchOwn+` ORDER BY `+order+` DESC LIMIT $1`, n)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out strings.Builder
	fmt.Fprintf(&out, "  %8s %9s %7s  %s\n", "calls", "total-ms", "mean-ms", "statement")
	for rows.Next() {
		var calls int64
		var total, mean float64
		var q string
		if rows.Scan(&calls, &total, &mean, &q) != nil {
			return out.String()
		}
		fmt.Fprintf(&out, "  %8d %9.0f %7.3f  %s\n", calls, total, mean, q)
	}
	return out.String()
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

// cpuByBackend is the server's CPU since before (serverCPU's figures) by
// kind of process: its backend type, and for client backends whether
// the connection LISTENs (a worker's notification connection) or not;
// in cores over elapsed, with the number of processes and how many of
// them started since before.
func cpuByBackend(b *testing.B, db *sql.DB, before map[int]time.Duration, elapsed time.Duration) string {
	b.Helper()
	rows, err := db.Query(`SELECT pid, backend_type, COALESCE(query, '') FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	type agg struct {
		cpu      time.Duration
		n, fresh int
	}
	kinds := make(map[string]*agg)
	for rows.Next() {
		var pid int
		var typ, q string
		if err := rows.Scan(&pid, &typ, &q); err != nil {
			b.Fatal(err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			continue
		}
		k := typ
		if typ == "client backend" && strings.HasPrefix(q, "LISTEN") {
			k += " (listen)"
		}
		a := kinds[k]
		if a == nil {
			a = &agg{}
			kinds[k] = a
		}
		t0, ok := before[pid]
		if !ok {
			a.fresh++
		}
		a.cpu += processCPU(b, pid) - t0
		a.n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	for k, a := range kinds {
		fmt.Fprintf(&out, "  %-28s %5.3f cores, %3d processes, %3d new\n", k, a.cpu.Seconds()/elapsed.Seconds(), a.n, a.fresh)
	}
	return out.String()
}

// batchTimeline is when the last batch's runs (the last n by seq) were
// accepted, started and finished, in ms from the first acceptance.
func batchTimeline(b *testing.B, db *sql.DB, n int) string {
	b.Helper()
	var out strings.Builder
	each(b, db, fmt.Sprintf(`WITH r AS (SELECT created_at c, started_at s, finished_at f FROM runs ORDER BY seq DESC LIMIT %d),
		z AS (SELECT min(c) t0 FROM r)
		SELECT max(c)-t0, min(s)-t0, (SELECT s FROM r ORDER BY s LIMIT 1 OFFSET 31)-t0, avg(s-c), percentile_cont(0.5) WITHIN GROUP (ORDER BY s-c),
		  avg(f-s), max(f)-t0, sum(f-s) FROM r, z GROUP BY t0`, n), func(rows *sql.Rows) error {
		var lastC, firstS, s32, waitAvg, waitP50, runAvg, lastF, busy float64
		if err := rows.Scan(&lastC, &firstS, &s32, &waitAvg, &waitP50, &runAvg, &lastF, &busy); err != nil {
			return err
		}
		fmt.Fprintf(&out, "  last accepted %.0f, first started %.0f, 32nd started %.0f, queue wait mean %.0f p50 %.0f, run mean %.0f, last finished %.0f, busy slot-ms %.0f\n",
			lastC, firstS, s32, waitAvg, waitP50, runAvg, lastF, busy)
		return nil
	})
	return out.String()
}

// serverSessions is the number of sessions (connections) the server has
// established to the benchmark's database since it started.
func serverSessions(b *testing.B, db *sql.DB) int64 {
	b.Helper()
	var n int64
	if err := db.QueryRow(`SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
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
