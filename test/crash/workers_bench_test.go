package crash

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/collector/pgtest"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// BenchmarkWorkersThroughput measures tasks per second with 1, 2 and 3
// worker processes on one PostgreSQL, each task one model call the fake
// holds for 200 ms, each task its own session. Each worker runs
// DELTA_MAX_CONCURRENCY=32 (scaled down from 256 for a two-core machine),
// so the ideal is workers × 32 / 0.2 s; one op is a batch of three waves
// (workers × 96 tasks) from the first submission to the last run terminal,
// after one batch not measured (the workers' connections open and their
// server backends warm, as in service). It reports tasks/s, the share of
// the ideal, the workers' CPU (per task, and in cores over the batch),
// PostgreSQL's CPU for the workers (its server processes but those of the
// benchmark's own connections, which it reports apart), this process's
// CPU (the clients, the fake model, the sampler), all of it per task and
// the share of the ideal the machine's cores allow at that much CPU per
// task, the mean number of backends waiting on a lock and idle in a
// transaction (sampled every 5 ms), the median run from start to finish
// and the machine's one-minute load average at the end: on a two-core
// machine every process shares the cores, so the cores are the ceiling
// once %ideal-cpu-allows falls below 100. With pg_stat_statements loaded
// (pgtest loads it where the server ships it) it also reports the
// workers' statements per task and, with -v, logs the statements by
// server time and by calls, the active backends by wait and statement
// (CPU/ is running or waiting for a core), the server's CPU by kind of
// process, and the last batch's timeline.
//
//	go test -run '^$' -bench WorkersThroughput -benchtime 3x -v ./test/crash/
//
// With BENCH_PROFILE=DIR the first worker serves its runtime profiles and
// DIR gets its CPU profile over the first two seconds of the measured
// batches (cpu-workers=N.pprof; go tool pprof -top DIR/cpu-workers=1.pprof)
// and, where perf is installed, the whole machine's over the same seconds
// (perf-workers=N.data; perf report -i DIR/perf-workers=1.data --sort comm,dso).
//
// The cluster skips fsync for speed, as the other tests' clusters do; with
// BENCH_PG_DURABLE=1 it commits as a production server does
// (pgtest.StartDurable), so every commit waits for the disk and whatever serializes
// commits across the workers shows in the waits and in %ideal.
func BenchmarkWorkersThroughput(b *testing.B) {
	const perWorker, latency = 32, 200 * time.Millisecond
	profileDir := os.Getenv("BENCH_PROFILE")
	start := pgtest.Start
	if os.Getenv("BENCH_PG_DURABLE") == "1" {
		start = pgtest.StartDurable
	}
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			c := newClusterOn(b, start, modeltest.DemoScript())
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
				if profileDir != "" {
					w.env = append(w.env, "DELTA_PPROF=1")
				}
				w.start()
				ws = append(ws, w)
			}
			// The benchmark's own connections name themselves, so their
			// server time (the sampler, the end-of-batch poll) is counted
			// apart from the workers'.
			db := c.openBenchDB()
			batch := n * perWorker * 3
			client := &http.Client{Timeout: 30 * time.Second}
			runBatch := func() time.Duration {
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
				return time.Since(t0)
			}
			// One batch first, not measured: a worker in service has its
			// connections open and each server backend warm (its catalog
			// caches, the recall trigger's function and dictionaries), which
			// costs a fresh backend tens of milliseconds on its first
			// statements. The figures are the steady state.
			warm := runBatch()
			var warmed int
			if err := db.QueryRow(`SELECT count(*) FROM runs`).Scan(&warmed); err != nil {
				b.Fatal(err)
			}
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
			sampler := sampleBackends(b, c.openBenchDB())
			self0 := selfCPU(b)
			var elapsed time.Duration
			profiled := profileWorker(b, ws[0], profileDir, fmt.Sprintf("workers=%d", n))
			b.ResetTimer()
			for range b.N {
				elapsed += runBatch()
			}
			b.StopTimer()
			profiled()
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
			self := selfCPU(b) - self0
			pgCPU, benchPG := time.Duration(0), time.Duration(0)
			for pid, t := range serverCPU(b, db) {
				d := t.cpu - pg0[pid].cpu // a server process started since counts whole
				if t.bench {
					benchPG += d
				} else {
					pgCPU += d
				}
			}
			b.Logf("the last batch:\n%s", batchTimeline(b, db, batch))
			b.Logf("the last batch's runs, each event's mean time from the run's start (ms):\n%s", runPhases(b, db, batch))
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
			b.ReportMetric(float64(self.Microseconds())/1000/float64(batch*b.N), "bench-cpu-ms/task")
			b.ReportMetric(benchPG.Seconds()/elapsed.Seconds(), "bench-pg-cores")
			// Every process of the benchmark shares the machine's cores: the
			// workers, PostgreSQL (the workers' backends and the bench's own)
			// and this process (the clients, the scripted model, the
			// sampler). At this much CPU per task the cores cannot run more
			// than cores/cpu tasks a second, whatever the locks do.
			total := cpu + pgCPU + benchPG + self
			ceiling := float64(runtime.NumCPU()) / (total.Seconds() / float64(batch*b.N))
			b.ReportMetric(float64(total.Microseconds())/1000/float64(batch*b.N), "all-cpu-ms/task")
			b.ReportMetric(min(100, 100*ceiling/(float64(n*perWorker)/latency.Seconds())), "%ideal-cpu-allows")
			b.Logf("warm-up batch %s; %d runs before the measured batches", warm.Round(time.Millisecond), warmed)
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
func serverCPU(b *testing.B, db *sql.DB) map[int]backendCPU {
	b.Helper()
	out := make(map[int]backendCPU)
	each(b, db, "SELECT pid, application_name = '"+benchApp+"' FROM pg_stat_activity", func(rows *sql.Rows) error {
		var pid int
		var bench bool
		if err := rows.Scan(&pid, &bench); err != nil {
			return err
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			out[pid] = backendCPU{cpu: processCPU(b, pid), bench: bench}
		}
		return nil
	})
	return out
}

// backendCPU is one server process's CPU time so far, and whether it
// serves one of the benchmark's own connections.
type backendCPU struct {
	cpu   time.Duration
	bench bool
}

// benchApp is the application_name of the benchmark's own connections.
const benchApp = "delta-bench"

// openBenchDB opens a connection pool of the benchmark's own, named
// benchApp on the server.
func (c *cluster) openBenchDB() *sql.DB {
	c.t.Helper()
	sep := "?"
	if strings.Contains(c.url, "?") {
		sep = "&"
	}
	db, err := sql.Open("pgx", c.url+sep+"application_name="+benchApp)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { db.Close() })
	return db
}

// selfCPU is this process's user and system CPU time so far: the
// benchmark's clients, the scripted model and the sampler.
func selfCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuByBackend is the server's CPU since before (serverCPU's figures) by
// kind of process: its backend type, and for client backends whether
// the connection LISTENs (a worker's notification connection) or not;
// in cores over elapsed, with the number of processes and how many of
// them started since before.
func cpuByBackend(b *testing.B, db *sql.DB, before map[int]backendCPU, elapsed time.Duration) string {
	b.Helper()
	rows, err := db.Query(`SELECT pid, backend_type, COALESCE(query, ''), application_name = '` + benchApp + `' FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
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
		var bench bool
		if err := rows.Scan(&pid, &typ, &q, &bench); err != nil {
			b.Fatal(err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			continue
		}
		k := typ
		switch {
		case bench:
			k += " (the benchmark's)"
		case typ == "client backend" && strings.HasPrefix(q, "LISTEN"):
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
		a.cpu += processCPU(b, pid) - t0.cpu
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

// profileWorker starts fetching w's CPU profile over two seconds into
// dir (nothing when dir is ""); the func it returns waits for the file.
func profileWorker(b *testing.B, w *daemon, dir, name string) func() {
	if dir == "" {
		return func() {}
	}
	var perf *exec.Cmd
	if path, err := exec.LookPath("perf"); err == nil {
		// The whole machine's CPU over the same two seconds, by process
		// and symbol: PostgreSQL's backends, the workers and this process.
		perf = exec.Command(path, "record", "-a", "-g", "-F", "499", "-o", filepath.Join(dir, "perf-"+name+".data"), "--", "sleep", "2")
		if err := perf.Start(); err != nil {
			b.Logf("perf record: %v", err)
			perf = nil
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if perf != nil {
			defer func() {
				if err := perf.Wait(); err != nil {
					b.Logf("perf record: %v", err)
				}
			}()
		}
		resp, err := http.Get(w.url + "/v1/dev/pprof/profile?seconds=2")
		if err != nil {
			b.Errorf("profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "cpu-"+name+".pprof"), raw, 0o644)
		}
		if err != nil {
			b.Errorf("profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}

// runPhases is, over the last n runs, each event's mean time from its
// run's start and the finish's: where a run's time beyond the model call
// goes. run.queued comes before the start (negative: the queue wait).
func runPhases(b *testing.B, db *sql.DB, n int) string {
	b.Helper()
	var out strings.Builder
	each(b, db, fmt.Sprintf(`WITH r AS (SELECT id, created_at c, started_at s, finished_at f FROM runs ORDER BY seq DESC LIMIT %d)
		SELECT e.name, count(*), avg(e.created_at - r.s) FROM events e JOIN r ON e.run_id = r.id GROUP BY e.name
		UNION ALL SELECT '(finished_at)', count(*), avg(f - s) FROM r
		ORDER BY 3`, n), func(rows *sql.Rows) error {
		var name string
		var count int64
		var at float64
		if err := rows.Scan(&name, &count, &at); err != nil {
			return err
		}
		fmt.Fprintf(&out, "  %-24s %5d  %7.1f\n", name, count, at)
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
