package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool/remember"
)

func built(t *testing.T, env map[string]string) (*parts, map[string]any) {
	t.Helper()
	if env["DELTA_WORKSPACE"] == "" {
		env["DELTA_WORKSPACE"] = t.TempDir()
	}
	env["DELTA_CODE_CLI"] = "/bin/true"
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p, err := build(context.Background(), cfg, ":memory:", false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close(context.Background()) })
	return p, p.status().(map[string]any)
}

// remember is registered in a normal boot and left out of a safe-mode one,
// with the reason in /v1/status; the self-file itself (for restores) exists
// in both.
func TestRememberIsOffInSafeMode(t *testing.T) {
	p, st := built(t, map[string]string{})
	self := st["learning"].(map[string]any)["self_file"].(map[string]any)
	if self["remember"] != true || self["max_bytes"] != 3200 || p.self == nil {
		t.Fatalf("normal boot: self_file status %v", self)
	}
	p, st = built(t, map[string]string{"DELTA_SAFE_MODE": "1"})
	self = st["learning"].(map[string]any)["self_file"].(map[string]any)
	omitted := st["tools"].(map[string]any)["omitted"].(map[string]string)
	if self["remember"] != false || omitted[remember.Name] != "DELTA_SAFE_MODE=1" || p.self == nil {
		t.Fatalf("safe mode: self_file %v, omitted %v; want remember omitted for safe mode and the self-file kept for restores", self, omitted)
	}
}

// DELTA_SKILLS=local registers the skill tools and reports the indexed
// skills; off registers nothing and says nothing; safe mode leaves local
// skills out with its reason.
func TestSkillsBackends(t *testing.T) {
	dir := citeCheckWorkspace(t)
	p, st := built(t, map[string]string{"DELTA_SKILLS": "local", "DELTA_WORKSPACE": dir})
	sk := st["learning"].(map[string]any)["skills"].(map[string]any)
	if sk["backend"] != "local" || !slices.Equal(sk["skills"].([]string), []string{"cite-check"}) {
		t.Fatalf("local: skills status %v", sk)
	}
	if p.skills == nil {
		t.Fatal("local: no index")
	}
	blocks := p.skillBlocks(context.Background(), "resp_1", "s_1", "check citations")
	if len(blocks) != 1 || !strings.Contains(blocks[0], "- cite-check: Verify citations against sources.") {
		t.Fatalf("local: attempt blocks %q", blocks)
	}
	reg := st["tools"].(map[string]any)["registered"].([]string)
	if !slices.Contains(reg, "skill_search") || !slices.Contains(reg, "skill_get") {
		t.Fatalf("local: registered %v", reg)
	}

	p, st = built(t, map[string]string{"DELTA_SKILLS": "off", "DELTA_WORKSPACE": dir})
	reg = st["tools"].(map[string]any)["registered"].([]string)
	if slices.ContainsFunc(reg, func(n string) bool { return strings.Contains(n, "skill") }) || p.skillBlocks(context.Background(), "r", "s", "citations") != nil {
		t.Fatalf("off: registered %v", reg)
	}

	_, st = built(t, map[string]string{"DELTA_SKILLS": "local", "DELTA_SAFE_MODE": "1", "DELTA_WORKSPACE": dir})
	omitted := st["tools"].(map[string]any)["omitted"].(map[string]string)
	sk = st["learning"].(map[string]any)["skills"].(map[string]any)
	if omitted["skill_search"] != "DELTA_SAFE_MODE=1" || !strings.Contains(sk["state"].(string), "SAFE_MODE") {
		t.Fatalf("safe mode: omitted %v, skills %v", omitted, sk)
	}
}

// /v1/status' learning block names the hydration tools, without secrets; safe mode has no hydration, and a
// configured tool no server offers is skipped, with a hydration event
// naming why.
func TestLearningStatusHydration(t *testing.T) {
	env := func() map[string]string {
		return map[string]string{"DELTA_HYDRATE_TOOLS": "crm__get_dashboard", "DELTA_HYDRATE_SEARCH_TOOL": "crm__search_knowledge",
			"DELTA_VOCAB": `{"subjectKeys":["account"]}`}
	}
	p, st := built(t, env())
	l := st["learning"].(map[string]any)
	hy := l["hydration"].(map[string]any)
	if hy["enabled"] != true || !slices.Equal(hy["tools"].([]string), []string{"crm__get_dashboard"}) ||
		hy["search_tool"] != "crm__search_knowledge" || !slices.Equal(hy["subject_keys"].([]string), []string{"account"}) {
		t.Fatalf("hydration status %v", hy)
	}
	// No MCP server in this build: the tools are not registered, so a new
	// session's first run gets no block, and the event says why.
	ctx := context.Background()
	if _, _, _, err := p.store.CreateRun(ctx, store.NewRun{ID: "resp_h1", SessionID: "s_h1", Request: json.RawMessage(`{"metadata":{"account":"a1"}}`)}); err != nil {
		t.Fatal(err)
	}
	if b := p.hydration.block(ctx, "resp_h1", "s_h1", "brief"); b != "" {
		t.Fatalf("block %q", b)
	}
	evs, err := p.store.Events(ctx, store.EventFilter{RunID: "resp_h1"})
	if err != nil {
		t.Fatal(err)
	}
	var data string
	for _, e := range evs {
		if e.Name == event.Hydration {
			data = string(e.Data)
		}
	}
	if !strings.Contains(data, `"crm__get_dashboard":"not_registered"`) || !strings.Contains(data, `"crm__search_knowledge":"no_auth_token"`) {
		t.Fatalf("hydration event %q", data)
	}

	safe := env()
	safe["DELTA_SAFE_MODE"] = "1"
	_, st = built(t, safe)
	if hy := st["learning"].(map[string]any)["hydration"].(map[string]any); hy["enabled"] != false {
		t.Fatalf("safe mode hydration %v", hy)
	}
}

// The local skills block tells a run only about the tools it may call:
// with DELTA_ALLOWED_TOOLS leaving skill_get out, the block points at
// read_file instead and never names skill_get.
func TestSkillsBlockNamesOnlyCallableTools(t *testing.T) {
	dir := citeCheckWorkspace(t)
	for _, tc := range []struct {
		allowed, want, unwanted string
	}{
		{"", "read it with skill_get (or read_file", ""},
		{"skill_search,read_file", "read skills/<folder>/SKILL.md with read_file", "skill_get"},
	} {
		env := map[string]string{"DELTA_SKILLS": "local", "DELTA_WORKSPACE": dir}
		if tc.allowed != "" {
			env["DELTA_ALLOWED_TOOLS"] = tc.allowed
		}
		p, _ := built(t, env)
		ctx := context.Background()
		if _, _, _, err := p.store.CreateRun(ctx, store.NewRun{ID: "resp_1", SessionID: "s_1", Request: json.RawMessage(`{"input":"check citations","profile":"trusted"}`)}); err != nil {
			t.Fatal(err)
		}
		blocks := p.skillBlocks(ctx, "resp_1", "s_1", "check citations")
		if len(blocks) != 1 || !strings.Contains(blocks[0], tc.want) || !strings.Contains(blocks[0], "- cite-check:") ||
			(tc.unwanted != "" && strings.Contains(blocks[0], tc.unwanted)) {
			t.Fatalf("allowed %q: blocks %q, want %q and never %q", tc.allowed, blocks, tc.want, tc.unwanted)
		}
	}
}

// citeCheckWorkspace is a workspace holding one local skill, cite-check.
func citeCheckWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "cite-check"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", "cite-check", "SKILL.md"),
		[]byte("---\nname: cite-check\ndescription: Verify citations against sources.\n---\nSteps.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
