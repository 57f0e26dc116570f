package daemon

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/deltaharness/delta/internal/config"
)

// A DELTA_COMPACT_AT_TOKENS the offered tools' schemas and the system
// prompt already fill refuses to boot, naming the variable and the
// smallest value that works, instead of a daemon that never compacts and
// overflows the model; that value, and the default, boot.
func TestDialTheToolsFillRefusesBoot(t *testing.T) {
	boot := func(dial string, allowed string) error {
		t.Helper()
		dir := t.TempDir()
		env := map[string]string{"DELTA_WORKSPACE": dir, "DELTA_CODE_CLI": "/bin/true", "DELTA_COMPACT_AT_TOKENS": dial}
		if allowed != "" {
			env["DELTA_ALLOWED_TOOLS"] = allowed
		}
		cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatalf("config.Load(%s) = %v", dial, err)
		}
		p, err := build(context.Background(), cfg, filepath.Join(dir, "d.db"), false, slog.New(slog.DiscardHandler))
		if err == nil {
			p.close(context.Background())
		}
		return err
	}
	err := boot("8000", "")
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Var != "DELTA_COMPACT_AT_TOKENS" || !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("build at a dial of 8000 with every tool = %v, want an invalid DELTA_COMPACT_AT_TOKENS", err)
	}
	m := regexp.MustCompile(`set at least (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the refusal does not name the smallest dial that works: %v", err)
	}
	least, _ := strconv.Atoi(m[1])
	for _, tt := range []struct {
		dial, allowed string
	}{
		{m[1], ""}, {strconv.Itoa(config.DefaultCompactAtTokens), ""}, {"4000", "read_file"},
	} {
		if err := boot(tt.dial, tt.allowed); err != nil {
			t.Errorf("build at a dial of %s (allowed %q) = %v, want it to boot (the smallest named was %d)", tt.dial, tt.allowed, err, least)
		}
	}
	if err := boot(strconv.Itoa(least-1), ""); err == nil {
		t.Errorf("build at a dial of %d, under the smallest named (%d), booted", least-1, least)
	}
}
