package openai

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// history50 is the shared 50-message conversation on a routed model.
func history50() model.Request { return wiretest.History50("openai/gpt-5", "call_", nil) }

// parse reads a stream with the wire's accumulator.
var parse = wiretest.Accumulate(newAccumulator, (*accumulator).read, (*accumulator).response)

// BenchmarkWire runs the shared wire benchmarks on the Chat Completions
// wire, OpenRouter's lane.
func BenchmarkWire(b *testing.B) {
	wiretest.RunBenchmarks(b, wiretest.Bench{
		History: history50(),
		Build: func(req model.Request, defs *model.ToolDefs) ([]byte, error) {
			p, err := build(req, true, defs)
			return p.encode(), err
		},
		StreamFile: "testdata/stream_tools.sse", StreamCalls: 2,
		Parse: parse,
		New:   func(url string) model.Provider { return New(Options{BaseURL: url, APIKey: "sk-bench"}) },
	})
}

// TestRecordedStream reads the recorded stream the benchmark parses.
func TestRecordedStream(t *testing.T) {
	r, text, reasoning := wiretest.ParseRecorded(t, "testdata/stream_tools.sse", parse)
	want := model.Usage{InputTokens: 4812, OutputTokens: 89, CacheReadTokens: 4000, CacheWriteTokens: 800, CostUSD: 0.0123, CostReported: true}
	if r.Usage != want {
		t.Errorf("Usage = %+v, want %+v", r.Usage, want)
	}
	if r.Model != "openai/gpt-5" || r.FinishReason != "tool_calls" || r.Text != "Reading both." || text != r.Text || reasoning != "Two files to read." {
		t.Errorf("r = %+v, reasoning %q", r, reasoning)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "call_01A" || string(r.ToolCalls[0].Arguments) != `{"path": "a.go"}` ||
		r.ToolCalls[1].Name != "list_files" || string(r.ToolCalls[1].Arguments) != "{}" {
		t.Errorf("tool calls = %+v", r.ToolCalls)
	}
}
