package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/model"
)

// streamFrames opens a task's event stream with the given headers and
// sends its frames, in order, until the stream ends.
func streamFrames(t *testing.T, url string, hdr map[string]string) <-chan frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by the reader goroutine
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := make(chan frame, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		readFrames(resp.Body, func(f frame) { out <- f })
	}()
	return out
}

// durable is the id:name list of the frames that carry an id, and whether
// the stream's last frame was done.
func durable(fs []frame) (ids []string, done bool) {
	for _, f := range fs {
		if f.id != "" {
			ids = append(ids, f.id+":"+f.name)
		}
	}
	return ids, len(fs) > 0 && fs[len(fs)-1].name == "done"
}

// pagedIDs is the id:name list of a run's stored events, from the paged
// endpoint.
func pagedIDs(t *testing.T, base, id string) []string {
	t.Helper()
	_, page := do(t, "GET", base+"/v1/tasks/"+id+"/events?since=0&limit=500", ``, nil)
	var out []string
	for _, e := range page["events"].([]any) {
		m := e.(map[string]any)
		out = append(out, itoa(int(m["id"].(float64)))+":"+m["name"].(string))
	}
	return out
}

func collect(c <-chan frame) []frame {
	var out []frame
	for f := range c {
		out = append(out, f)
	}
	return out
}

// TestTaskStreamReplaysTheRunsHistory: a task's event stream opened in the
// middle of its run starts with the events stored before it was opened and
// goes on live with no gap and no repeat: its durable frames are exactly
// the run's stored events, from run.queued to run.finished, then the done
// frame. Opened after the run ended it answers the whole history and
// ends. With Last-Event-ID it resumes after that id; a malformed one is a
// 400.
func TestTaskStreamReplaysTheRunsHistory(t *testing.T) {
	entered, hold := make(chan struct{}, 1), make(chan struct{})
	provider := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		entered <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
		return echoProvider(ctx, req, s)
	})
	srv := newServer(t, api.Options{}, provider)
	s, task := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"survey the otters"}`, nil)
	if s != http.StatusAccepted {
		t.Fatalf("submit: %d %v", s, task)
	}
	id := task["id"].(string)
	select {
	case <-entered: // the run started and waits in its model call
	case <-time.After(20 * time.Second):
		t.Fatal("the run never reached its model call")
	}
	before := pagedIDs(t, srv.URL, id)
	if len(before) < 2 {
		t.Fatalf("mid-run the run has stored %v, want run.queued and run.started at least", before)
	}
	mid := streamFrames(t, srv.URL+"/v1/tasks/"+id+"/events", nil)
	// The stored history arrives before the run moves on.
	var got []frame
	for len(got) < len(before) {
		f, ok := <-mid
		if !ok {
			t.Fatalf("the stream ended after %v", got)
		}
		got = append(got, f)
	}
	if ids, _ := durable(got); strings.Join(ids, " ") != strings.Join(before, " ") {
		t.Fatalf("opened mid-run the stream began with %v, want the stored %v", ids, before)
	}
	close(hold)
	got = append(got, collect(mid)...)
	all := pagedIDs(t, srv.URL, id)
	ids, done := durable(got)
	if strings.Join(ids, " ") != strings.Join(all, " ") || !done {
		t.Fatalf("opened mid-run the stream delivered %v (done %v), the run stored %v", ids, done, all)
	}
	if !strings.HasSuffix(all[0], ":run.queued") || !strings.HasSuffix(all[len(all)-1], ":run.finished") {
		t.Fatalf("stored events %v, want run.queued … run.finished", all)
	}

	after := collect(streamFrames(t, srv.URL+"/v1/tasks/"+id+"/events", nil))
	if ids, done := durable(after); strings.Join(ids, " ") != strings.Join(all, " ") || !done {
		t.Fatalf("opened after the run ended the stream delivered %v (done %v), the run stored %v", ids, done, all)
	}
	var view struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(after[len(after)-1].data), &view); err != nil || view.Status != "done" {
		t.Fatalf("done frame %s, want the task's done view", after[len(after)-1].data)
	}

	from := strings.SplitN(all[1], ":", 2)[0]
	resumed := collect(streamFrames(t, srv.URL+"/v1/tasks/"+id+"/events", map[string]string{"Last-Event-ID": from}))
	if ids, done := durable(resumed); strings.Join(ids, " ") != strings.Join(all[2:], " ") || !done {
		t.Fatalf("with Last-Event-ID %s the stream delivered %v (done %v), want %v", from, ids, done, all[2:])
	}
	end := strings.SplitN(all[len(all)-1], ":", 2)[0]
	if ids, done := durable(collect(streamFrames(t, srv.URL+"/v1/tasks/"+id+"/events", map[string]string{"Last-Event-ID": end}))); len(ids) != 0 || !done {
		t.Fatalf("with Last-Event-ID at run.finished the stream delivered %v (done %v), want only the done frame", ids, done)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/tasks/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", "seven")
	if code, _, body := roundTrip(t, req); code != http.StatusBadRequest || !strings.Contains(string(body), "Last-Event-ID") {
		t.Fatalf("malformed Last-Event-ID: %d %s, want a 400 naming it", code, body)
	}
}
