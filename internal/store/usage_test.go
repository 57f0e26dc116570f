package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// TestAddUsage: a child's usage lands on the running parent's totals next to
// its own steps, and a run that is not running is never charged.
func TestAddUsage(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	newRun(t, s, store.NewRun{ID: "resp_u", SessionID: "s_u"})
	child := model.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CostUSD: 0.25}
	if err := s.AddUsage(ctx, "resp_u", child); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("AddUsage on a queued run = %v, want ErrAlreadyFinal", err)
	}
	if _, _, err := s.Start(ctx, "resp_u", []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitStep(ctx, store.Step{RunID: "resp_u", SessionID: "s_u", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, Content: "x"},
		Usage:   model.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.01}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "resp_u", child); err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(ctx, "resp_u")
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 1100, OutputTokens: 210, CacheReadTokens: 300, CostUSD: 0.26}
	if r.Usage.InputTokens != want.InputTokens || r.Usage.OutputTokens != want.OutputTokens ||
		r.Usage.CacheReadTokens != want.CacheReadTokens || r.Usage.CostUSD < 0.2599 || r.Usage.CostUSD > 0.2601 || r.Steps != 1 {
		t.Fatalf("run usage = %+v steps %d, want %+v and 1 step (a child's usage is not a step)", r.Usage, r.Steps, want)
	}
	if _, err := s.Finish(ctx, "resp_u", store.StatusDone, []byte(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "resp_u", child); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("AddUsage on a finished run = %v, want ErrAlreadyFinal", err)
	}
	if err := s.AddUsage(ctx, "resp_missing", child); !errors.Is(err, store.ErrAlreadyFinal) {
		t.Fatalf("AddUsage on an unknown run = %v, want an error", err)
	}
}
