package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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

// wires names the three model wires wireClient speaks.
var wires = []string{"chat", "anthropic", "responses"}

// wireClient is the real client of wire talking to the endpoint at url.
func wireClient(wire, url string) model.Provider {
	switch wire {
	case "anthropic":
		return anthropic.New(anthropic.Options{BaseURL: url, APIKey: "k"})
	case "responses":
		return responses.New(responses.Options{BaseURL: url, APIKey: "k"})
	}
	return openai.New(openai.Options{BaseURL: url, APIKey: "k"})
}

// TestOverflowOnEachWireForcesOneCompaction: each wire's own
// context-window refusal, sent by the scripted endpoint and read by the
// real client, reaches the engine as an overflow; the engine compacts once
// and the same turn succeeds on its retry.
func TestOverflowOnEachWireForcesOneCompaction(t *testing.T) {
	for _, wire := range wires {
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
			client := wireClient(wire, fake.URL())
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

// TestEstimateCoversEachWiresBody: the pre-send estimate, in bytes, is at
// least the body each wire client actually sends for the same request (so
// the dial is never passed by an under-count), and not wildly more.
func TestEstimateCoversEachWiresBody(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what to look for"},"n":{"type":"integer"}},"required":["q"]}`)
	req := model.Request{
		Model:  "m",
		System: []string{strings.Repeat("You are careful. ", 200), "Policy: \"quote\" <tags> & newlines\n\n" + strings.Repeat("règle ", 100)},
		Tools: []model.ToolSpec{{Name: "grep", Description: "search files", Parameters: params},
			{Name: "web_fetch", Description: strings.Repeat("fetch a page ", 30), Parameters: params}},
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: "find the Zürich 「報告書」 numbers"})
	for i := range 40 {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: "looking\n", ToolCalls: []model.ToolCall{{ID: id, Name: "grep",
				Arguments: json.RawMessage(fmt.Sprintf(`{"q":"line \"%d\"\nnext","n":%d}`, i, i))}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "grep", Content: strings.Repeat("résultat \"x\"\t<b>\n", 40)})
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: "<delta:turn>\nnow\n</delta:turn>"})
	est := (engine.EstimateTokens(req) - 4096) * 3
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			fake, err := modeltest.Start(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			client := wireClient(wire, fake.URL())
			if _, err := client.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatal(err)
			}
			body := len(fake.Requests()[0].Raw)
			t.Logf("%s body %d bytes, estimate %d bytes (%.2f×)", wire, body, est, float64(est)/float64(body))
			if body > est {
				t.Fatalf("the %s body is %d bytes, more than the estimate's %d", wire, body, est)
			}
			if float64(est) > 1.6*float64(body) {
				t.Fatalf("the estimate (%d bytes) is far above the %s body (%d)", est, wire, body)
			}
		})
	}
	// An image counts as its fixed reserve, whatever its size.
	small, large := req, req
	small.Messages = append(slices.Clone(req.Messages), model.Message{Role: model.RoleUser, Images: []model.Image{{MIME: "image/png", Data: make([]byte, 10)}}})
	large.Messages = append(slices.Clone(req.Messages), model.Message{Role: model.RoleUser, Images: []model.Image{{MIME: "image/png", Data: make([]byte, 3<<20)}}})
	if a, b := engine.EstimateTokens(small), engine.EstimateTokens(large); a != b || a-engine.EstimateTokens(req) < 1600 {
		t.Fatalf("image estimates %d and %d (without: %d): want one fixed reserve", a, b, engine.EstimateTokens(req))
	}
}
