package crash

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseFrame is one Server-Sent Events frame.
type sseFrame struct {
	id   int64
	name string
	data string
}

// openSSE opens an event stream on url and returns its frames, in order,
// until the stream ends (the channel closes) or the test does.
func openSSE(t *testing.T, url string) <-chan sseFrame { return postSSE(t, url, "") }

// postSSE is openSSE with a POST of body (GET when body is empty).
func postSSE(t *testing.T, url, body string) <-chan sseFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	method, rd := "GET", io.Reader(nil)
	if body != "" {
		method, rd = "POST", strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	out := make(chan sseFrame, 100000)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.name != "" {
					out <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				f.id, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				f.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			}
		}
	}()
	return out
}

// storedEvent is an events row: id and name.
type storedEvent struct {
	id   int64
	name string
}

func (e storedEvent) String() string { return fmt.Sprintf("%d:%s", e.id, e.name) }

// runEvents reads a run's events from the shared database in id order.
func runEvents(t *testing.T, db *sql.DB, runID string) []storedEvent {
	t.Helper()
	var out []storedEvent
	each(t, db, "SELECT id, name FROM events WHERE run_id = '"+runID+"' ORDER BY id", func(rows *sql.Rows) error {
		var e storedEvent
		if err := rows.Scan(&e.id, &e.name); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out
}

// pagedEvents reads a run's events through a worker's paged endpoint.
func (d *daemon) pagedEvents(t *testing.T, runID string) []storedEvent {
	t.Helper()
	var out []storedEvent
	since := int64(0)
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/tasks/%s/events?since=%d&limit=500", d.url, runID, since), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Events []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"events"`
			Cursor int64 `json:"cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			out = append(out, storedEvent{e.ID, e.Name})
		}
		if len(page.Events) < 500 {
			return out
		}
		since = page.Cursor
	}
}

// holderOf is the worker holding runID's session lease.
func holderOf(t *testing.T, db *sql.DB, runID string) string {
	t.Helper()
	var h string
	err := db.QueryRow(`SELECT l.holder FROM session_leases l JOIN runs r ON r.session_id = l.session_id WHERE r.id = $1`, runID).Scan(&h)
	if err != nil {
		t.Fatalf("lease of run %s: %v", runID, err)
	}
	return h
}

// taskStream is what one task stream delivered.
type taskStream struct {
	durable []storedEvent
	deltas  map[string]int // delta frames by name
	done    bool           // the closing done frame arrived
}

// readTask reads a task stream to its end.
func readTask(t *testing.T, frames <-chan sseFrame, timeout time.Duration, logs func() string) taskStream {
	t.Helper()
	ts := taskStream{deltas: map[string]int{}}
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return ts
			}
			switch {
			case f.name == "done":
				ts.done = true
			case f.id > 0:
				ts.durable = append(ts.durable, storedEvent{f.id, f.name})
			default:
				ts.deltas[f.name]++
			}
		case <-deadline:
			t.Fatalf("task stream did not end within %s; logs:\n%s", timeout, logs())
		}
	}
}

// checkWhole asserts that got is the table's events, all of them from the
// run's first, ending with its one run.finished: a stream opened in the
// middle of the run replays what came before and follows the rest, each
// event once, in id order.
func checkWhole(t *testing.T, what string, got, table []storedEvent) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(table) {
		t.Fatalf("%s: the stream delivered\n%v\nthe table holds\n%v", what, got, table)
	}
	finished := 0
	for _, e := range got {
		if e.name == "run.finished" {
			finished++
		}
	}
	if finished != 1 || got[len(got)-1].name != "run.finished" {
		t.Fatalf("%s: %d run.finished, want exactly one, last: %v", what, finished, got)
	}
}

// TestWorkersShareLiveEvents: two workers on one PostgreSQL, A with one
// slot. A run submitted on A runs there (local); while it holds A's slot, a
// run submitted on A and one submitted on B both execute on B (remote).
// Followed on A — each run's task stream, opened mid-run, and
// /v1/dev/stream from the start — every durable event arrives exactly
// once, in the events table's order with its ids (the same the paged
// endpoint answers): each task stream is the run's whole sequence, the
// events stored before it opened replayed, ending with its one
// run.finished; the remote runs' text deltas reach A too.
func TestWorkersShareLiveEvents(t *testing.T) {
	c := newCluster(t)
	a := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=wa", "DELTA_MAX_CONCURRENCY=1", "DELTA_INSPECT=1")
	b := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=wb")
	db := c.openDB()
	logs := func() string {
		return "--- worker a\n" + tail(a.logText(), 3000) + "\n--- worker b\n" + tail(b.logText(), 3000)
	}
	a.start()
	dev := openSSE(t, a.url+"/v1/dev/stream?since=0")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.fake.Hold()
	client := &http.Client{Timeout: 10 * time.Second}
	local, ok := a.submit(client, "List the files, then write local.md about the otter survey.")
	if !ok {
		t.Fatal("worker a refused the local task")
	}
	if err := c.fake.WaitCalls(ctx, 1); err != nil {
		t.Fatalf("%v; logs:\n%s", err, logs())
	}
	b.start()
	remoteA, okA := a.submit(client, "List the files, then write remote-a.md about the otter survey.")
	remoteB, okB := b.submit(client, "List the files, then write remote-b.md about the otter survey.")
	if !okA || !okB {
		t.Fatal("a worker refused a task")
	}
	// A streamed response asked of worker a, executed on b.
	streamed := postSSE(t, a.url+"/v1/responses", `{"input":"List the files, then write streamed.md about the otter survey.","stream":true}`)
	var streamedID string
	if f, ok := <-streamed; !ok || f.name != "response.created" {
		t.Fatalf("streamed response: first frame %+v, want response.created", f)
	} else {
		var v struct {
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(f.data), &v); err != nil || v.Response.ID == "" {
			t.Fatalf("response.created without an id: %s", f.data)
		}
		streamedID = v.Response.ID
	}
	if err := c.fake.WaitCalls(ctx, 4); err != nil {
		t.Fatalf("%v; logs:\n%s", err, logs())
	}
	for _, r := range []struct{ id, want string }{{local, "wa/"}, {remoteA, "wb/"}, {remoteB, "wb/"}, {streamedID, "wb/"}} {
		if h := holderOf(t, db, r.id); !strings.HasPrefix(h, r.want) {
			t.Fatalf("run %s executes under %s, want worker %s", r.id, h, r.want)
		}
	}
	runs := []string{local, remoteA, remoteB}
	streams := make([]<-chan sseFrame, len(runs))
	before := make([]int, len(runs))
	for i, id := range runs {
		// Opened mid-run: the events stored before it must be replayed.
		before[i] = len(runEvents(t, db, id))
		streams[i] = openSSE(t, a.url+"/v1/tasks/"+id+"/events")
	}
	c.fake.Release()

	var localText int // text deltas of the run on A, handed on in-process: all of them
	for i, id := range runs {
		ts := readTask(t, streams[i], 60*time.Second, logs)
		if !ts.done {
			t.Fatalf("run %s: the task stream ended without its done frame", id)
		}
		table := runEvents(t, db, id)
		checkWhole(t, "task stream of run "+id, ts.durable, table)
		if before[i] < 2 {
			t.Fatalf("run %s had stored %d events when its stream opened, want it mid-run", id, before[i])
		}
		if paged := a.pagedEvents(t, id); fmt.Sprint(paged) != fmt.Sprint(table) {
			t.Fatalf("run %s: the paged endpoint answers\n%v\nthe table holds\n%v", id, paged, table)
		}
		t.Logf("run %s: task stream on worker a, opened after %d events, got all %d durable events, deltas %v", id, before[i], len(ts.durable), ts.deltas)
		// Every run answers the same scripted text. A remote run's text
		// deltas travel to A ahead of its run.finished, so the stream,
		// which ends there, has all of them.
		if id == local {
			localText = ts.deltas["output_text.delta"]
		} else if got := ts.deltas["output_text.delta"]; got != localText || got == 0 {
			t.Errorf("run %s (on b): the task stream on a got %d text deltas, the run on a %d: text lost behind run.finished", id, got, localText)
		}
	}
	// The streamed response ends with its completed response, which only
	// the remote run.finished reaching worker a's stream can trigger.
	deltas, completed := 0, false
	for f := range streamed {
		switch f.name {
		case "response.output_text.delta":
			deltas++
		case "response.completed":
			completed = true
			if !strings.Contains(f.data, `"status":"completed"`) {
				t.Fatalf("streamed response completed as %s", f.data)
			}
		}
	}
	if !completed {
		t.Fatalf("the streamed response of run %s ended without response.completed; logs:\n%s", streamedID, logs())
	}
	t.Logf("streamed response %s on worker a (run on b): %d text deltas, then response.completed", streamedID, deltas)
	if deltas != localText {
		t.Errorf("streamed response %s on worker a (run on b): %d text deltas, the run on a %d: text lost behind run.finished", streamedID, deltas, localText)
	}

	// The dev stream, from the start: every event of the database up to the
	// last run.finished, once, in id order; and the remote runs' text.
	finished := map[string]int64{}
	text := map[string]int{}
	var got []storedEvent
	deadline := time.After(60 * time.Second)
	for len(finished) < len(runs) || text[remoteA] == 0 || text[remoteB] == 0 {
		select {
		case f, ok := <-dev:
			if !ok {
				t.Fatal("the dev stream ended")
			}
			var e struct {
				RunID string `json:"run_id"`
			}
			_ = json.Unmarshal([]byte(f.data), &e)
			if f.id == 0 {
				if f.name == "output_text.delta" {
					text[e.RunID]++
				}
				continue
			}
			if n := len(got); n > 0 && f.id <= got[n-1].id {
				t.Fatalf("dev stream: event %d after %d", f.id, got[n-1].id)
			}
			got = append(got, storedEvent{f.id, f.name})
			if f.name == "run.finished" {
				finished[e.RunID] = f.id
			}
		case <-deadline:
			t.Fatalf("dev stream: run.finished of %d runs and text of %d remote runs after 60s; logs:\n%s", len(finished), len(text), logs())
		}
	}
	last := max(finished[local], finished[remoteA], finished[remoteB])
	var table []storedEvent
	each(t, db, fmt.Sprintf("SELECT id, name FROM events WHERE id <= %d ORDER BY id", last), func(rows *sql.Rows) error {
		var e storedEvent
		if err := rows.Scan(&e.id, &e.name); err != nil {
			return err
		}
		table = append(table, e)
		return nil
	})
	var upTo []storedEvent
	for _, e := range got {
		if e.id <= last {
			upTo = append(upTo, e)
		}
	}
	if fmt.Sprint(upTo) != fmt.Sprint(table) {
		t.Fatalf("dev stream on worker a delivered\n%v\nthe table holds\n%v", upTo, table)
	}
	t.Logf("dev stream on worker a: %d durable events in table order; text deltas by run %v", len(upTo), text)
}
