package anthropic

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// history50 is a 50-message conversation: a user request, then 16 rounds
// of assistant tool call, tool result and a harness block, then a user turn.
func history50() model.Request {
	req := model.Request{
		Model:           "claude-sonnet-4-5",
		System:          []string{"You are Delta, an agent harness.", "Workspace rules and tool index."},
		ReasoningEffort: "medium",
		Tools: []model.ToolSpec{{Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
		Messages: []model.Message{{Role: model.RoleUser, Content: "Summarise the repository."}},
	}
	for i := 0; len(req.Messages) < 49; i++ {
		id := fmt.Sprintf("toolu_%03d", i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: "Reading the next file.", ToolCalls: []model.ToolCall{{ID: id, Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/f%03d.go"}`, i))}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "read_file", Content: "package main\n\nfunc main() {}\n"},
			model.Message{Role: model.RoleUser, Content: "<delta:turn/>"},
		)
	}
	req.Messages = append(req.Messages[:49], model.Message{Role: model.RoleUser, Content: "<delta:turn step=17/>"})
	return req
}

// BenchmarkBuildRequest is the pure request build and JSON encoding of a
// 50-message history, no network.
func BenchmarkBuildRequest(b *testing.B) {
	req := history50()
	b.ReportAllocs()
	for b.Loop() {
		p, err := buildParams(req, DefaultMaxTokens)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStream parses a recorded tool-call stream.
func BenchmarkParseStream(b *testing.B) {
	body, err := os.ReadFile("testdata/stream_tools.sse")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		acc := newAccumulator(model.Stream{})
		if err := acc.read(recorded(b, body)); err != nil {
			b.Fatal(err)
		}
		if r := acc.response(); len(r.ToolCalls) != 2 {
			b.Fatal(r)
		}
	}
}
