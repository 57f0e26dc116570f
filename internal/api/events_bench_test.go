package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
)

// BenchmarkTaskEventsPage measures GET /v1/tasks/{id}/events?since=&limit=
// end to end over loopback HTTP (httptest): bearer check, owner check,
// the page read, the status re-read and the JSON body, from a database of
// 100,000 events in which the task owns 10,000, interleaved with others'.
//
//	go test -run '^$' -bench TaskEventsPage ./internal/api/
func BenchmarkTaskEventsPage(b *testing.B) {
	const runs, perRun = 10, 10000
	ctx := context.Background()
	st := openStore(b, filepath.Join(b.TempDir(), "delta.db"))
	for r := range runs {
		id := fmt.Sprintf("resp_%02d", r)
		if _, _, _, err := st.CreateRun(ctx, store.NewRun{ID: id, SessionID: "sess_" + id, Request: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
	evs := make([]event.Event, 0, runs)
	for i := range perRun {
		evs = evs[:0]
		for r := range runs {
			id := fmt.Sprintf("resp_%02d", r)
			evs = append(evs, event.New(id, "sess_"+id, event.ToolCall, map[string]any{
				"call_id": fmt.Sprintf("call_%06d", i), "name": "read_file", "args": `{"path":"notes/otter-survey-2026.md"}`}))
		}
		if err := st.AddEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	eng := engine.New(engine.Options{Store: st})
	q := queue.New(st, eng.ExecuteHead, 1, nil) // never opened: the runs stay queued
	srv := httptest.NewServer(api.New(api.Options{Service: engine.NewService(st, q, eng), ControlToken: "tok"}))
	b.Cleanup(srv.Close)
	client := srv.Client()
	for _, limit := range []int{200, 500} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			var cursor int64
			for range b.N {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/tasks/resp_03/events?since=%d&limit=%d", srv.URL, cursor, limit), nil)
				req.Header.Set("Authorization", "Bearer tok")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var page struct {
					Events []json.RawMessage `json:"events"`
					Cursor int64             `json:"cursor"`
				}
				err = json.NewDecoder(resp.Body).Decode(&page)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("page since %d: status %d, %v", cursor, resp.StatusCode, err)
				}
				cursor = page.Cursor
				if len(page.Events) < limit {
					cursor = 0 // the end of the task's history: page again from the start
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(b.N*limit)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
