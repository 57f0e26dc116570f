package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// A run whose execution is interrupted before it even loads stays to be
// resumed when the cause is a shutdown, and ends cancelled when the user
// cancelled it — it is never failed for the daemon's own stop.
func TestExecuteInterruptedBeforeLoad(t *testing.T) {
	for _, tt := range []struct {
		name       string
		userCancel bool
		want       string
	}{
		{"shutdown keeps the run", false, store.StatusQueued},
		{"user cancel ends it", true, store.StatusCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(dir, "delta.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			req, _ := json.Marshal(engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Profile: "trusted"})
			if _, _, _, err := st.CreateRun(ctx, store.NewRun{ID: "resp_s", SessionID: "sess_s", Request: req}); err != nil {
				t.Fatal(err)
			}
			b, _ := bundle.Load(bundle.Options{Dir: dir})
			eng := engine.New(engine.Options{Store: st, Provider: toolThenAnswer(), Models: []string{"m"}, Prompt: b, Tools: tool.NewRegistry(),
				ToolNames: func(string) []string { return nil }, Budget: func(string) engine.Budget { return big }})
			stopped, cancel := context.WithCancel(ctx)
			cancel()
			eng.Execute(stopped, "resp_s", func() bool { return tt.userCancel })
			r, err := st.Run(ctx, "resp_s")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.want {
				t.Fatalf("status %s (error %q), want %s", r.Status, r.Error, tt.want)
			}
		})
	}
}
