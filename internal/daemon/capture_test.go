package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/deltaharness/delta/internal/config"
)

// DELTA_CAPTURE_CALLS reaches the engine and /v1/status says so, both ways.
func TestCaptureCallsReachesEngineAndStatus(t *testing.T) {
	for _, v := range []string{"1", "0"} {
		dir := t.TempDir()
		env := map[string]string{"DELTA_DB": filepath.Join(dir, "d.db"), "DELTA_WORKSPACE": dir, "DELTA_CODE_CLI": "/bin/true", "DELTA_CAPTURE_CALLS": v}
		cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		p, err := build(context.Background(), cfg, cfg.DB, false, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		want := v == "1"
		if got := p.status().(map[string]any)["capture_calls"]; got != want {
			t.Errorf("DELTA_CAPTURE_CALLS=%s: /v1/status capture_calls = %v, want %v", v, got, want)
		}
		if p.service.Capturing() != want {
			t.Errorf("DELTA_CAPTURE_CALLS=%s: engine capturing = %v", v, p.service.Capturing())
		}
		if err := p.close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
