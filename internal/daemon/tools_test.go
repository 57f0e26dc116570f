package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/todo"
	"github.com/deltaharness/delta/internal/workspace"
)

func envelope(t *testing.T, env map[string]string) (config.Config, *toolStatus) {
	t.Helper()
	b := builtins(t, env)
	return b.cfg, b.ts
}

// wired is what builtins set up: the process's configuration, its
// workspace and store, and the built-in tools build registers.
type wired struct {
	cfg config.Config
	ws  *workspace.Root
	st  *store.Store
	reg *tool.Registry
	ts  *toolStatus
}

// builtins wires the built-in tools as build does, for a process
// configured by env in a fresh workspace (DELTA_WORKSPACE) with its own
// store.
func builtins(t *testing.T, env map[string]string) wired {
	t.Helper()
	dir := t.TempDir()
	env["DELTA_CODE_CLI"] = "/bin/true"
	env["DELTA_WORKSPACE"] = dir
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg, ts := buildTools(cfg, ws, nil, todo.New(st, todo.Options{}), nil, slog.New(slog.DiscardHandler))
	return wired{cfg: cfg, ws: ws, st: st, reg: reg, ts: ts}
}

var safeFloor = []string{"read_file", "list_files", "grep", "web_fetch", "web_search", "todo"}

func TestToolEnvelopes(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		request string
		want    []string // nil = every registered tool
	}{
		{"trusted", map[string]string{}, "", nil},
		{"trusted narrowed by request", map[string]string{}, "safe", safeFloor},
		{"allowlist narrows", map[string]string{"DELTA_ALLOWED_TOOLS": "read_file, write_file,nope"}, "", []string{"read_file", "write_file"}},
		{"allowlist cannot widen safe", map[string]string{"DELTA_PROFILE": "safe", "DELTA_ALLOWED_TOOLS": "read_file,write_file,code"}, "trusted", []string{"read_file"}},
		{"empty allowlist is the floor", map[string]string{"DELTA_ALLOWED_TOOLS": " , "}, "", safeFloor},
		{"malformed allowlist is the floor", map[string]string{"DELTA_ALLOWED_TOOLS": "read_file,write file"}, "trusted", safeFloor},
		{"safe mode", map[string]string{"DELTA_SAFE_MODE": "1", "DELTA_PROFILE": "trusted", "DELTA_ALLOWED_TOOLS": "write_file,code"}, "trusted", safeFloor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := envelope(t, tc.env)
			got := ts.names(tc.request)
			want := tc.want
			if want == nil {
				want = ts.reg.Names()
			}
			a, b := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			if !slices.Equal(a, b) {
				t.Fatalf("names(%q) = %v, want %v", tc.request, got, want)
			}
		})
	}
}

func TestSafeModeStatusAndRegistry(t *testing.T) {
	cfg, ts := envelope(t, map[string]string{"DELTA_SAFE_MODE": "1", "DELTA_PINNED_TOOLS": "read_file,write_file"})
	if !cfg.SafeMode || cfg.Placement("trusted") != config.ProfileSafe {
		t.Fatalf("safe mode placement = %s", cfg.Placement("trusted"))
	}
	v := ts.view()
	if !slices.Equal(v["registered"].([]string), ts.reg.Names()) {
		t.Errorf("registered %v != registry %v", v["registered"], ts.reg.Names())
	}
	if _, ok := ts.reg.Get("code"); ok || v["omitted"].(map[string]string)["code"] == "" {
		t.Errorf("code not omitted in safe mode: %v", v["omitted"])
	}
	if p := v["pinned"].([]string); !slices.Equal(p, []string{"read_file"}) {
		t.Errorf("pinned = %v; write_file is outside the safe envelope", p)
	}
	cfg2, _ := envelope(t, map[string]string{})
	if _, ts2 := envelope(t, map[string]string{}); !slices.Contains(ts2.reg.Names(), "code") || cfg2.SafeMode {
		t.Errorf("code missing outside safe mode: %v", ts2.reg.Names())
	}
}

// /v1/status names the tools that run without DELTA_TOOL_TIMEOUT_MS: the
// self-bounding ones, never an ordinary or MCP tool.
func TestStatusListsUntimedTools(t *testing.T) {
	_, ts := delegation(t, map[string]string{})
	addResearch(ts.cfg, ts.reg, ts, workspaceOf(t), slog.New(slog.DiscardHandler))
	got := ts.view()["untimed"].([]string)
	want := []string{"code", "spawn_subagent", "eval_n", "research"}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("untimed = %v, want %v", got, want)
	}
}

func workspaceOf(t *testing.T) *workspace.Root {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}
