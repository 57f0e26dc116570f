package openai

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// history50 is the shared 50-message conversation on a routed model.
func history50() model.Request { return wiretest.History50("openai/gpt-5", "call_", nil) }

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
		Parse: func(r *http.Response) (model.Response, error) {
			acc := newAccumulator(model.Stream{})
			err := acc.read(r)
			return acc.response(), err
		},
		New: func(url string) model.Provider { return New(Options{BaseURL: url, APIKey: "sk-bench"}) },
	})
}

// TestRecordedStream reads the recorded stream the benchmark parses.
func TestRecordedStream(t *testing.T) {
	body, err := os.ReadFile("testdata/stream_tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	var text, reasoning bytes.Buffer
	acc := newAccumulator(model.Stream{OnText: func(d string) { text.WriteString(d) }, OnReasoning: func(d string) { reasoning.WriteString(d) }})
	if err := acc.read(wiretest.Recorded(body)); err != nil {
		t.Fatal(err)
	}
	r := acc.response()
	want := model.Usage{InputTokens: 4812, OutputTokens: 89, CacheReadTokens: 4000, CacheWriteTokens: 800, CostUSD: 0.0123, CostReported: true}
	if r.Usage != want {
		t.Errorf("Usage = %+v, want %+v", r.Usage, want)
	}
	if r.Model != "openai/gpt-5" || r.FinishReason != "tool_calls" || r.Text != "Reading both." || text.String() != r.Text || reasoning.String() != "Two files to read." {
		t.Errorf("r = %+v, reasoning %q", r, reasoning.String())
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "call_01A" || string(r.ToolCalls[0].Arguments) != `{"path": "a.go"}` ||
		r.ToolCalls[1].Name != "list_files" || string(r.ToolCalls[1].Arguments) != "{}" {
		t.Errorf("tool calls = %+v", r.ToolCalls)
	}
}
