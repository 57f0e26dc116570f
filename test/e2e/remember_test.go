package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

var versionRe = regexp.MustCompile(`version ([0-9a-f]{12})`)

// lessonOf is the DELTA.md the scripted agent writes for a request.
func lessonOf(user string) string {
	lesson := "Always cite the source."
	if strings.Contains(user, "stale") {
		lesson = "Prefer tables for comparisons."
	}
	return "# Persona\n\nMeridian, a careful researcher.\n\n# Learned\n\n- " + lesson + "\n"
}

// rememberScript plays an agent that saves a lesson to DELTA.md: "learn
// big" first sends a file over the cap, "learn stale" first names a base
// that is not the file any more; each then retries once with the version
// the refusal handed back, and answers with the tool's last word.
func rememberScript(req modeltest.ChatRequest) modeltest.Reply {
	user := ""
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "learn") {
			user = m.Content
		}
	}
	// The last message before the per-turn blocks the engine appends.
	var last modeltest.ChatMessage
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role != "user" || !strings.HasPrefix(m.Content, "<delta:") {
			last = m
			break
		}
	}
	if last.Role == "tool" {
		if strings.HasPrefix(last.Content, "Not written") || strings.HasPrefix(last.Content, "error: Not written") {
			m := versionRe.FindAllStringSubmatch(last.Content, -1)
			base := m[len(m)-1][1] // "Current DELTA.md (version …" comes last
			args, _ := json.Marshal(map[string]string{"base": base, "content": lessonOf(user)})
			return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_retry", Name: "remember", Arguments: string(args)}}}
		}
		return modeltest.Reply{Text: "Saved. " + last.Content}
	}
	if !req.HasTool("remember") {
		return modeltest.Reply{Text: "no remember tool offered"}
	}
	var args []byte
	if strings.Contains(user, "big") {
		args, _ = json.Marshal(map[string]string{"content": lessonOf(user) + strings.Repeat("Padding that will not fit. ", 200)})
	} else {
		args, _ = json.Marshal(map[string]string{"base": "000000000000", "content": lessonOf(user)})
	}
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_first", Name: "remember", Arguments: string(args)}}}
}

// TestRememberAndRestoreThroughTheAPI: the agent's over-cap and stale-base
// writes of DELTA.md are refused with the current file and succeed on the
// informed retry; each content-changing write keeps a revision; an
// operator compares and restores one through the inspection API; a
// safe-mode boot offers no remember tool but still restores.
func TestRememberAndRestoreThroughTheAPI(t *testing.T) {
	fake := startScript(t, rememberScript)
	fake.RequireKey("fake-key")
	d := newDaemon(t, fake, "DELTA_INSPECT_WRITE=1")
	selfPath := filepath.Join(d.dir, "ws", "DELTA.md")
	scaffold, err := os.ReadFile(selfPath)
	if err != nil {
		t.Fatal(err)
	}

	run := func(input string) string {
		t.Helper()
		s, resp := d.call("POST", "/v1/responses", fmt.Sprintf(`{"input":%q}`, input))
		if s != 200 || resp["status"] != "completed" {
			t.Fatalf("run %q: %d %v\nlog:\n%s", input, s, resp, d.logText())
		}
		return resp["id"].(string) + " " + resp["output_text"].(string)
	}
	out := run("learn big: always cite")
	if !strings.Contains(out, "DELTA.md rewritten") {
		t.Fatalf("the over-cap write was not retried to success: %s", out)
	}
	if b, _ := os.ReadFile(selfPath); string(b) != lessonOf("big") {
		t.Fatalf("DELTA.md = %q", b)
	}
	id := strings.Fields(out)[0]
	_, evs := d.callAs("", "GET", "/v1/tasks/"+id+"/events?since=0", "")
	if !strings.Contains(string(evs), `"reason":"too_large"`) || !strings.Contains(string(evs), `"outcome":"written"`) {
		t.Fatalf("the run's events lack the refusal and the write: %.3000s", evs)
	}
	if out := run("learn stale: tables"); !strings.Contains(out, "DELTA.md rewritten") {
		t.Fatalf("the stale-base write was not retried to success: %s", out)
	}

	s, list := d.call("GET", "/v1/dev/revisions", "")
	revs, _ := list["revisions"].([]any)
	if s != 200 || len(revs) != 2 {
		t.Fatalf("revisions = %d %v, want two (the scaffold, then the first lesson)", s, list)
	}
	oldest := revs[1].(map[string]any)
	path := fmt.Sprintf("/v1/dev/revisions/%d", int(oldest["id"].(float64)))
	s, cmp := d.call("GET", path+"/compare", "")
	if s != 200 || !strings.Contains(cmp["diff"].(string), "+- Prefer tables for comparisons.") || cmp["revision"].(map[string]any)["content"] != string(scaffold) {
		t.Fatalf("compare = %d %v", s, cmp)
	}

	// Safe mode: no remember tool, but the operator can still restore.
	d.stop()
	d.env = append(d.env, "DELTA_SAFE_MODE=1")
	d.start()
	if out := run("learn big: again"); !strings.Contains(out, "no remember tool offered") {
		t.Fatalf("safe mode offered remember: %s", out)
	}
	_, st := d.call("GET", "/v1/status", "")
	if st["tools"].(map[string]any)["omitted"].(map[string]any)["remember"] != "DELTA_SAFE_MODE=1" {
		t.Fatalf("status in safe mode: %v", st["tools"])
	}
	s, res := d.call("POST", path+"/restore", "")
	if s != 200 || res["revision_id"] == nil {
		t.Fatalf("restore = %d %v", s, res)
	}
	if b, _ := os.ReadFile(selfPath); string(b) != string(scaffold) {
		t.Fatalf("after restore DELTA.md = %q, want the scaffold", b)
	}
	_, list = d.call("GET", "/v1/dev/revisions", "")
	if revs := list["revisions"].([]any); len(revs) != 3 || revs[0].(map[string]any)["source"] != "restore" {
		t.Fatalf("after restore revisions = %v, want the replaced lesson kept as a restore revision", list)
	}
	if s, bad := d.call("POST", "/v1/dev/revisions/nope/restore", ""); s != 400 || bad["error"] == nil {
		t.Fatalf("bad id = %d %v", s, bad)
	}
}

const (
	childSelf  = "# Persona\n\nMeridian.\n\n# Learned\n\n- Child: check dates.\n"
	mergedSelf = "# Persona\n\nMeridian.\n\n# Learned\n\n- Child: check dates.\n- Parent: cite sources.\n"
)

// snapshotVersion is the version the spine shows for the run's DELTA.md.
func snapshotVersion(req modeltest.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			if v := versionRe.FindStringSubmatch(m.Content); v != nil {
				return v[1]
			}
		}
	}
	return ""
}

// sharedSelfScript: the parent delegates, its child rewrites DELTA.md, then
// the parent rewrites it from its own (now stale) snapshot, is refused, and
// merges with the file the refusal returned.
func sharedSelfScript(req modeltest.ChatRequest) modeltest.Reply {
	var last modeltest.ChatMessage
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role != "user" || !strings.HasPrefix(m.Content, "<delta:") {
			last = m
			break
		}
	}
	call := func(id, base, content string) modeltest.Reply {
		args, _ := json.Marshal(map[string]string{"base": base, "content": content})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "remember", Arguments: string(args)}}}
	}
	if isChild(req) {
		if last.Role == "tool" {
			return modeltest.Reply{Text: "child: " + last.Content}
		}
		return call("call_child", snapshotVersion(req), childSelf)
	}
	switch {
	case last.Role != "tool":
		args, _ := json.Marshal(map[string]string{"task": childTask})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_sub", Name: "spawn_subagent", Arguments: string(args)}}}
	case strings.Contains(last.Content, "child: DELTA.md rewritten"):
		return call("call_parent", snapshotVersion(req), "# Persona\n\nMeridian.\n\n# Learned\n\n- Parent: cite sources.\n")
	case strings.Contains(last.Content, "changed since the version you edited") && strings.Contains(last.Content, "Child: check dates."):
		m := versionRe.FindAllStringSubmatch(last.Content, -1)
		return call("call_merge", m[len(m)-1][1], mergedSelf)
	}
	return modeltest.Reply{Text: "parent: " + last.Content}
}

// TestChildAndParentShareDELTAmd: a spawn_subagent child rewrites the
// shared DELTA.md; its revision lives in its own temporary database, so the
// daemon's history has none; the parent's write from its older snapshot is
// refused as diverged and its merge keeps both lessons, the child's file
// becoming the daemon's revision.
func TestChildAndParentShareDELTAmd(t *testing.T) {
	fake := startScript(t, sharedSelfScript)
	fake.RequireKey("fake-key")
	d := newDaemon(t, fake)
	s, resp := d.call("POST", "/v1/responses", `{"input":"delegate and learn"}`)
	if s != 200 || resp["status"] != "completed" || !strings.Contains(resp["output_text"].(string), "parent: DELTA.md rewritten") {
		t.Fatalf("run: %d %v\nlog:\n%s", s, resp, d.logText())
	}
	if b, _ := os.ReadFile(filepath.Join(d.dir, "ws", "DELTA.md")); string(b) != mergedSelf {
		t.Fatalf("DELTA.md = %q, want the merge of both lessons", b)
	}
	_, list := d.call("GET", "/v1/dev/revisions", "")
	revs := list["revisions"].([]any)
	if len(revs) != 1 || revs[0].(map[string]any)["bytes"] != float64(len(childSelf)) {
		t.Fatalf("revisions = %v, want only the child's file (the scaffold it replaced was kept in the child's temporary database)", list)
	}
}
