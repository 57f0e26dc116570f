package engine_test

import (
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/store"
)

// A Responses object carries an error only when the run ended without
// completing; one still queued or running has a null error, as the
// Responses API sends it.
func TestBuildResponseErrorOnlyWhenEndedBadly(t *testing.T) {
	run := store.Run{ID: "resp_1", Model: "m"}
	for _, tt := range []struct {
		status, wantStatus, wantCode string
	}{
		{"", "in_progress", ""},
		{store.StatusQueued, "in_progress", ""},
		{store.StatusRunning, "in_progress", ""},
		{store.StatusDone, "completed", ""},
		{store.StatusFailed, "failed", "run_failed"},
		{store.StatusCancelled, "cancelled", "run_cancelled"},
	} {
		t.Run(tt.wantStatus+"/"+tt.status, func(t *testing.T) {
			resp := engine.BuildResponse(run, tt.status, "", "why")
			if resp.Status != tt.wantStatus {
				t.Fatalf("status = %q, want %q", resp.Status, tt.wantStatus)
			}
			switch {
			case tt.wantCode == "" && resp.Error != nil:
				t.Fatalf("error = %+v, want null", resp.Error)
			case tt.wantCode != "" && (resp.Error == nil || resp.Error.Code != tt.wantCode || resp.Error.Message != "why"):
				t.Fatalf("error = %+v, want %s: why", resp.Error, tt.wantCode)
			}
		})
	}
}
