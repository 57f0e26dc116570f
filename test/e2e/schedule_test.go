package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/scheduler"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/test/daemontest"
)

// testClock is the scheduler's time in these tests: it moves only when the
// test says so.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// schedRig is a real delta daemon (scripted model) whose schedule tools
// point at an in-process delta scheduler on loopback HTTP, its own SQLite
// file and a test clock; the scheduler fires into the daemon.
type schedRig struct {
	d     *daemon
	s     *scheduler.Scheduler
	st    *store.Schedules
	clock *testClock
	fake  *modeltest.Server
}

// scheduleScript: a request mentioning "every hour" makes the model call
// schedule_create; the tool's result is echoed as the answer; any other
// task (a firing) is answered "build checked".
func scheduleScript(req modeltest.ChatRequest) modeltest.Reply {
	var task, result string // the newest user message that is not a block Delta added; a tool result after it
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && !strings.HasPrefix(strings.TrimSpace(m.Content), "<"):
			task, result = m.Content, ""
		case m.Role == "tool":
			result = m.Content
		}
	}
	switch {
	case result != "":
		return modeltest.TextReply("done: " + result)
	case strings.Contains(task, "every hour"):
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_sched", Name: "schedule_create",
			Arguments: `{"kind":"interval","every_seconds":3600,"input":"check the build"}`})
	default:
		return modeltest.TextReply("build checked")
	}
}

func newSchedRig(t *testing.T, start time.Time) *schedRig {
	t.Helper()
	st, err := store.OpenSchedules(context.Background(), filepath.Join(t.TempDir(), "scheduler.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &schedRig{st: st, clock: &testClock{t: start}}
	// The scheduler's server starts first (the daemon needs its URL); it
	// learns the daemon's URL before anything fires.
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { handler.ServeHTTP(w, req) }))
	t.Cleanup(srv.Close)
	r.fake = startScript(t, scheduleScript)
	r.d = newDaemon(t, r.fake, "DELTA_CONTROL_URL="+srv.URL, "DELTA_AGENT_ID=agent-1")
	r.s = scheduler.New(st, scheduler.Options{Token: r.d.token, DaemonURL: r.d.url, DaemonToken: r.d.token, Now: r.clock.Now})
	handler = r.s.Handler()
	return r
}

// as calls the daemon as owner.
func (r *schedRig) as(t *testing.T, owner, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, r.d.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.d.token)
	req.Header.Set("Content-Type", "application/json")
	if owner != "" {
		req.Header.Set("X-Delta-User", owner)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func (r *schedRig) waitDone(t *testing.T, owner, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var m map[string]any
	for time.Now().Before(deadline) {
		_, m = r.as(t, owner, "GET", "/v1/tasks/"+id, "")
		if s, _ := m["status"].(string); s != "queued" && s != "running" {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s never finished: %v\n%s", id, m, r.d.logText())
	return nil
}

func (r *schedRig) tick(t *testing.T, at time.Time) {
	t.Helper()
	r.clock.Set(at)
	if err := r.s.Tick(context.Background()); err != nil {
		t.Fatalf("tick at %s: %v", at, err)
	}
}

func (r *schedRig) firings(t *testing.T, id string) []store.FiringRow {
	t.Helper()
	fs, err := r.st.Firings(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestAgentSchedulesAndIntervalFiresOnTime: the agent's schedule_create
// call creates alice's schedule on the scheduler; with the test clock the
// interval fires exactly at each period, not before, each firing a run in
// the daemon for alice in the session that asked.
func TestAgentSchedulesAndIntervalFiresOnTime(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newSchedRig(t, t0)
	status, m := r.as(t, "alice", "POST", "/v1/tasks", `{"input":"every hour, check the build"}`)
	if status != 202 {
		t.Fatalf("submit: %d %v", status, m)
	}
	asked := r.waitDone(t, "alice", m["id"].(string))
	if out, _ := json.Marshal(asked["result"]); !strings.Contains(string(out), "scheduled sch_") {
		t.Fatalf("the agent's run did not schedule: %s\n%s", out, r.d.logText())
	}
	if !r.fake.Requests()[0].HasTool("schedule_create") {
		t.Fatal("schedule_create was not offered")
	}
	rows, err := r.st.OwnedSchedules(context.Background(), "alice", "agent-1")
	if err != nil || len(rows) != 1 {
		t.Fatalf("alice's schedules: %+v, %v", rows, err)
	}
	sch := rows[0]
	if sch.Kind != "interval" || sch.EverySeconds != 3600 || sch.Input != "check the build" || sch.PreviousResponseID != m["id"] {
		t.Fatalf("stored schedule %+v", sch)
	}
	r.tick(t, t0.Add(59*time.Minute+59*time.Second))
	if fs := r.firings(t, sch.ID); len(fs) != 0 {
		t.Fatalf("fired early: %+v", fs)
	}
	var tasks []string
	for k := 1; k <= 3; k++ {
		slot := t0.Add(time.Duration(k) * time.Hour)
		r.tick(t, slot)
		r.tick(t, slot.Add(30*time.Minute)) // between slots: nothing more
		fs := r.firings(t, sch.ID)
		if len(fs) != k {
			t.Fatalf("after period %d: %d firings: %+v", k, len(fs), fs)
		}
		f := fs[k-1]
		if !f.Slot.Equal(slot) || f.State != store.FiringDone || f.TaskID == "" || f.Key != schedule.FireKey(sch.ID, slot) {
			t.Fatalf("firing %d: %+v, want done for %s", k, f, slot)
		}
		run := r.waitDone(t, "alice", f.TaskID)
		if run["status"] != "done" || run["session_id"] != asked["session_id"] {
			t.Fatalf("fired run %v: want completed in session %v", run, asked["session_id"])
		}
		if status, _ := r.as(t, "bob", "GET", "/v1/tasks/"+f.TaskID, ""); status != 404 {
			t.Fatalf("bob reads alice's fired run: %d", status)
		}
		tasks = append(tasks, f.TaskID)
	}
	slices.Sort(tasks)
	if len(slices.Compact(tasks)) != 3 {
		t.Fatalf("firings share a run: %v", tasks)
	}
}

// TestOneTimeScheduleFiresOnce: created through the REST surface, it fires
// at its instant and never again; re-sending its firing names the same run.
func TestOneTimeScheduleFiresOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newSchedRig(t, t0)
	sch := r.createREST(t, `{"kind":"once","at":"2026-12-01T12:00:00+01:00","input":"remind me"}`)
	r.tick(t, t0.Add(59*time.Minute))
	r.tick(t, t0.Add(time.Hour))
	r.tick(t, t0.Add(2*time.Hour))
	r.tick(t, t0.Add(48*time.Hour))
	fs := r.firings(t, sch)
	if len(fs) != 1 || !fs[0].Slot.Equal(t0.Add(time.Hour)) || fs[0].State != store.FiringDone {
		t.Fatalf("firings %+v, want one at 11:00Z", fs)
	}
	run := r.waitDone(t, "", fs[0].TaskID)
	if run["status"] != "done" {
		t.Fatalf("fired run %v", run)
	}
	row, err := r.st.ScheduleByID(context.Background(), sch)
	if err != nil || row.Status != schedule.StatusDone || !row.NextFireAt.IsZero() {
		t.Fatalf("schedule after firing: %+v, %v", row, err)
	}
	// The daemon dedupes the firing's key: a re-sent firing is the same run.
	status, m := r.as(t, "", "POST", "/v1/tasks", `{"input":"remind me","idempotency_key":"`+fs[0].Key+`","idempotency_terminal":true}`)
	if status/100 != 2 || m["id"] != fs[0].TaskID {
		t.Fatalf("re-sent firing: %d %v, want %s", status, m, fs[0].TaskID)
	}
}

func (r *schedRig) createREST(t *testing.T, body string) string {
	t.Helper()
	req := httptest.NewRequest("POST", schedule.Path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.d.token)
	rec := httptest.NewRecorder()
	r.s.Handler().ServeHTTP(rec, req)
	var s schedule.Schedule
	if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &s) != nil {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	return s.ID
}

// TestNoControlPlaneNoScheduleTools: without DELTA_CONTROL_URL the daemon
// offers no schedule tool.
func TestNoControlPlaneNoScheduleTools(t *testing.T) {
	d := newDaemon(t, startFake(t))
	_, m := d.call("GET", "/v1/status", "")
	b, _ := json.Marshal(m)
	if !strings.Contains(string(b), `"write_file"`) || strings.Contains(string(b), "schedule_create") {
		t.Fatalf("status tools: %s", b)
	}
}

// TestFiringWaitsForADaemonThatIsDown: a firing the daemon cannot take is
// kept and re-sent with backoff, and delivered once the daemon is back; a
// firing the daemon refuses outright (it names a conversation the daemon
// does not have) is given up with the daemon's reason, and the schedule
// carries on.
func TestFiringWaitsForADaemonThatIsDown(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newSchedRig(t, t0)
	up := r.createREST(t, `{"kind":"interval","every_seconds":60,"input":"ping"}`)
	refused := r.createREST(t, `{"kind":"interval","every_seconds":60,"input":"ping","previous_response_id":"resp_missing"}`)
	r.d.stop()
	slot := t0.Add(time.Minute)
	r.tick(t, slot)
	fs := r.firings(t, up)
	if len(fs) != 1 || fs[0].State != store.FiringIntended || fs[0].Attempts != 1 || fs[0].LastError == "" {
		t.Fatalf("with the daemon down: %+v", fs)
	}
	r.tick(t, slot.Add(500*time.Millisecond)) // before the backoff: not re-sent
	if fs := r.firings(t, up); fs[0].Attempts != 1 {
		t.Fatalf("re-sent before its backoff: %+v", fs)
	}
	r.d.start()
	r.tick(t, slot.Add(time.Second))
	fs = r.firings(t, up)
	if len(fs) != 1 || fs[0].State != store.FiringDone || fs[0].TaskID == "" {
		t.Fatalf("after the daemon came back: %+v", fs)
	}
	rf := r.firings(t, refused)
	if len(rf) != 1 || rf[0].State != store.FiringFailed || !strings.Contains(rf[0].LastError, "daemon answered 400: previous_response_id") {
		t.Fatalf("refused firing: %+v", rf)
	}
	r.tick(t, slot.Add(time.Minute))
	if n := len(r.firings(t, refused)); n != 2 {
		t.Fatalf("the refused schedule stopped: %d firings", n)
	}
}

// TestAgentSchedulesThroughTheSchedulerProcess: the shipped command end to
// end: `delta scheduler` as a child process on loopback, the daemon's
// schedule_create call lands in it, and the schedule is still there after
// the scheduler restarts.
func TestAgentSchedulesThroughTheSchedulerProcess(t *testing.T) {
	dir := t.TempDir()
	port := daemontest.FreePort(t)
	schedURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	fake := startScript(t, scheduleScript)
	d := newDaemon(t, fake, "DELTA_CONTROL_URL="+schedURL, "DELTA_AGENT_ID=agent-1")
	start := func() *exec.Cmd {
		cmd := exec.Command(deltaBin, "scheduler", "--db", filepath.Join(dir, "scheduler.db"), "--listen", fmt.Sprintf("127.0.0.1:%d", port))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DELTA_CONTROL_TOKEN=" + d.token, "DELTA_URL=" + d.url}
		log, err := os.Create(filepath.Join(dir, "scheduler.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); log.Close() })
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if resp, err := http.Get(schedURL + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return cmd
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("delta scheduler never became healthy")
		return nil
	}
	list := func() schedule.List {
		req, _ := http.NewRequest("GET", schedURL+schedule.Path, nil)
		req.Header.Set("Authorization", "Bearer "+d.token)
		req.Header.Set(schedule.HeaderUser, "alice")
		req.Header.Set(schedule.HeaderAgent, "agent-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l schedule.List
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&l) != nil {
			t.Fatalf("list: %d", resp.StatusCode)
		}
		return l
	}
	cmd := start()
	r := &schedRig{d: d}
	status, m := r.as(t, "alice", "POST", "/v1/tasks", `{"input":"every hour, check the build"}`)
	if status != 202 {
		t.Fatalf("submit: %d %v", status, m)
	}
	if run := r.waitDone(t, "alice", m["id"].(string)); run["status"] != "done" {
		t.Fatalf("run %v", run)
	}
	l := list()
	if len(l.Data) != 1 || l.Data[0].Kind != schedule.Interval || l.Data[0].Owner != "alice" || l.Data[0].Agent != "agent-1" || l.Data[0].NextFireAt == nil {
		t.Fatalf("schedules %+v", l.Data)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	start()
	if again := list(); len(again.Data) != 1 || again.Data[0].ID != l.Data[0].ID {
		t.Fatalf("after a restart: %+v", again.Data)
	}
}

// TestScheduleDoesNotOverlapItsRunningTask: on a real daemon, a schedule
// every minute whose run takes longer than a minute (its model call is
// held) is not fired again while that run is running; once it has finished
// the schedule fires once, for the latest slot, counting the slot it
// skipped — the daemon holds two runs for three slots, one after the other.
func TestScheduleDoesNotOverlapItsRunningTask(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := newSchedRig(t, t0)
	sch := r.createREST(t, `{"kind":"interval","every_seconds":60,"input":"check the build"}`)
	r.fake.Hold()
	r.tick(t, t0.Add(time.Minute))
	fs := r.firings(t, sch)
	if len(fs) != 1 || fs[0].State != store.FiringDone {
		t.Fatalf("first slot: %+v", fs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.fake.WaitCalls(ctx, 1); err != nil {
		t.Fatalf("the fired run never called the model: %v\n%s", err, r.d.logText())
	}
	if _, m := r.as(t, "", "GET", "/v1/tasks/"+fs[0].TaskID, ""); m["status"] != "running" {
		t.Fatalf("fired run %v, want running", m)
	}
	r.tick(t, t0.Add(2*time.Minute))
	r.tick(t, t0.Add(3*time.Minute))
	if fs := r.firings(t, sch); len(fs) != 1 {
		t.Fatalf("fired while its previous run was running: %+v", fs)
	}
	r.fake.Release()
	if run := r.waitDone(t, "", fs[0].TaskID); run["status"] != "done" {
		t.Fatalf("first run %v", run)
	}
	r.fake.Hold()
	r.tick(t, t0.Add(3*time.Minute+10*time.Second))
	fs = r.firings(t, sch)
	if len(fs) != 2 || !fs[1].Slot.Equal(t0.Add(3*time.Minute)) || fs[1].Skipped != 1 || fs[1].State != store.FiringDone {
		t.Fatalf("after the run ended: %+v, want one more firing, for 10:03, skipping 10:02", fs)
	}
	// Cancelled while that run is in flight: the run finishes, the
	// schedule fires no more.
	if err := r.fake.WaitCalls(ctx, 2); err != nil {
		t.Fatalf("the second run never called the model: %v", err)
	}
	req := httptest.NewRequest("DELETE", schedule.Path+"/"+sch, nil)
	req.Header.Set("Authorization", "Bearer "+r.d.token)
	rec := httptest.NewRecorder()
	r.s.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"cancelled"`) {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	r.fake.Release()
	if run := r.waitDone(t, "", fs[1].TaskID); run["status"] != "done" {
		t.Fatalf("second run %v", run)
	}
	r.tick(t, t0.Add(10*time.Minute))
	if fs := r.firings(t, sch); len(fs) != 2 {
		t.Fatalf("fired after it was cancelled: %+v", fs)
	}
}
