package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/deltaharness/delta/internal/config"
)

// Default daemon address for send and watch.
const (
	defaultPort = 8080
	defaultHost = "127.0.0.1"
)

// sendCommand sends one task to a local daemon. Tokens come from its own
// process environment through config.ClientTokens, never from delta.env. By
// default it creates an asynchronous task and follows the run's events until
// it finishes: as readable lines, as `delta demo` prints them, when stdout is
// a terminal, and as JSON Lines otherwise or with --jsonl. --json makes one
// synchronous /v1/responses call and prints only its output_text.
type sendCommand struct {
	env
	poll time.Duration // status poll interval; 0 = the client's default
	// terminal reports whether w is a terminal a person reads (nil =
	// isTerminal); tests set it.
	terminal func(w io.Writer) bool
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// sendSynopsis is the argument synopsis `delta send` shows in help and usage errors.
const sendSynopsis = "[--port N] [--host 127.0.0.1] [--json | --jsonl] <text>"

func (c *sendCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("send")
	port := fs.Int("port", defaultPort, "daemon `port` on this machine")
	host := fs.String("host", defaultHost, "loopback `address` of the daemon (127.0.0.1, ::1 or localhost)")
	sync := fs.Bool("json", false, "synchronous: wait for the answer and print only its output_text")
	jsonl := fs.Bool("jsonl", false, "print the events as JSON Lines even on a terminal")
	pos, err := parse(fs, c.env, sendSynopsis, args)
	if err != nil {
		return helpOK(err)
	}
	if err := checkPort(*port, false); err != nil {
		return usageFor(c.env, fs, sendSynopsis, "%v", err)
	}
	if err := checkLoopback(*host); err != nil {
		return usageFor(c.env, fs, sendSynopsis, "%v", err)
	}
	text := strings.Join(pos, " ")
	if strings.TrimSpace(text) == "" {
		return usageFor(c.env, fs, sendSynopsis, "missing the task text")
	}
	control, inspect := config.ClientTokens(c.lookup)
	cl := newDaemonClient(*host, *port, control, inspect)
	if c.poll > 0 {
		cl.poll = c.poll
	}
	if *sync {
		return c.sync(ctx, cl, text)
	}
	terminal := c.terminal
	if terminal == nil {
		terminal = isTerminal
	}
	return c.async(ctx, cl, text, !*jsonl && terminal(c.stdout))
}

// responseBody is the part of a Responses object the CLI reads.
type responseBody struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	OutputText string          `json:"output_text"`
	Error      json.RawMessage `json:"error"`
}

func (c *sendCommand) sync(ctx context.Context, cl *daemonClient, text string) error {
	var r responseBody
	if err := cl.call(ctx, "POST", "/v1/responses", map[string]any{"input": text}, &r); err != nil {
		if ctx.Err() != nil {
			// The daemon finishes a run whose client went away; its id
			// comes only with the answer, so point at where it shows.
			return errors.New("send: interrupted before the answer; the run keeps going in the daemon (follow it with `delta watch` or in the Cockpit)")
		}
		return fmt.Errorf("send: %w", err)
	}
	printText(c.stdout, r.OutputText)
	if r.Status != "completed" {
		return fmt.Errorf("send: response %s ended with status %q%s", r.ID, r.Status, errorSuffix(r.Error))
	}
	return nil
}

// taskBody is the part of a task object the CLI reads.
type taskBody struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
	Result *responseBody   `json:"result"`
}

func (c *sendCommand) async(ctx context.Context, cl *daemonClient, text string, readable bool) error {
	var t taskBody
	if err := cl.call(ctx, "POST", "/v1/tasks", map[string]any{"input": text}, &t); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if t.ID == "" {
		return errors.New("send: POST /v1/tasks: the answer has no task id")
	}
	fmt.Fprintf(c.stderr, "delta: task %s %s\n", t.ID, t.Status)
	err := followRun(ctx, cl, t.ID, func(ev streamEvent) error {
		if readable {
			line, ok := summarize(ev.Name, ev.Payload)
			if !ok {
				return nil
			}
			_, err := fmt.Fprintf(c.stdout, "  %-14s %s\n", ev.Name, line)
			return err
		}
		_, err := fmt.Fprintln(c.stdout, ev.Line())
		return err
	})
	if streamRefused(err) {
		// The task was accepted with the control token; its events sit
		// behind the inspection gate, which may be off or want a token
		// this shell lacks. The task's status still tells how it ends.
		fmt.Fprintf(c.stderr, "delta: cannot follow the events (%v); waiting for task %s to end\n", err, t.ID)
		err = waitTerminal(ctx, cl, t.ID)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return fmt.Errorf("send: interrupted; task %s keeps running (cancel it with DELETE /v1/tasks/%s)", t.ID, t.ID)
		}
		if daemonGone(err) {
			// The task was accepted, so it is durable: the daemon resumes
			// it at its next start. Say so, or a cut stream reads as lost work.
			return fmt.Errorf("send: lost the daemon while following task %s (%v); the task is stored and resumes when the daemon restarts (check it with GET /v1/tasks/%s)", t.ID, err, t.ID)
		}
		return fmt.Errorf("send: task %s: %w", t.ID, err)
	}
	final, err := getTask(ctx, cl, t.ID)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if final.Status != "done" {
		return fmt.Errorf("send: task %s ended with status %q%s", t.ID, final.Status, errorSuffix(final.Error))
	}
	if readable && final.Result != nil {
		fmt.Fprintln(c.stdout)
		printText(c.stdout, final.Result.OutputText)
	}
	return nil
}

// streamRefused reports that the daemon refused the event stream itself
// (inspection off, or its token missing or wrong) rather than failing.
func streamRefused(err error) bool {
	var api *apiError
	return errors.As(err, &api) && strings.HasPrefix(api.Path, "/v1/dev/") &&
		(api.Status == http.StatusUnauthorized || api.Status == http.StatusForbidden || api.Status == http.StatusNotFound)
}

// daemonGone reports an error that means the daemon went away: the
// connection was cut mid-answer, reset, or refused on a later request.
func daemonGone(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, errNoDaemon)
}

func getTask(ctx context.Context, cl *daemonClient, id string) (taskBody, error) {
	var t taskBody
	err := cl.call(ctx, "GET", "/v1/tasks/"+url.PathEscape(id), nil, &t)
	return t, err
}

// terminalStatus reports whether a task status is final.
func terminalStatus(s string) bool { return s == "done" || s == "failed" || s == "cancelled" }

// streamEvent is one frame of the dev event stream, decoded.
type streamEvent struct {
	ID      string
	Name    string          // the SSE event name, or the payload's "name"
	Raw     string          // the frame's data as sent
	Payload json.RawMessage // the event's own data: data.data when the frame carries a whole event object
}

// Line is the event as one JSON Lines record. A frame whose data is already
// a self-describing event object (its "name" is the event's name) is
// printed as is; a bare payload is wrapped so every line says which event
// it is.
func (ev streamEvent) Line() string {
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(ev.Raw), &probe) == nil {
		var name string
		_ = json.Unmarshal(probe["name"], &name)
		if ev.Name == "" || name == ev.Name {
			return compactJSON(ev.Raw)
		}
		rec := struct {
			ID    json.RawMessage `json:"id,omitempty"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}{Event: ev.Name, Data: json.RawMessage(compactJSON(ev.Raw))}
		if _, err := strconv.ParseInt(ev.ID, 10, 64); err == nil {
			rec.ID = json.RawMessage(ev.ID)
		}
		b, _ := json.Marshal(rec)
		return string(b)
	}
	return compactJSON(ev.Raw)
}

func decodeEvent(f frame) streamEvent {
	ev := streamEvent{ID: f.ID, Name: f.Event, Raw: f.Data, Payload: json.RawMessage(f.Data)}
	var whole struct {
		Name string          `json:"name"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(f.Data), &whole) == nil && whole.Name != "" {
		if ev.Name == "" || ev.Name == "message" {
			ev.Name = whole.Name
		}
		if ev.Name == whole.Name && len(whole.Data) > 0 {
			ev.Payload = whole.Data
		}
	}
	if !json.Valid(ev.Payload) {
		ev.Payload = nil
	}
	return ev
}

// runFinished is the one terminal event of every run.
const runFinished = "run.finished"

// errTaskEnded cancels the stream once the task is terminal on its own.
var errTaskEnded = errors.New("task reached a terminal status")

// followRun prints (through fn) the run's events from the dev stream until
// run.finished, and returns once the task is terminal. It replays from the
// start (since=0), so events that happened before the stream opened are not
// lost. The stream is the fast path; a status poll every cl.poll guarantees
// an end even if run.finished never arrives (the spec warns that a run
// ended outside the handled path can finish without it).
func followRun(ctx context.Context, cl *daemonClient, runID string, fn func(streamEvent) error) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		tick := time.NewTicker(cl.poll)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			t, err := getTask(sctx, cl, runID)
			if err != nil || !terminalStatus(t.Status) {
				continue
			}
			// Give the stream a moment to deliver run.finished itself.
			select {
			case <-sctx.Done():
			case <-time.After(3 * cl.poll):
				cancel(errTaskEnded)
			}
			return
		}
	}()
	defer func() { cancel(nil); <-pollDone }()

	finished := false
	q := url.Values{"run": {runID}, "since": {"0"}}
	err := cl.stream(sctx, "/v1/dev/stream?"+q.Encode(), func(f frame) (bool, error) {
		ev := decodeEvent(f)
		if err := fn(ev); err != nil {
			return true, err
		}
		finished = ev.Name == runFinished
		return finished, nil
	})
	switch {
	case finished, errors.Is(context.Cause(sctx), errTaskEnded):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, io.EOF):
		// The daemon closed the stream early: wait for the task to end.
		return waitTerminal(ctx, cl, runID)
	case err != nil:
		return err
	}
	return nil
}

// waitTerminal polls the task until it reaches a terminal status.
func waitTerminal(ctx context.Context, cl *daemonClient, id string) error {
	tick := time.NewTicker(cl.poll)
	defer tick.Stop()
	for {
		t, err := getTask(ctx, cl, id)
		if err != nil {
			return err
		}
		if terminalStatus(t.Status) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// watchCommand tails the daemon's dev event stream until interrupted. When
// the stream drops after it was open (the daemon restarted, the connection
// broke) it says so on stderr and reconnects with backoff, from 250 ms
// doubling to 5 s, forever. Each reconnect resumes with since=<the last
// durable event id it printed>, so no stored event is missed or printed
// twice; ephemeral frames (text deltas, which carry no id) that passed
// while it was away are not replayed. --since starts after a given id.
type watchCommand struct {
	env
	retry, retryMax time.Duration // reconnect backoff; 0 = 250 ms and 5 s
}

// Reconnect backoff of delta watch.
const (
	watchRetry    = 250 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// watchSynopsis is the argument synopsis `delta watch` shows in help and usage errors.
const watchSynopsis = "[--port N] [--host 127.0.0.1] [--since ID]"

func (c *watchCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("watch")
	port := fs.Int("port", defaultPort, "daemon `port` on this machine")
	host := fs.String("host", defaultHost, "loopback `address` of the daemon (127.0.0.1, ::1 or localhost)")
	since := fs.Int64("since", -1, "replay from after this event `id` (default: the daemon's choice)")
	if err := parseFlags(fs, c.env, watchSynopsis, args, ""); err != nil {
		return helpOK(err)
	}
	if err := checkPort(*port, false); err != nil {
		return usageFor(c.env, fs, watchSynopsis, "%v", err)
	}
	// -1 stands for "not given"; a negative id given is a mistake, not a
	// request for the daemon's default.
	sinceGiven := false
	fs.Visit(func(f *flag.Flag) { sinceGiven = sinceGiven || f.Name == "since" })
	if sinceGiven && *since < 0 {
		return usageFor(c.env, fs, watchSynopsis, "--since %d: want an event id ≥ 0 (0 replays everything stored)", *since)
	}
	if err := checkLoopback(*host); err != nil {
		return usageFor(c.env, fs, watchSynopsis, "%v", err)
	}
	control, inspect := config.ClientTokens(c.lookup)
	if err := c.follow(ctx, newDaemonClient(*host, *port, control, inspect), *since); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}

// outputError is a failure to print: watching further is pointless.
type outputError struct{ err error }

func (e *outputError) Error() string { return "write output: " + e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// follow prints the stream from after last (-1 = the daemon's default)
// and reconnects until ctx ends (then it returns nil) or an error that a
// reconnect cannot cure. Until a stream has been open once, any failure is
// returned: a wrong port or token should fail at once, not retry forever.
func (c *watchCommand) follow(ctx context.Context, cl *daemonClient, last int64) error {
	retry, retryMax := c.retry, c.retryMax
	if retry <= 0 {
		retry = watchRetry
	}
	if retryMax <= 0 {
		retryMax = watchRetryMax
	}
	tr := &openTracker{next: cl.http.Transport}
	cl.http.Transport = tr
	delay := retry
	everOpened := false
	// After a drop, say when the stream is back: the last stderr line
	// should not read "reconnecting" while events flow again.
	reconnecting := false
	tr.onOpen = func() {
		if reconnecting {
			reconnecting = false
			fmt.Fprintf(c.stderr, "delta: watch: reconnected\n")
		}
	}
	for {
		path := "/v1/dev/stream"
		if last >= 0 {
			path += "?since=" + strconv.FormatInt(last, 10)
		}
		err := cl.stream(ctx, path, func(f frame) (bool, error) {
			id, idErr := strconv.ParseInt(f.ID, 10, 64)
			durable := idErr == nil && id > 0
			if durable && id <= last {
				return false, nil // printed before the reconnect
			}
			if _, err := fmt.Fprintln(c.stdout, decodeEvent(f).Line()); err != nil {
				return true, &outputError{err}
			}
			if durable {
				last = id
			}
			return false, nil
		})
		if ctx.Err() != nil {
			return nil // interrupted: the normal way to stop watching
		}
		if tr.opened.Swap(false) {
			everOpened, delay = true, retry // it was open: the backoff starts over
		}
		if !everOpened || !reconnectable(err) {
			if err == nil || errors.Is(err, io.EOF) {
				return errors.New("the daemon closed the event stream")
			}
			return err
		}
		from := "from the start"
		if last >= 0 {
			from = fmt.Sprintf("after event %d", last)
		}
		fmt.Fprintf(c.stderr, "delta: watch: %s; reconnecting in %s, %s\n", dropReason(err), delay, from)
		reconnecting = true
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}

// openTracker notes that the daemon answered a request with 2xx: the
// stream was open, however it ended.
type openTracker struct {
	next   http.RoundTripper
	opened atomic.Bool
	onOpen func() // called on each 2xx, on the requesting goroutine (nil: none)
}

func (t *openTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		t.opened.Store(true)
		if t.onOpen != nil {
			t.onOpen()
		}
	}
	return resp, err
}

// reconnectable reports whether a stream error may pass by reconnecting: a
// closed or broken connection, a daemon not answering yet, a server-side
// failure. A refused credential or a missing endpoint (4xx), an oversized
// frame and a failure to print are final.
func reconnectable(err error) bool {
	var out *outputError
	var api *apiError
	switch {
	case errors.As(err, &out), errors.Is(err, errFrameTooLarge):
		return false
	case errors.As(err, &api):
		return api.Status >= 500 || api.Status == http.StatusTooManyRequests
	}
	return true
}

// dropReason says in a few words why the stream ended.
func dropReason(err error) string {
	if err == nil || errors.Is(err, io.EOF) {
		return "the daemon closed the event stream"
	}
	return err.Error()
}

// printText writes s with exactly one trailing newline.
func printText(w io.Writer, s string) {
	fmt.Fprintln(w, strings.TrimRight(s, "\n"))
}

// errorSuffix renders a task or response error field for a message.
func errorSuffix(raw json.RawMessage) string {
	if msg := errorText(raw); msg != "" {
		return ": " + msg
	}
	return ""
}

func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return compactJSON(string(raw))
}
