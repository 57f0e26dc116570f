package daemon

import (
	"context"
	"log/slog"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/tool/remember"
)

func built(t *testing.T, env map[string]string) (*parts, map[string]any) {
	t.Helper()
	env["DELTA_WORKSPACE"] = t.TempDir()
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
