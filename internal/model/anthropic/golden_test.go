package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// pinnedHeaders are the request headers a golden file pins; the SDK's
// X-Stainless-* platform headers vary with the Go runtime and are left out.
var pinnedHeaders = []string{"Accept", "Anthropic-Version", "Authorization", "Content-Type", "X-Api-Key"}

func args(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"path":"src/file_%02d.go"}`, i))
}

// thinkingExtra is what this wire stored on an assistant message.
const thinkingExtra = `{"anthropic":{"thinking":[{"signature":"c2lnX3ByZXY","thinking":"Read the files first.","type":"thinking"}]}}`

func goldenCases() map[string]model.Request {
	plain := basicRequest()

	round := basicRequest()
	round.ReasoningEffort = "medium"
	round.Messages = append(round.Messages,
		model.Message{Role: model.RoleAssistant, Content: "I will write it.", ToolCalls: []model.ToolCall{
			{ID: "toolu_01", Name: "write_file", Arguments: json.RawMessage(`{"path":"brief.md","content":"# Brief"}`)},
		}, Extra: json.RawMessage(thinkingExtra)},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_01", Name: "write_file", Content: "wrote 7 bytes to brief.md"},
		model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"},
	)

	// Twelve parallel calls after a short history: 24 blocks in one turn,
	// wider than one 20-block lookback window.
	par := basicRequest()
	par.Model = "claude-opus-4-6"
	par.ReasoningEffort = "high"
	par.Messages = append(par.Messages,
		model.Message{Role: model.RoleAssistant, Content: "Listing first.", ToolCalls: []model.ToolCall{{ID: "toolu_00", Name: "list_files", Arguments: json.RawMessage(`{"path":"src"}`)}}},
		model.Message{Role: model.RoleTool, ToolCallID: "toolu_00", Name: "list_files", Content: "12 files"},
	)
	var calls []model.ToolCall
	for i := 1; i <= 12; i++ {
		calls = append(calls, model.ToolCall{ID: fmt.Sprintf("toolu_%02d", i), Name: "read_file", Arguments: args(i)})
	}
	par.Messages = append(par.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: calls, Extra: json.RawMessage(thinkingExtra)})
	for i := 1; i <= 12; i++ {
		par.Messages = append(par.Messages, model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprintf("toolu_%02d", i), Name: "read_file", Content: fmt.Sprintf("package f%02d", i)})
	}
	par.Messages = append(par.Messages, model.Message{Role: model.RoleUser, Content: "<delta:turn step=3/>"})

	return map[string]model.Request{"plain": plain, "tool_round_trip": round, "parallel_12": par}
}

func TestGoldenRequests(t *testing.T) {
	for name, req := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := modeltest.Serve(t, nil)
			c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), APIKey: "sk-ant-golden"})
			if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := fake.Requests()[0]
			if n := strings.Count(string(got.Raw), `"cache_control"`); n < 2 || n > 4 {
				t.Errorf("%d cache_control markers, want 2..4", n)
			}
			wiretest.Golden(t, filepath.Join("testdata", name+".golden"), wiretest.GoldenRequest(t, got, pinnedHeaders...))
		})
	}
}

// TestParallelCallsReachPreviousWrite checks the placement rule's purpose
// on the 12-call turn: some breakpoint other than the tail sits within 20
// blocks after the previous turn's last tool result, so its lookback
// window reaches the previous request's cache write.
func TestParallelCallsReachPreviousWrite(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	if _, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(context.Background(), goldenCases()["parallel_12"], model.Stream{}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(fake.Requests()[0].Raw, &body); err != nil {
		t.Fatal(err)
	}
	var marks []int
	prevTail := -1
	pos := 0
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if b["tool_use_id"] == "toolu_00" {
				prevTail = pos
			}
			if b["cache_control"] != nil {
				marks = append(marks, pos)
			}
			pos++
		}
	}
	if len(marks) < 2 {
		t.Fatalf("breakpoints at %v", marks)
	}
	reached := false
	for _, m := range marks[:len(marks)-1] {
		if m >= prevTail && m-prevTail < 20 {
			reached = true
		}
	}
	if tail := marks[len(marks)-1]; tail-prevTail < 20 || !reached {
		t.Errorf("breakpoints %v, previous write at %d: the tail alone is out of reach, so another must reach it", marks, prevTail)
	}
}

// TestGoldenEffort pins the reasoning wire for each model family and effort.
func TestGoldenEffort(t *testing.T) {
	models := []string{"claude-sonnet-4-5", "claude-3-7-sonnet-20250219", "claude-opus-4-6", "claude-sonnet-5", "anthropic/claude-haiku-4.5", "claude-future"}
	efforts := []string{"", "none", "minimal", "low", "medium", "high", "xhigh", "max", " HIGH ", "weird"}
	fake := modeltest.Serve(t, nil)
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL()})
	var out bytes.Buffer
	for _, m := range models {
		for _, e := range efforts {
			req := basicRequest()
			req.Model, req.ReasoningEffort = m, e
			if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatalf("%s/%q: %v", m, e, err)
			}
			reqs := fake.Requests()
			var body struct {
				MaxTokens    int64           `json:"max_tokens"`
				Thinking     json.RawMessage `json:"thinking"`
				OutputConfig json.RawMessage `json:"output_config"`
			}
			if err := json.Unmarshal(reqs[len(reqs)-1].Raw, &body); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "%-28s %-8q max_tokens=%-5d thinking=%s output_config=%s\n", m, e, body.MaxTokens, orNone(body.Thinking), orNone(body.OutputConfig))
		}
	}
	wiretest.Golden(t, filepath.Join("testdata", "effort.golden"), out.Bytes())
}

func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "-"
	}
	return string(raw)
}
