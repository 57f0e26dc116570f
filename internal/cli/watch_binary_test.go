package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/daemontest"
)

// serveProc is one `delta serve` process; successive ones share the port
// and the database.
type serveProc struct {
	t    *testing.T
	env  []string
	port string
	proc *daemontest.Process
	log  *daemontest.Output
}

// startServeProc initialises a workspace in a temporary home and starts
// `delta serve` on a free port with the scripted demo model at modelURL,
// under the lease holder name given; extra adds environment. The process
// is killed when the test ends.
func startServeProc(t *testing.T, holder, modelURL string, extra ...string) *serveProc {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if r := runBin(t, cleanEnv(), "init", ws); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	port := strconv.Itoa(testPort(t))
	env := append([]string{"PORT=" + port, "HOME=" + dir,
		"DELTA_DB=" + filepath.Join(dir, "delta.db"), "DELTA_WORKSPACE=" + ws, "DELTA_LEASE_HOLDER=" + holder,
		"MODEL_BASE_URL=" + modelURL, "MODEL_API_KEY=k", "DELTA_MODEL_PRIMARY=scripted/demo"}, extra...)
	d := &serveProc{t: t, port: port, env: cleanEnv(env...)}
	d.start()
	t.Cleanup(d.kill)
	return d
}

func (s *serveProc) start() {
	s.t.Helper()
	s.log = &daemontest.Output{}
	s.proc = daemontest.Start(s.t, s.log, s.env, deltaBin, "serve")
	s.proc.WaitHealthy(s.t, "http://127.0.0.1:"+s.port, time.Minute, s.log.String)
}

func (s *serveProc) kill() {
	if s.proc == nil {
		return
	}
	s.proc.Kill9()
	s.proc = nil
}

// postTask creates a task and returns its id.
func (s *serveProc) postTask(text string) string {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"input": text})
	resp, err := http.Post("http://127.0.0.1:"+s.port+"/v1/tasks", "application/json", strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var task struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&task); err != nil || resp.StatusCode != http.StatusAccepted {
		s.t.Fatalf("POST /v1/tasks: %d %v", resp.StatusCode, err)
	}
	return task.ID
}

func (s *serveProc) waitDone(id string) {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://127.0.0.1:" + s.port + "/v1/tasks/" + id)
		if err == nil {
			var task struct{ Status string }
			_ = json.NewDecoder(resp.Body).Decode(&task)
			resp.Body.Close()
			if task.Status == "done" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("task %s not done within a minute:\n%s", id, s.log.String())
}

// storedIDs reads every durable event id the daemon holds, in order.
func (s *serveProc) storedIDs() []int64 {
	s.t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + s.port + "/v1/dev/stream?since=0&live=0")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				s.t.Fatalf("stream id %q", v)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

// TestWatchBinarySurvivesDaemonRestart runs the real binaries: a daemon,
// `delta watch` on it, then the daemon SIGKILLed with a run in flight and
// started again on the same port and database. The watch must print every
// durable event exactly once, in order — those from before the kill, those
// written while it was away (the run's resume) and those after.
func TestWatchBinarySurvivesDaemonRestart(t *testing.T) {
	requireDaemon(t)
	fake := modeltest.Serve(t, modeltest.DemoScript())
	d := startServeProc(t, "watch-test", fake.URL())
	port := d.port

	var out, errb daemontest.Output
	watch := exec.Command(deltaBin, "watch", "--port", port)
	watch.Env = cleanEnv()
	watch.Stdout, watch.Stderr = &out, &errb
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	watchExit := make(chan error, 1)
	go func() { watchExit <- watch.Wait() }()
	t.Cleanup(func() { _ = watch.Process.Kill() })

	first := d.postTask("Write a.md about the otter survey.")
	d.waitDone(first)
	// The kill must find watch connected: wait until it has printed the run.
	waitFor(t, &out, `"name":"run.finished","time"`, "watch never printed the first run's end")

	// A run in flight when the daemon dies: the model holds its call.
	fake.Hold()
	before := fake.Calls()
	held := d.postTask("Write b.md about the heron count.")
	if err := fake.WaitCalls(context.Background(), before+1); err != nil {
		t.Fatal(err)
	}
	d.kill()
	fake.Release()
	// Restart only once watch has noticed and failed to reconnect twice,
	// so the run's resume is written while it is away.
	deadline := time.Now().Add(time.Minute)
	for strings.Count(errb.String(), "reconnecting in") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("watch printed no reconnect notices; stderr:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.start()
	d.waitDone(held)
	last := d.postTask("Write c.md about the beaver dams.")
	d.waitDone(last)

	want := d.storedIDs()
	waitFor(t, &out, fmt.Sprintf(`"id":%d,`, want[len(want)-1]), "watch never printed the last stored event\nstderr:\n"+errb.String())
	if err := watch.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := <-watchExit; err != nil {
		t.Fatalf("watch after Ctrl-C: %v\nstderr:\n%s", err, errb.String())
	}

	var got []int64
	names := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct {
			ID    int64  `json:"id"`
			Name  string `json:"name"`
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch line %q is not a JSON event: %v", line, err)
		}
		if ev.ID != 0 {
			got = append(got, ev.ID)
			names[ev.ID] = ev.Name + " " + ev.RunID
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("watch printed durable ids\n%v\nwant every stored id once, in order\n%v\nstderr:\n%s", got, want, errb.String())
	}
	resumed := false
	for _, n := range names {
		resumed = resumed || n == "run.resumed "+held
	}
	if !resumed {
		t.Fatalf("the held run's run.resumed is not among the printed events: %v", names)
	}
	if n := strings.Count(errb.String(), "\n"); n < 3 || !strings.Contains(errb.String(), "delta: watch: ") {
		t.Fatalf("stderr %q, want one notice line per reconnect attempt", errb.String())
	}
}

// waitFor waits up to a minute for s to appear in b.
func waitFor(t *testing.T, b *daemontest.Output, s, msg string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s; output:\n%s", msg, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
