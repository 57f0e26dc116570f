package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model"
)

func TestPriceOverridesApplyOverTheBuiltins(t *testing.T) {
	table, err := priceTable(config.Config{ModelPrices: `{"my-model":{"in":2,"out":10}}`})
	if err != nil {
		t.Fatal(err)
	}
	if table["my-model"] != (model.Price{In: 2, Out: 10}) {
		t.Errorf("override = %+v", table["my-model"])
	}
	if _, ok := table["gpt-5"]; !ok {
		t.Error("the built-in rows are gone")
	}
}

// A bad price document refuses to boot before the database is touched, and
// the error names the variable as configuration errors do.
func TestBadPricesRefuseBoot(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DELTA_WORKSPACE": dir, "DELTA_MODEL_PRICES": `{"m":{"in":-1}}`, "DELTA_CODE_CLI": "/bin/true"}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("config.Load = %v; the price document is read at build", err)
	}
	db := filepath.Join(dir, "d.db")
	p, err := build(context.Background(), cfg, db, false, slog.New(slog.DiscardHandler))
	if err == nil {
		p.close(context.Background())
		t.Fatal("build accepted a negative price")
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Var != "DELTA_MODEL_PRICES" || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "≥ 0") {
		t.Fatalf("build = %v, want an invalid DELTA_MODEL_PRICES naming the bound", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was created before the configuration was refused: %v", err)
	}
}
