package engine_test

import (
	"context"
	"sync"
	"testing"

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
	low := userRequest("low, please")
	low.ReasoningEffort = "low"
	submitAndWait(t, h.svc, engine.Submission{Request: low})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "high" || seen[1] != "low" {
		t.Fatalf("efforts asked of the model = %q, want [high low]", seen)
	}
}
