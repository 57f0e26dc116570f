package daemon

import (
	"context"
	"testing"

	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/version"
)

// Every boot writes the harness version, build and schema version into the
// meta table, and /v1/dev/config shows the same record.
func TestServeRecordsBootInMeta(t *testing.T) {
	cfg, stop := serve(t)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.LastBoot(context.Background())
	if err != nil {
		t.Fatalf("no boot recorded: %v", err)
	}
	if b.HarnessVersion != version.Version || b.Build != cfg.Build || b.SchemaVersion != store.SchemaVersion() || b.BootedAt.IsZero() {
		t.Fatalf("boot record = %+v, want harness %s, build %q, schema %d", b, version.Version, cfg.Build, store.SchemaVersion())
	}
	p := &parts{boot: b, status: func() any { return map[string]any{"version": version.Version} }}
	dc := devConfig(cfg, p)
	if dc["schema_version"] != store.SchemaVersion() {
		t.Fatalf("dev config schema_version = %v", dc["schema_version"])
	}
	if rec := dc["boot"].(map[string]any); rec["harness_version"] != version.Version || rec["booted_at"] != b.BootedAt {
		t.Fatalf("dev config boot = %v", rec)
	}
}
