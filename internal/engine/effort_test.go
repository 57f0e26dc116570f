package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
)

// TestDefaultReasoningEffortReachesTheModel: the configured effort is asked
// of the model when a request names none, and a request's own effort wins.
func TestDefaultReasoningEffortReachesTheModel(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	provider := func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		mu.Lock()
		seen = append(seen, req.ReasoningEffort)
		mu.Unlock()
		return model.Response{Model: req.Model, Text: "ok", Usage: model.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
	h := newHarnessWith(t, provider, big, func(o *engine.Options) { o.ReasoningEffort = "high" })
	h.run(t, "no effort named")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := h.svc.Submit(ctx, engine.Submission{Request: engine.Request{
		Input: []model.Message{{Role: model.RoleUser, Content: "low, please"}}, Profile: "trusted", Store: true, ReasoningEffort: "low"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Wait(ctx, "", r.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "high" || seen[1] != "low" {
		t.Fatalf("efforts asked of the model = %q, want [high low]", seen)
	}
}
