package bobbye2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/test/bobbytest"
)

// TestPopupCheckpointSurvivesRestart: click_and_wait_for_popup with
// autoCheckpoint persists its outcome in bobby's state directory in the
// same call. After `bobby serve` restarts on the same config, the record
// is still readable at bobby://checkpoints/{commandId}, and a retry with
// the same commandId and attemptId replays it instead of opening a second
// window; a new attemptId runs again and is recorded beside the first.
func TestPopupCheckpointSurvivesRestart(t *testing.T) {
	fixtures := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(fixtures.Close)
	token := "cp-" + rand.Text()
	home := t.TempDir() // data_dir and downloads_root of both processes
	cfg := func(addr, _ string) string { return serveConfig(addr, home, "cpclient", token, allCaps) }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	open := func(s bobbytest.Served) *goRun {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "checkpoint-test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: s.MCPURL, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return &goRun{t: t, cs: cs}
	}
	type attempt struct {
		AttemptID string `json:"attemptId"`
		Outcome   struct {
			CommandID string `json:"commandId"`
			Evidence  struct {
				Popup struct {
					PageID string `json:"pageId"`
				} `json:"popup"`
			} `json:"evidence"`
		} `json:"outcome"`
	}
	readRecords := func(r *goRun) []attempt {
		t.Helper()
		rr, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bobby://checkpoints/restart-1"})
		if err != nil || len(rr.Contents) != 1 {
			t.Fatalf("read bobby://checkpoints/restart-1: %v", err)
		}
		var doc struct {
			CommandID string    `json:"commandId"`
			Attempts  []attempt `json:"attempts"`
		}
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &doc); err != nil || doc.CommandID != "restart-1" {
			t.Fatalf("checkpoint resource = %s (%v)", rr.Contents[0].Text, err)
		}
		return doc.Attempts
	}
	click := func(r *goRun, handle, attemptID string) map[string]any {
		t.Helper()
		return r.ok("click_and_wait_for_popup", map[string]any{"workflowHandle": handle, "selector": "#open",
			"autoCheckpoint": true, "commandId": "restart-1", "attemptId": attemptID})
	}
	pages := func(r *goRun, sessionID any) int {
		t.Helper()
		ps, _ := r.ok("page_list", map[string]any{"sessionId": sessionID})["pages"].([]any)
		return len(ps)
	}

	first := bobbytest.Serve(t, bobbyBin, cfg)
	r := open(first)
	start := r.ok("workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/popup.html"})
	done := click(r, str(start["workflowHandle"]), "a1")
	popupID := str(get(done, "evidence", "popup", "pageId"))
	if popupID == "" || get(done, "evidence", "checkpoint", "persisted") != true || get(done, "evidence", "checkpoint", "resource") != "bobby://checkpoints/restart-1" {
		t.Fatalf("checkpointed click = %s", dump(done))
	}
	if recs := readRecords(r); len(recs) != 1 || recs[0].AttemptID != "a1" || recs[0].Outcome.Evidence.Popup.PageID != popupID {
		t.Fatalf("records before the restart = %+v", recs)
	}
	r.cs.Close()
	first.Stop()

	second := bobbytest.Serve(t, bobbyBin, cfg)
	r = open(second)
	recs := readRecords(r)
	if len(recs) != 1 || recs[0].AttemptID != "a1" || recs[0].Outcome.CommandID != "restart-1" || recs[0].Outcome.Evidence.Popup.PageID != popupID {
		t.Fatalf("records after the restart = %+v, want attempt a1 with popup %s", recs, popupID)
	}
	start = r.ok("workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/popup.html"})
	again := click(r, str(start["workflowHandle"]), "a1")
	if again["replayed"] != true || str(get(again, "evidence", "popup", "pageId")) != popupID {
		t.Errorf("retry with the same ids after the restart = %s, want the recorded outcome replayed", dump(again))
	}
	if n := pages(r, start["sessionId"]); n != 1 {
		t.Errorf("the replayed retry opened a window: %d pages", n)
	}
	fresh := click(r, str(start["workflowHandle"]), "a2")
	if fresh["replayed"] == true || str(get(fresh, "evidence", "popup", "pageId")) == popupID || pages(r, start["sessionId"]) != 2 {
		t.Errorf("a new attempt = %s, want a real click opening a window", dump(fresh))
	}
	if recs := readRecords(r); len(recs) != 2 || recs[1].AttemptID != "a2" {
		t.Errorf("records after a second attempt = %+v", recs)
	}
}
