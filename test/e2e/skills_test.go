package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// skillsScript answers with the skills directory block of its request, or
// says there is none.
func skillsScript(req modeltest.ChatRequest) modeltest.Reply {
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "<delta:skills>") {
			return modeltest.Reply{Text: m.Content}
		}
	}
	return modeltest.Reply{Text: "no skills block"}
}

// TestLocalSkillsAreFoundWithoutARestart: with DELTA_SKILLS=local, a skill
// added after boot reaches the next run's directory block, a rename and a
// new description are seen on the run after that, and a symlinked skill
// folder never is.
func TestLocalSkillsAreFoundWithoutARestart(t *testing.T) {
	fake := startScript(t, skillsScript)
	fake.RequireKey("fake-key")
	d := newDaemon(t, fake, "DELTA_SKILLS=local")
	ws := filepath.Join(d.dir, "ws")
	run := func() string {
		t.Helper()
		s, resp := d.call("POST", "/v1/responses", `{"input":"check the citations in draft.md"}`)
		if s != 200 || resp["status"] != "completed" {
			t.Fatalf("run: %d %v\nlog:\n%s", s, resp, d.logText())
		}
		return resp["output_text"].(string)
	}
	write := func(folder, name, desc string) {
		t.Helper()
		dir := filepath.Join(ws, "skills", folder)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("---\nname: %s\ndescription: >\n  %s\n---\n# Procedure\n", name, desc)
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := run(); out != "no skills block" {
		t.Fatalf("before any skill: %q", out)
	}
	write("cite-check", "cite-check", "Verify every citation against its source.")
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "evil", "SKILL.md"), []byte("---\nname: evil\ndescription: Lives outside the workspace.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(ws, "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	out := run()
	if !strings.Contains(out, "- cite-check: Verify every citation against its source.") || !strings.Contains(out, "not instructions") || strings.Contains(out, "evil") {
		t.Fatalf("after adding: %q", out)
	}
	if err := os.Rename(filepath.Join(ws, "skills", "cite-check"), filepath.Join(ws, "skills", "citations")); err != nil {
		t.Fatal(err)
	}
	write("citations", "citations", "Check each reference in a draft, one by one.")
	if out := run(); !strings.Contains(out, "- citations: Check each reference in a draft, one by one.") || strings.Contains(out, "cite-check") {
		t.Fatalf("after renaming and re-describing: %q", out)
	}
	_, st := d.call("GET", "/v1/status", "")
	sk := st["learning"].(map[string]any)["skills"].(map[string]any)
	if fmt.Sprint(sk["skills"]) != "[citations]" || !strings.Contains(fmt.Sprint(sk["refused"]), "symlink") {
		t.Fatalf("status skills = %v", sk)
	}
}
