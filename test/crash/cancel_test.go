package crash

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// cancelTask sends DELETE /v1/tasks/{id} and returns the status answered.
func (d *daemon) cancelTask(t *testing.T, client *http.Client, id string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, d.url+"/v1/tasks/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("cancel %s: %v", id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel %s: %d %s", id, resp.StatusCode, b)
	}
	var v struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("cancel %s: %v in %s", id, err, b)
	}
	return v.Status
}

// slowCodeScript asks for one call of the code tool whose prompt is the
// task's tag ("… tagged NAME"), then, once the call has a result, answers
// with text.
func slowCodeScript() modeltest.Script {
	tagged := regexp.MustCompile(`tagged (\w+)`)
	return func(req modeltest.ChatRequest) modeltest.Reply {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			return modeltest.TextReply("The survey ended.")
		}
		tag := "untagged"
		for _, m := range req.Messages {
			if m.Role == "user" {
				if g := tagged.FindStringSubmatch(m.Content); g != nil {
					tag = g[1]
				}
			}
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_" + tag, Name: "code", Arguments: fmt.Sprintf(`{"prompt":%q}`, tag)})
	}
}

// alive reports whether process pid still exists (a zombie counts: its
// parent has not waited for it yet).
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string, timeout time.Duration, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s; logs:\n%s", path, timeout, logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCancelThroughAnotherWorkerInterruptsTheToolCall: two workers on one
// PostgreSQL; two runs execute on worker b, each inside a code tool call
// that sleeps for five minutes before it would write its "finished" file.
// One is cancelled through worker b (the local cancel), the other through
// worker a, which does not execute it. Both tool calls are interrupted at
// once: by the time each run is terminal its command's process is gone and
// its file was never written; each run ends cancelled with exactly one
// run.finished; and the remote cancel leaves the same events, in the same
// order, as the local one, the call settled as cancelled, not re-fired.
// Before cancels crossed workers, worker a wrote the run's end itself
// while the command went on running on b.
func TestCancelThroughAnotherWorkerInterruptsTheToolCall(t *testing.T) {
	c := newClusterWith(t, slowCodeScript())
	marks := t.TempDir()
	cli := filepath.Join(marks, "slow.sh")
	// $1 is the call's prompt, the task's tag; $$ the shell, the leader of
	// the process group a cancel kills.
	body := fmt.Sprintf("#!/bin/sh\necho $$ > %[1]s/$1.pid\nsleep 300\ntouch %[1]s/$1.finished\n", marks)
	if err := os.WriteFile(cli, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever the outcome, leave no sleeping command behind.
		for _, tag := range []string{"local", "remote"} {
			if b, err := os.ReadFile(filepath.Join(marks, tag+".pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
	})
	code := "DELTA_CODE_CLI=/bin/sh " + cli
	a := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=wa", code)
	b := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=wb", code)
	db := c.openDB()
	logs := func() string {
		return "--- worker a\n" + tail(a.logText(), 3000) + "\n--- worker b\n" + tail(b.logText(), 3000)
	}
	// Only b runs while the runs are claimed, so both execute there.
	b.start()
	client := &http.Client{Timeout: 10 * time.Second}
	ids := map[string]string{}
	for _, tag := range []string{"local", "remote"} {
		id, ok := b.submit(client, "Run the otter survey tagged "+tag+".")
		if !ok {
			t.Fatalf("worker b refused the %s task", tag)
		}
		ids[tag] = id
	}
	pids := map[string]int{}
	for tag := range ids {
		pidFile := filepath.Join(marks, tag+".pid")
		waitFile(t, pidFile, 60*time.Second, logs)
		var pid int
		for pid == 0 { // the shell may not have finished writing its pid
			raw, _ := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		}
		pids[tag] = pid
	}
	a.start()
	for tag, id := range ids {
		if h := holderOf(t, db, id); !strings.HasPrefix(h, "wb/") {
			t.Fatalf("the %s run executes under %s, want worker b", tag, h)
		}
	}

	if st := a.cancelTask(t, client, ids["remote"]); st != "running" && st != "cancelled" {
		t.Fatalf("worker a answered the cancel with status %s", st)
	}
	if st := b.cancelTask(t, client, ids["local"]); st != "running" && st != "cancelled" {
		t.Fatalf("worker b answered the cancel with status %s", st)
	}
	runs := waitTerminalPG(t, db, 60*time.Second, logs)
	for tag, id := range ids {
		// The run's end is written after its tool call returned: the
		// command was killed, not left running past the run's end.
		if alive(pids[tag]) {
			t.Errorf("the %s run is terminal but its command (pid %d) is still running: the cancel did not interrupt the tool call; logs:\n%s", tag, pids[tag], logs())
		}
		if f := runs[id]; f.status != "cancelled" || f.finished != 1 {
			t.Errorf("the %s run: status %s with %d run.finished, want cancelled with exactly 1", tag, f.status, f.finished)
		}
		if _, err := os.Stat(filepath.Join(marks, tag+".finished")); err == nil {
			t.Errorf("the %s run's command ran to its end", tag)
		}
	}
	if t.Failed() {
		return
	}
	// The notification, not the heartbeat's backstop, carried the cancel.
	if !strings.Contains(b.logText(), "run cancelled by a request to another worker") {
		t.Fatalf("worker b never heard of the cancel asked of worker a; logs:\n%s", logs())
	}
	names := func(id string) string {
		var out []string
		for _, e := range runEvents(t, db, id) {
			out = append(out, e.name)
		}
		return strings.Join(out, " ")
	}
	local, remote := names(ids["local"]), names(ids["remote"])
	if local != remote {
		t.Fatalf("cancelled through another worker the run's events differ from a local cancel:\nlocal  %s\nremote %s", local, remote)
	}
	for tag, id := range ids {
		var results, settled int
		each(t, db, "SELECT coalesce(data,'') FROM events WHERE name = 'tool.result' AND run_id = '"+id+"'", func(rows *sql.Rows) error {
			var data string
			if err := rows.Scan(&data); err != nil {
				return err
			}
			results++
			if strings.Contains(data, "[cancelled]") {
				settled++
			}
			return nil
		})
		if results != 1 || settled != 1 {
			t.Fatalf("the %s run: %d tool results, %d settled as cancelled; want the one call settled as cancelled", tag, results, settled)
		}
	}
	t.Logf("local and remote cancel: %s", remote)
}
