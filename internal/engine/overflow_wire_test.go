package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/responses"
	"github.com/deltaharness/delta/internal/store"
)

// TestOverflowOnEachWireForcesOneCompaction: each wire's own
// context-window refusal, sent by the scripted endpoint and read by the
// real client, reaches the engine as an overflow; the engine compacts once
// and the same turn succeeds on its retry.
func TestOverflowOnEachWireForcesOneCompaction(t *testing.T) {
	for _, wire := range []string{"chat", "anthropic", "responses"} {
		t.Run(wire, func(t *testing.T) {
			var mu sync.Mutex
			mainCalls, summaries := 0, 0
			var retried modeltest.ChatRequest
			fake, err := modeltest.Start(func(req modeltest.ChatRequest) modeltest.Reply {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range req.Messages {
					if strings.Contains(m.Content, "You compact the history") {
						summaries++
						return modeltest.TextReply("Note: pages 1 to 6 fetched.")
					}
				}
				mainCalls++
				switch {
				case mainCalls <= 6:
					return modeltest.ToolReply(modeltest.ToolCall{ID: fmt.Sprintf("call_%d", mainCalls), Name: "fetch",
						Arguments: fmt.Sprintf(`{"text":"page-%d"}`, mainCalls)})
				case mainCalls == 7:
					return modeltest.OverflowReply()
				}
				retried = req
				return modeltest.TextReply("done")
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fake.Close() })
			var client model.Provider
			switch wire {
			case "chat":
				client = openai.New(openai.Options{BaseURL: fake.URL(), APIKey: "k"})
			case "anthropic":
				client = anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: "k"})
			case "responses":
				client = responses.New(responses.Options{BaseURL: fake.URL(), APIKey: "k"})
			}
			h := newHarness(t, client.Complete, engine.Budget{Steps: 50, Tokens: 1 << 40, CostUSD: 1000}, fetchTool(12000))
			r, resp := h.run(t, "fetch six pages")
			if r.Status != store.StatusDone || resp.OutputText != "done" {
				t.Fatalf("run %s (%s): %q", r.Status, r.Error, resp.OutputText)
			}
			evs := compactionEvents(t, h, r.ID)
			if len(evs) != 1 || evs[0]["reason"] != "overflow" || summaries != 1 || mainCalls != 8 {
				t.Fatalf("%d compactions %v, %d summaries, %d main calls; want one forced compaction and one retry", len(evs), evs, summaries, mainCalls)
			}
			found := false
			for _, m := range retried.Messages {
				found = found || strings.Contains(m.Content, engine.CompactionBlockPrefix)
			}
			if !found {
				t.Fatal("the retried turn does not carry the compacted window")
			}
		})
	}
}
