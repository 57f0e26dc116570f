package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// callAs is d.call as the user owner (x-delta-user).
func (d *daemon) callAs(owner, method, path, body string) (int, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-delta-user", owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestTaskEventsCarrySpineTurnsAndCheckpoints reads a finished task's events
// back from the API: each names the owner, session, run, task and (inside a
// turn) the turn; turns and checkpoints are recorded; model.call carries
// effort, speed and finish_reasons.
func TestTaskEventsCarrySpineTurnsAndCheckpoints(t *testing.T) {
	d := newDaemon(t, startFake(t))
	s, b := d.callAs("alice", "POST", "/v1/responses",
		`{"input":"Write brief.md about the otter survey.","metadata":{"task_id":"task_7","reasoning_effort":"low"}}`)
	var resp struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || s != 200 || resp.Status != "completed" {
		t.Fatalf("run: %d %s\nlog:\n%s", s, b, d.logText())
	}
	s, b = d.callAs("alice", "GET", "/v1/tasks/"+resp.ID+"/events?since=0", "")
	var page struct {
		Events []struct {
			Name      string         `json:"name"`
			RunID     string         `json:"run_id"`
			SessionID string         `json:"session_id"`
			Owner     string         `json:"owner"`
			TaskID    string         `json:"task_id"`
			Turn      int            `json:"turn"`
			Data      map[string]any `json:"data"`
		} `json:"events"`
		Done bool `json:"done"`
	}
	if err := json.Unmarshal(b, &page); err != nil || s != 200 || !page.Done {
		t.Fatalf("events: %d %s", s, b)
	}
	var names []string
	for _, e := range page.Events {
		names = append(names, e.Name)
		if e.Owner != "alice" || e.TaskID != "task_7" || e.RunID != resp.ID || e.SessionID == "" {
			t.Errorf("%s spine: owner %q task %q run %q session %q", e.Name, e.Owner, e.TaskID, e.RunID, e.SessionID)
		}
		switch e.Name {
		case "turn.started", "model.call", "tool.call", "tool.result", "checkpoint":
			if e.Turn < 1 {
				t.Errorf("%s has no turn", e.Name)
			}
		}
		if e.Name == "model.call" {
			if e.Data["effort"] != "low" {
				t.Errorf("model.call effort %v", e.Data["effort"])
			}
			if _, ok := e.Data["speed"]; !ok {
				t.Errorf("model.call has no speed: %v", e.Data)
			}
			if fr, ok := e.Data["finish_reasons"].([]any); !ok || len(fr) != 1 {
				t.Errorf("model.call finish_reasons %v", e.Data["finish_reasons"])
			}
		}
	}
	for _, n := range []string{"turn.started", "model.call", "checkpoint", "tool.result", "run.finished"} {
		if !slices.Contains(names, n) {
			t.Errorf("no %s among %v", n, names)
		}
	}
}
