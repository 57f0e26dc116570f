// Package e2e runs the real delta binary as a child process on loopback,
// against the scripted fake model endpoint, and checks what a user would:
// artifacts on disk, API answers, streaming, task lifecycle, cancel, and
// survival of kill -9 in the middle of a model call.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/test/daemontest"
)

var deltaBin string

func TestMain(m *testing.M) {
	os.Exit(daemontest.Main(m, "delta-e2e-bin", daemontest.Binary{Path: &deltaBin, Name: "delta"}))
}

// daemon is one running delta process.
type daemon struct {
	t     testing.TB
	proc  *daemontest.Process
	url   string
	env   []string
	dir   string
	token string
}

// newDaemon prepares a workspace and database in a temp dir and starts delta
// pointed at the fake model.
func newDaemon(t testing.TB, fake *modeltest.Server, extra ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	daemontest.Init(t, deltaBin, filepath.Join(dir, "ws"))
	port := daemontest.FreePort(t)
	d := &daemon{t: t, dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port), token: "test-control-token"}
	d.env = append(daemontest.Env(dir, port, fake.URL(), d.token),
		"OPENAI_API_KEY=must-never-be-read",
		"OPENAI_BASE_URL=http://127.0.0.1:1/never",
	)
	d.env = append(d.env, extra...)
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) start() {
	d.t.Helper()
	log := daemontest.OpenLog(d.t, filepath.Join(d.dir, "daemon.log"), false)
	d.proc = daemontest.Start(d.t, log, d.env, deltaBin, "serve")
	d.proc.WaitHealthy(d.t, d.url, 20*time.Second, d.logText)
}

func (d *daemon) logText() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "daemon.log"))
	return string(b)
}

// openStore opens the daemon's database, which SQLite lets a test read
// while the daemon runs; it is closed when the test ends.
func (d *daemon) openStore() *store.Store {
	d.t.Helper()
	st, err := store.Open(context.Background(), daemontest.DBPath(d.dir))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { st.Close() })
	return st
}

// countEvents counts the events stored in st by key (an event whose key
// is "" is not counted).
func countEvents(t *testing.T, st *store.Store, key func(event.Event) string) map[string]int {
	t.Helper()
	evs, err := st.Events(context.Background(), store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range evs {
		if k := key(e); k != "" {
			n[k]++
		}
	}
	return n
}

func (d *daemon) kill9() { d.proc.Kill9() }

func (d *daemon) stop() {
	if d.proc != nil {
		d.proc.Stop(10 * time.Second)
	}
}

func (d *daemon) call(method, path, body string) (int, map[string]any) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		d.t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func (d *daemon) waitStatus(id string, want ...string) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last map[string]any
	for time.Now().Before(deadline) {
		_, last = d.call("GET", "/v1/tasks/"+id, "")
		for _, w := range want {
			if last["status"] == w {
				return last
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	d.t.Fatalf("task %s never reached %v: %v\nlog:\n%s", id, want, last, d.logText())
	return nil
}

// startScript serves script on loopback until the test ends.
func startScript(t testing.TB, script modeltest.Script) *modeltest.Server {
	t.Helper()
	fake := modeltest.Serve(t, script)
	return fake
}

func startFake(t testing.TB) *modeltest.Server {
	fake := startScript(t, modeltest.DemoScript())
	fake.RequireKey("fake-key")
	return fake
}

func TestWriteFileRunProducesArtifactAndContinues(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake)
	s, first := d.call("POST", "/v1/responses", `{"input":"Write a brief about the otter survey."}`)
	if s != 200 || first["status"] != "completed" {
		t.Fatalf("first run: %d %v\nlog:\n%s", s, first, d.logText())
	}
	entries, _ := filepath.Glob(filepath.Join(d.dir, "ws", "*.md"))
	var artifact string
	for _, e := range entries {
		b, _ := os.ReadFile(e)
		if strings.Contains(string(b), "otter survey") {
			artifact = e
		}
	}
	if artifact == "" {
		t.Fatalf("no artifact mentioning the request in %v; answer %q", entries, first["output_text"])
	}
	if !strings.Contains(first["output_text"].(string), filepath.Base(artifact)) {
		t.Fatalf("answer %q does not name the artifact %s", first["output_text"], filepath.Base(artifact))
	}
	s, next := d.call("POST", "/v1/responses", `{"input":"Now a second brief about herons.","previous_response_id":"`+first["id"].(string)+`"}`)
	if s != 200 || next["status"] != "completed" || next["previous_response_id"] != first["id"] {
		t.Fatalf("continuation: %d %v", s, next)
	}
	// The model saw the first turn: the continuation request carries it.
	reqs := fake.Requests()
	lastReq := reqs[len(reqs)-1]
	sawFirst := false
	for _, m := range lastReq.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "otter survey") {
			sawFirst = true
		}
	}
	if !sawFirst {
		t.Fatalf("continuation request lacks the first turn")
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer fake-key" {
			t.Fatalf("model request authorization %q: a stray OPENAI_API_KEY must never be used", got)
		}
	}
}

func TestStreamingDeltasThenCompleted(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake)
	req, _ := http.NewRequest("POST", d.url+"/v1/responses", strings.NewReader(`{"input":"Write a brief about streams.","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var types []string
	var deltas string
	var final map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		types = append(types, f["type"].(string))
		if f["type"] == "response.output_text.delta" {
			deltas += f["delta"].(string)
		}
		if f["type"] == "response.completed" {
			final = f["response"].(map[string]any)
		}
	}
	if len(types) < 3 || types[len(types)-1] != "response.completed" || types[1] != "response.output_text.delta" {
		t.Fatalf("frame types %v", types)
	}
	if final["status"] != "completed" || !strings.Contains(deltas, final["output_text"].(string)) {
		t.Fatalf("deltas %q vs final %v", deltas, final["output_text"])
	}
}

func TestTaskLifecycle(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake)
	s, ack := d.call("POST", "/v1/tasks", `{"input":"Write a brief about queues."}`)
	if s != 202 || ack["object"] != "task" || ack["status"] != "queued" || !strings.HasPrefix(ack["id"].(string), "resp_") {
		t.Fatalf("ack: %d %v", s, ack)
	}
	v := d.waitStatus(ack["id"].(string), "done", "failed", "cancelled")
	if v["status"] != "done" {
		t.Fatalf("task ended %v", v)
	}
	created, _ := time.Parse(time.RFC3339Nano, v["created_at"].(string))
	started, _ := time.Parse(time.RFC3339Nano, v["started_at"].(string))
	finished, _ := time.Parse(time.RFC3339Nano, v["finished_at"].(string))
	if created.IsZero() || started.Before(created) || finished.Before(started) {
		t.Fatalf("lifecycle times out of order: %v", v)
	}
	res := v["result"].(map[string]any)
	if res["status"] != "completed" || res["output_text"] == "" || v["error"] != nil {
		t.Fatalf("result %v error %v", res, v["error"])
	}
}

// heldTask starts a daemon on a fake that holds every model call, sends
// input as a task and returns once the task's first model call is held.
func heldTask(t *testing.T, input string) (*modeltest.Server, *daemon, string) {
	t.Helper()
	fake := startFake(t)
	fake.Hold()
	d := newDaemon(t, fake)
	_, ack := d.call("POST", "/v1/tasks", `{"input":"`+input+`"}`)
	id := ack["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.WaitCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return fake, d, id
}

func TestCancelRunningTask(t *testing.T) {
	fake, d, id := heldTask(t, "Write a brief that never comes.")
	if v := d.waitStatus(id, "running"); v["started_at"] == nil {
		t.Fatalf("running task has no started_at: %v", v)
	}
	if s, v := d.call("DELETE", "/v1/tasks/"+id, ""); s != 200 {
		t.Fatalf("cancel: %d %v", s, v)
	}
	v := d.waitStatus(id, "cancelled", "done", "failed")
	fake.Release()
	if v["status"] != "cancelled" {
		t.Fatalf("status %v", v)
	}
	out := v["result"].(map[string]any)["output_text"].(string)
	if !strings.HasPrefix(out, "[delta:cancelled]") {
		t.Fatalf("cancelled output %q lacks the status marker", out)
	}
}

// TestKillNineDuringModelCall: the daemon dies while a model call is in
// flight; after a restart the acknowledged task finishes, once, and the
// artifact is written once.
func TestKillNineDuringModelCall(t *testing.T) {
	fake, d, id := heldTask(t, "Write a brief about crash recovery.")
	d.kill9()
	fake.Release()
	d.start()
	v := d.waitStatus(id, "done", "failed", "cancelled")
	if v["status"] != "done" {
		t.Fatalf("after restart: %v\nlog:\n%s", v, d.logText())
	}
	_, page := d.call("GET", "/v1/tasks/"+id+"/events?since=0&limit=500", "")
	counts := map[string]int{}
	for _, e := range page["events"].([]any) {
		counts[e.(map[string]any)["name"].(string)]++
	}
	if counts["run.finished"] != 1 || counts["tool.result"] != 1 || counts["run.resumed"] != 1 {
		t.Fatalf("events after crash: %v (want one run.finished, one tool.result, one run.resumed)", counts)
	}
	matches, _ := filepath.Glob(filepath.Join(d.dir, "ws", "*.md"))
	n := 0
	for _, m := range matches {
		b, _ := os.ReadFile(m)
		if strings.Contains(string(b), "crash recovery") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d artifacts mention the request, want 1", n)
	}
}

func TestRestartWithTokenAndBadInput(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake)
	req, _ := http.NewRequest("POST", d.url+"/v1/tasks", strings.NewReader(`{"input":"x"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("no bearer: %d", resp.StatusCode)
	}
	for _, body := range []string{`null`, `42`, `"x"`, `[]`, `{"input":`, `{"input":{}}`} {
		s, m := d.call("POST", "/v1/responses", body)
		if s != 400 || m["error"] == nil {
			t.Fatalf("%s: %d %v", body, s, m)
		}
	}
}

func TestOfficialOpenAIClient(t *testing.T) {
	peer(t, "openai", "the openai npm client")
	fake := startFake(t)
	d := newDaemon(t, fake)
	cmd := exec.Command("node", filepath.Join(peersDir(), "responses.mjs"))
	cmd.Env = append(os.Environ(), "DELTA_URL="+d.url, "DELTA_CONTROL_TOKEN="+d.token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("official client: %v\n%s\nlog:\n%s", err, out, d.logText())
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("client output %s", out)
	}
}

func TestStatusIsSecretFree(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake, "DELTA_REASONING_EFFORT=high")
	req, _ := http.NewRequest("GET", d.url+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	for _, secret := range []string{"fake-key", d.token, fake.URL()} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("/v1/status leaks %q: %s", secret, b)
		}
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status %s: %v", b, err)
	}
	tools := st["tools"].(map[string]any)
	reg := fmt.Sprint(tools["registered"])
	for _, name := range []string{"read_file", "write_file", "grep", "web_fetch", "web_search"} {
		if !strings.Contains(reg, name) {
			t.Fatalf("registered tools %s lack %s", reg, name)
		}
	}
	if _, ok := tools["unusable"].(map[string]any)["web_search"]; !ok {
		t.Fatalf("web_search without EXA_API_KEY must be listed unusable: %v", tools)
	}
	if st["tier"] != "trusted" || st["reasoning_effort"] != "high" || st["model"] != "scripted/demo" {
		t.Fatalf("status %v", st)
	}
}

// TestSameArtifactOnEveryWire runs the same task through the daemon on the
// Chat Completions, Anthropic Messages and OpenAI Responses wires.
func TestSameArtifactOnEveryWire(t *testing.T) {
	var artifacts []string
	for _, api := range []string{"chat", "anthropic", "responses"} {
		t.Run(api, func(t *testing.T) {
			fake := startFake(t)
			d := newDaemon(t, fake, "MODEL_API="+api)
			s, resp := d.call("POST", "/v1/responses", `{"input":"Write a brief about the wire protocols."}`)
			if s != 200 || resp["status"] != "completed" {
				t.Fatalf("%d %v\nlog:\n%s", s, resp, d.logText())
			}
			b, err := os.ReadFile(filepath.Join(d.dir, "ws", "brief.md"))
			if err != nil {
				t.Fatalf("artifact: %v (answer %v)", err, resp["output_text"])
			}
			artifacts = append(artifacts, string(b))
			reqs := fake.Requests()
			if len(reqs) < 2 {
				t.Fatalf("requests %d", len(reqs))
			}
			want := map[string]string{"chat": "/chat/completions", "anthropic": "/messages", "responses": "/responses"}[api]
			if !strings.HasSuffix(reqs[0].Path, want) {
				t.Fatalf("wire %s hit %s", api, reqs[0].Path)
			}
		})
	}
	if len(artifacts) != 3 || artifacts[0] != artifacts[1] || artifacts[1] != artifacts[2] {
		t.Fatalf("artifacts differ across wires: %q", artifacts)
	}
}

func TestSecondDaemonOnSameDatabaseRefused(t *testing.T) {
	fake := startFake(t)
	d := newDaemon(t, fake)
	cmd := exec.Command(deltaBin, "serve")
	env := append([]string{}, d.env...)
	env = append(env, fmt.Sprintf("PORT=%d", daemontest.FreePort(t))) // a different port: only the lock can catch it
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another delta process") {
		t.Fatalf("second daemon: err %v, output %s", err, out)
	}
	if s, _ := d.call("GET", "/v1/busy", ""); s != 200 {
		t.Fatalf("first daemon disturbed: %d", s)
	}
}

// peer is the file at rel under test/peers/node_modules, where
// ./scripts/test installs the npm peers (what names it in the messages).
// Without it the test is skipped, or fails under CI.
func peer(t *testing.T, rel, what string) string {
	t.Helper()
	peers := peersDir()
	p := filepath.Join(peers, "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed in %s: ./scripts/test installs it", what, peers)
		}
		t.Skipf("%s is not installed (run ./scripts/test, which installs it into %s)", what, peers)
	}
	return p
}

// peersDir is test/peers, the npm project of the peers.
func peersDir() string {
	d, _ := filepath.Abs("../peers")
	return d
}
