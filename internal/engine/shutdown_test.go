package engine_test

import (
	"context"
	"testing"

	"github.com/deltaharness/delta/internal/store"
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
			st, eng, id := bareEngine(t, toolThenAnswer(), nil)
			ctx := context.Background()
			stopped, cancel := context.WithCancel(ctx)
			cancel()
			eng.Execute(stopped, id, func() bool { return tt.userCancel })
			r, err := st.Run(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.want {
				t.Fatalf("status %s (error %q), want %s", r.Status, r.Error, tt.want)
			}
		})
	}
}
