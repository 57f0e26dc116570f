package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/daemontest"
)

// fakeDaemon is a loopback HTTP server speaking the slice of Delta's API
// that send and watch use. Each test sets the knobs it needs.
type fakeDaemon struct {
	srv *httptest.Server

	control, inspect string   // required bearer tokens ("" = open)
	frames           []string // raw SSE written on /v1/dev/stream
	holdStream       bool     // keep the stream open after the frames
	breakStream      bool     // cut the connection after the frames, mid-stream (the daemon died)
	streamStatus     []int    // status of the nth stream request (0 or past the end = the frames)
	finalStatus      string   // status GET /v1/tasks/{id} reports
	taskError        any
	answer           string         // the finished task's result.output_text
	response         map[string]any // answer of POST /v1/responses
	holdResponse     bool           // POST /v1/responses answers nothing until the client goes away
	createStatus     int            // status of POST /v1/tasks (0 = 202)
	createBody       string         // body of POST /v1/tasks when createStatus is set

	mu      sync.Mutex
	inputs  []string // "input" of each POST
	queries []string // raw query of each stream request
	auth    []string // "METHOD path -> Authorization"
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{finalStatus: "done"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		if !d.authorized(w, r, d.control) {
			return
		}
		d.recordInput(t, r)
		if d.createStatus != 0 {
			w.WriteHeader(d.createStatus)
			io.WriteString(w, d.createBody)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"id":"resp_1","object":"task","status":"queued"}`)
	})
	mux.HandleFunc("GET /v1/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !d.authorized(w, r, d.control) {
			return
		}
		if r.PathValue("id") != "resp_1" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"unknown task"}}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "task", "status": d.finalStatus, "error": d.taskError,
			"result": map[string]any{"output_text": d.answer}})
	})
	mux.HandleFunc("GET /v1/dev/stream", func(w http.ResponseWriter, r *http.Request) {
		if !d.authorized(w, r, d.inspect) {
			return
		}
		d.mu.Lock()
		d.queries = append(d.queries, r.URL.RawQuery)
		n := len(d.queries) - 1
		d.mu.Unlock()
		if n < len(d.streamStatus) && d.streamStatus[n] != 0 {
			w.WriteHeader(d.streamStatus[n])
			io.WriteString(w, `{"error":{"message":"stream refused"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range d.frames {
			io.WriteString(w, f)
		}
		w.(http.Flusher).Flush()
		if d.breakStream {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if d.holdStream {
			<-r.Context().Done()
		}
	})
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		if !d.authorized(w, r, d.control) {
			return
		}
		d.recordInput(t, r)
		if d.holdResponse {
			<-r.Context().Done()
			return
		}
		json.NewEncoder(w).Encode(d.response)
	})
	d.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(d.srv.Close)
	return d
}

// streamQueries is a snapshot of the stream requests' queries so far: the
// handlers may still append to it after a watch returns. (fastWatch's stop
// function runs under d.mu already and reads d.queries itself.)
func (d *fakeDaemon) streamQueries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.queries)
}

func (d *fakeDaemon) authorized(w http.ResponseWriter, r *http.Request, token string) bool {
	d.mu.Lock()
	d.auth = append(d.auth, r.Method+" "+r.URL.Path+" -> "+r.Header.Get("Authorization"))
	d.mu.Unlock()
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"missing or wrong bearer token"}}`)
		return false
	}
	return true
}

func (d *fakeDaemon) recordInput(t *testing.T, r *http.Request) {
	var body struct {
		Input string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		t.Errorf("request body: %v", err)
	}
	d.mu.Lock()
	d.inputs = append(d.inputs, body.Input)
	d.mu.Unlock()
}

func (d *fakeDaemon) port(t *testing.T) string {
	_, p, err := net.SplitHostPort(d.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sseFrame encodes one frame; data lines become separate data: fields.
func sseFrame(id int, name, data string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", id, name, strings.ReplaceAll(data, "\n", "\ndata: "))
}

// runFast runs the command line with a short status poll, so the fallback
// paths finish quickly.
func runFast(t *testing.T, lookup map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), lookup: mapLookup(lookup)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := (&sendCommand{env: e, poll: 20 * time.Millisecond}).Run(ctx, args)
	return out.String(), errb.String(), err
}

func TestSendAsyncPrintsEventsUntilFinished(t *testing.T) {
	d := newFakeDaemon(t)
	d.control, d.inspect = "ctl-secret", "insp-secret"
	d.frames = []string{
		": ping\n\n",
		sseFrame(1, "run.queued", `{"id":1,"run_id":"resp_1","name":"run.queued"}`),
		sseFrame(2, "tool.call", "{\"name\":\"write_file\",\n \"arguments\":{\"path\":\"brief.md\"}}"),
		sseFrame(3, "run.finished", `{"status":"done"}`),
		sseFrame(4, "after.finish", `{"never":"printed"}`),
	}
	out, stderr, err := runFast(t, map[string]string{"DELTA_CONTROL_TOKEN": "ctl-secret", "DELTA_INSPECT_TOKEN": "insp-secret"},
		"--port", d.port(t), "Write brief.md")
	if err != nil {
		t.Fatalf("send: %v (stderr %q)", err, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("stdout has %d lines, want 3 (stop at run.finished):\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line is not JSON: %q", l)
		}
	}
	if lines[0] != `{"id":1,"run_id":"resp_1","name":"run.queued"}` {
		t.Errorf("a self-describing event is printed as is; got %s", lines[0])
	}
	if lines[1] != `{"id":2,"event":"tool.call","data":{"name":"write_file","arguments":{"path":"brief.md"}}}` {
		t.Errorf("a bare payload is wrapped with its event name; got %s", lines[1])
	}
	if !strings.Contains(lines[2], `"run.finished"`) || !strings.Contains(lines[2], `"status":"done"`) {
		t.Errorf("last line = %s, want run.finished", lines[2])
	}
	if !strings.Contains(stderr, "task resp_1 queued") {
		t.Errorf("stderr %q should name the task", stderr)
	}
	if len(d.inputs) != 1 || d.inputs[0] != "Write brief.md" {
		t.Errorf("task input = %q", d.inputs)
	}
	if q := d.streamQueries(); len(q) != 1 || !strings.Contains(q[0], "run=resp_1") || !strings.Contains(q[0], "since=0") {
		t.Errorf("stream query = %q, want run=resp_1 and since=0", q)
	}
}

// TestSendIsReadableOnATerminal: on a terminal the events read as the demo
// prints them and the answer follows; --jsonl keeps JSON Lines there.
func TestSendIsReadableOnATerminal(t *testing.T) {
	d := newFakeDaemon(t)
	d.answer = "I wrote brief.md."
	d.frames = []string{
		sseFrame(1, "run.queued", `{"id":1,"run_id":"resp_1","name":"run.queued"}`),
		sseFrame(2, "tool.call", `{"name":"write_file","arguments":{"path":"brief.md"}}`),
		sseFrame(3, "output_text.delta", `{"delta":"I wrote"}`),
		sseFrame(4, "run.finished", `{"status":"done"}`),
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		e := env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), lookup: mapLookup(nil)}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := &sendCommand{env: e, poll: 20 * time.Millisecond, terminal: func(io.Writer) bool { return true }}
		if err := cmd.Run(ctx, append([]string{"--port", d.port(t)}, args...)); err != nil {
			t.Fatalf("send %v: %v (stderr %q)", args, err, errb.String())
		}
		return out.String()
	}
	out := run("Write brief.md")
	for _, want := range []string{"  run.queued     accepted; the queue row is durable\n", "  tool.call      write_file brief.md\n",
		"  run.finished   done\n", "\nI wrote brief.md.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "{") || strings.Contains(out, "output_text.delta") {
		t.Errorf("terminal output has JSON or deltas:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimRight(run("--jsonl", "Write brief.md"), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("--jsonl line is not JSON: %q", l)
		}
	}
}

func TestSendAsyncStatusDecidesExit(t *testing.T) {
	tests := []struct {
		name      string
		status    string
		taskError any
		frames    []string
		hold      bool
		wantErr   string // "" = success
	}{
		{"done", "done", nil, []string{sseFrame(1, "run.finished", `{"status":"done"}`)}, false, ""},
		{"failed with a string error", "failed", "provider said no",
			[]string{sseFrame(1, "run.finished", `{"status":"failed"}`)}, false, `status "failed": provider said no`},
		{"cancelled with an object error", "cancelled", map[string]string{"message": "cancelled by user"},
			[]string{sseFrame(1, "run.finished", `{"status":"cancelled"}`)}, false, `status "cancelled": cancelled by user`},
		{"stream closes early, task done", "done", nil, []string{sseFrame(1, "run.started", `{}`)}, false, ""},
		{"stream never says finished, task failed", "failed", "crashed", []string{sseFrame(1, "run.started", `{}`)}, true, `"failed": crashed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.finalStatus, d.taskError, d.frames, d.holdStream = tt.status, tt.taskError, tt.frames, tt.hold
			_, _, err := runFast(t, nil, "--port", d.port(t), "hello")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("send: %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != 1 {
				t.Fatalf("send: %v (exit %d), want exit 1 with %q", err, ExitCode(err), tt.wantErr)
			}
		})
	}
}

func TestSendSync(t *testing.T) {
	tests := []struct {
		name     string
		response map[string]any
		wantOut  string
		wantErr  string
	}{
		{"completed prints only output_text", map[string]any{"id": "resp_9", "status": "completed", "output_text": "Five bullets.\n", "output": []any{}},
			"Five bullets.\n", ""},
		{"failed prints the text and exits non-zero", map[string]any{"id": "resp_9", "status": "failed", "output_text": "[delta: failed] budget exhausted", "error": map[string]any{"message": "budget"}},
			"[delta: failed] budget exhausted\n", `response resp_9 ended with status "failed": budget`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.control = "ctl"
			d.inspect = "must-not-be-needed"
			d.response = tt.response
			out, _, err := runFast(t, map[string]string{"DELTA_CONTROL_TOKEN": "ctl"}, "--json", "--port", d.port(t), "Summarize brief.md")
			if out != tt.wantOut {
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("send --json: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("send --json: %v, want %q", err, tt.wantErr)
			}
			if len(d.inputs) != 1 || d.inputs[0] != "Summarize brief.md" {
				t.Errorf("inputs = %q", d.inputs)
			}
		})
	}
}

// TestSendSyncInterrupted: Ctrl-C while `delta send --json` waits for the
// answer says that the run goes on in the daemon, not "context canceled".
func TestSendSyncInterrupted(t *testing.T) {
	d := newFakeDaemon(t)
	d.holdResponse = true
	ctx, cancel := context.WithCancel(context.Background())
	e := env{stdout: io.Discard, stderr: io.Discard, lookup: mapLookup(nil)}
	done := make(chan error, 1)
	go func() {
		done <- (&sendCommand{env: e}).Run(ctx, []string{"--json", "--port", d.port(t), "a long task"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.mu.Lock()
		n := len(d.inputs)
		d.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("send --json never posted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "send: interrupted before the answer; the run keeps going in the daemon") || strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("send --json interrupted: %v", err)
	}
}

// TestSendDaemonGoneMidStream: the daemon dying while `delta send`
// follows its task ends send with the task id and what becomes of the
// task, not a bare read error.
func TestSendDaemonGoneMidStream(t *testing.T) {
	d := newFakeDaemon(t)
	d.frames = []string{sseFrame(1, "run.queued", `{}`)}
	d.breakStream = true
	_, _, err := runFast(t, nil, "--jsonl", "--port", d.port(t), "a long task")
	want := "send: lost the daemon while following task resp_1 (read event stream: unexpected EOF); the task is stored and resumes when the daemon restarts"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("send: %v, want %q", err, want)
	}
}

// TestSendWithoutTheEventStream: a daemon whose event stream this shell
// may not read (inspection off: 404; no inspect token: 401) still runs the
// task; send says it cannot follow the events, waits for the task's
// status, prints the answer and exits by that status.
func TestSendWithoutTheEventStream(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized} {
		for _, final := range []string{"done", "failed"} {
			d := newFakeDaemon(t)
			d.streamStatus = []int{status}
			d.finalStatus, d.answer = final, "I wrote brief.md."
			var out, errb bytes.Buffer
			e := env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), lookup: mapLookup(nil)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := &sendCommand{env: e, poll: 20 * time.Millisecond, terminal: func(io.Writer) bool { return true }}
			err := cmd.Run(ctx, []string{"--port", d.port(t), "Write brief.md"})
			cancel()
			if !strings.Contains(errb.String(), "cannot follow the events") || !strings.Contains(errb.String(), "waiting for task resp_1 to end") {
				t.Errorf("stream %d: stderr %q, want the note that send waits for the status", status, errb.String())
			}
			switch {
			case final == "done" && (err != nil || !strings.Contains(out.String(), "I wrote brief.md.")):
				t.Errorf("stream %d, task done: %v, stdout %q; want success and the answer", status, err, out.String())
			case final == "failed" && (err == nil || !strings.Contains(err.Error(), `task resp_1 ended with status "failed"`)):
				t.Errorf("stream %d, task failed: %v, want the failure", status, err)
			}
		}
	}
}

func TestSendAPIErrors(t *testing.T) {
	d := newFakeDaemon(t)
	d.control = "right"
	_, _, err := runFast(t, map[string]string{"DELTA_CONTROL_TOKEN": "wrong"}, "--port", d.port(t), "hi")
	if err == nil || !strings.Contains(err.Error(), "missing or wrong bearer token") ||
		!strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "DELTA_CONTROL_TOKEN") {
		t.Fatalf("err = %v, want the server's message, the status and a token hint", err)
	}

	d2 := newFakeDaemon(t)
	d2.createStatus, d2.createBody = http.StatusRequestEntityTooLarge, `{"error":{"message":"request body over 1048576 bytes"}}`
	_, _, err = runFast(t, nil, "--port", d2.port(t), "hi")
	if err == nil || !strings.Contains(err.Error(), "request body over 1048576 bytes") {
		t.Fatalf("err = %v, want the server's 413 message", err)
	}

	// The inspection stream has its own token: without it the events are
	// not followed (the hint says why) and the task's status decides.
	d3 := newFakeDaemon(t)
	d3.inspect = "insp"
	_, stderr, err := runFast(t, nil, "--port", d3.port(t), "hi")
	if err != nil || !strings.Contains(stderr, "DELTA_INSPECT_TOKEN") {
		t.Fatalf("err = %v, stderr %q: want success by the task's status and the inspect-token hint", err, stderr)
	}
}

func TestSendSendsNoTokenWhenNoneIsSet(t *testing.T) {
	d := newFakeDaemon(t)
	d.frames = []string{sseFrame(1, "run.finished", `{"status":"done"}`)}
	if _, _, err := runFast(t, map[string]string{"DELTA_OTHER": "x"}, "--port", d.port(t), "hi"); err != nil {
		t.Fatal(err)
	}
	for _, a := range d.auth {
		if !strings.HasSuffix(a, "-> ") {
			t.Errorf("request carried an Authorization header: %s", a)
		}
	}
	if len(d.auth) == 0 {
		t.Fatal("no request recorded")
	}
}

func TestSendTokensGoToTheirOwnGates(t *testing.T) {
	d := newFakeDaemon(t)
	d.control, d.inspect = "C", "I"
	d.frames = []string{sseFrame(1, "run.finished", `{"status":"done"}`)}
	if _, _, err := runFast(t, map[string]string{"DELTA_CONTROL_TOKEN": "C", "DELTA_INSPECT_TOKEN": "I"}, "--port", d.port(t), "hi"); err != nil {
		t.Fatal(err)
	}
	for _, a := range d.auth {
		want := "Bearer C"
		if strings.Contains(a, "/v1/dev/") {
			want = "Bearer I"
		}
		if !strings.HasSuffix(a, want) {
			t.Errorf("%s, want %s", a, want)
		}
	}
}

func TestSendNoDaemon(t *testing.T) {
	port := strconv.Itoa(testPort(t)) // nothing listens there now
	_, _, err := runFast(t, nil, "--port", port, "hi")
	if err == nil || !strings.Contains(err.Error(), "no Delta daemon answers at http://127.0.0.1:"+port) {
		t.Fatalf("err = %v, want a clear 'no daemon' message", err)
	}
}

// fastWatch runs watch with a 1 ms reconnect backoff until stop reports
// true about the daemon (checked every few ms) or 10 s pass.
func fastWatch(t *testing.T, d *fakeDaemon, stop func() bool, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	out, errb := &daemontest.Output{}, &daemontest.Output{}
	e := env{stdout: out, stderr: errb, lookup: mapLookup(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- (&watchCommand{env: e, retry: time.Millisecond, retryMax: 2 * time.Millisecond}).Run(ctx, append(args, "--port", d.port(t)))
	}()
	for {
		select {
		case err := <-done:
			return out.String(), errb.String(), err
		case <-time.After(5 * time.Millisecond):
		}
		d.mu.Lock()
		ok := stop()
		d.mu.Unlock()
		if ok {
			cancel()
			return out.String(), errb.String(), <-done
		}
	}
}

func TestWatchReconnectsAfterLastPrintedID(t *testing.T) {
	d := newFakeDaemon(t)
	// The fake ignores since= and replays everything: watch must not
	// print an event twice.
	d.frames = []string{
		": ping\n\n",
		sseFrame(1, "run.started", `{"name":"run.started","run_id":"r1"}`),
		"event: output_text.delta\ndata: {\"name\":\"output_text.delta\",\"data\":{\"delta\":\"hi\"}}\n\n",
		sseFrame(2, "run.finished", `{"status":"done"}`),
	}
	out, errOut, err := fastWatch(t, d, func() bool { return len(d.queries) >= 3 })
	if err != nil {
		t.Fatalf("watch: %v, want nil after the interrupt", err)
	}
	if q := d.streamQueries(); q[0] != "" || q[1] != "since=2" || q[2] != "since=2" {
		t.Fatalf("watch queries %q, want none, then since=2 on every reconnect", q)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The delta (no id) repeats: the fake replays it, which the daemon,
	// whose deltas are never stored, would not.
	if len(lines) < 3 || !strings.Contains(lines[0], "run.started") || !strings.Contains(lines[2], "run.finished") ||
		strings.Count(out, "run.started") != 1 || strings.Count(out, "run.finished") != 1 {
		t.Fatalf("watch printed %q, want each stored event once", out)
	}
	if !strings.Contains(errOut, "delta: watch: the daemon closed the event stream; reconnecting in 1ms, after event 2\ndelta: watch: reconnected\n") {
		t.Fatalf("stderr %q, want a one-line reconnect notice, then one when the stream is back", errOut)
	}
}

func TestWatchSince(t *testing.T) {
	d := newFakeDaemon(t)
	d.holdStream = true
	_, _, err := fastWatch(t, d, func() bool { return len(d.queries) >= 1 }, "--since", "41")
	if q := d.streamQueries(); err != nil || q[0] != "since=41" {
		t.Fatalf("watch --since 41: queries %q, %v; want since=41", q, err)
	}
}

func TestWatchReconnectOutcomes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		status  []int  // of the stream requests
		wantErr string // "" = still reconnecting when stopped
		queries int    // stream requests made by then
	}{
		{"refused credential on reconnect is final", []int{0, http.StatusUnauthorized}, "HTTP 401", 2},
		{"missing endpoint on reconnect is final", []int{0, http.StatusNotFound}, "HTTP 404", 2},
		{"server errors are retried", []int{0, 503, 502, 500}, "", 5},
		{"refused before any stream is final", []int{http.StatusUnauthorized}, "HTTP 401", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.frames = []string{sseFrame(1, "run.started", `{}`)}
			d.streamStatus = tt.status
			_, _, err := fastWatch(t, d, func() bool { return len(d.queries) >= tt.queries && tt.wantErr == "" })
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("watch: %v, want it still reconnecting", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("watch: %v, want an error with %q", err, tt.wantErr)
			}
			if n := len(d.streamQueries()); n < tt.queries || (tt.wantErr != "" && n != tt.queries) {
				t.Fatalf("%d stream requests, want %d", n, tt.queries)
			}
		})
	}
}

func TestWatchNoDaemonFailsAtOnce(t *testing.T) {
	port := strconv.Itoa(testPort(t))
	e := env{stdout: io.Discard, stderr: io.Discard, lookup: mapLookup(nil)}
	err := (&watchCommand{env: e}).Run(context.Background(), []string{"--port", port})
	if err == nil || !strings.Contains(err.Error(), "no Delta daemon answers") {
		t.Fatalf("watch with no daemon: %v, want the 'no daemon' error, not a retry loop", err)
	}
}

func TestWatchStopsCleanlyOnInterrupt(t *testing.T) {
	d := newFakeDaemon(t)
	d.frames = []string{sseFrame(1, "run.started", `{}`)}
	d.holdStream = true
	ctx, cancel := context.WithCancel(context.Background())
	out := &daemontest.Output{}
	e := env{stdout: out, stderr: io.Discard, lookup: mapLookup(nil)}
	done := make(chan error, 1)
	go func() { done <- (&watchCommand{env: e}).Run(ctx, []string{"--port", d.port(t)}) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "run.started") {
		if time.Now().After(deadline) {
			t.Fatal("watch printed nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch after interrupt: %v, want nil", err)
	}
}

func TestDecodeEventAndLine(t *testing.T) {
	tests := []struct {
		name        string
		f           frame
		wantName    string
		wantPayload string
		wantLine    string
	}{
		{"whole event object", frame{ID: "5", Event: "run.finished", Data: `{"id":5,"name":"run.finished","data":{"status":"done"}}`},
			"run.finished", `{"status":"done"}`, `{"id":5,"name":"run.finished","data":{"status":"done"}}`},
		{"whole event without SSE name", frame{Data: `{"name":"tool.call","data":{"name":"write_file"}}`},
			"tool.call", `{"name":"write_file"}`, `{"name":"tool.call","data":{"name":"write_file"}}`},
		{"payload whose own name differs from the event", frame{ID: "3", Event: "tool.call", Data: `{"name":"write_file"}`},
			"tool.call", `{"name":"write_file"}`, `{"id":3,"event":"tool.call","data":{"name":"write_file"}}`},
		{"bare payload", frame{ID: "2", Event: "run.finished", Data: `{"status":"done"}`},
			"run.finished", `{"status":"done"}`, `{"id":2,"event":"run.finished","data":{"status":"done"}}`},
		{"payload with a non-numeric id", frame{ID: "x", Event: "e", Data: `{}`},
			"e", `{}`, `{"event":"e","data":{}}`},
		{"not JSON", frame{Event: "e", Data: "plain\ntext"},
			"e", "", `"plain\ntext"`},
		{"JSON scalar", frame{Event: "e", Data: "42"},
			"e", "42", `42`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := decodeEvent(tt.f)
			if ev.Name != tt.wantName || string(ev.Payload) != tt.wantPayload {
				t.Errorf("decodeEvent = name %q payload %q; want %q %q", ev.Name, ev.Payload, tt.wantName, tt.wantPayload)
			}
			if got := ev.Line(); got != tt.wantLine {
				t.Errorf("Line = %s, want %s", got, tt.wantLine)
			}
		})
	}
}
