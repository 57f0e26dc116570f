package anthropic

import (
	"net/http"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// history50 is the shared 50-message conversation on a Claude model.
func history50() model.Request { return wiretest.History50("claude-sonnet-4-5", "toolu_", nil) }

// BenchmarkWire runs the shared wire benchmarks on the Messages wire.
func BenchmarkWire(b *testing.B) {
	wiretest.RunBenchmarks(b, wiretest.Bench{
		History: history50(),
		Build: func(req model.Request, defs *model.ToolDefs) ([]byte, error) {
			p, err := build(req, DefaultMaxTokens, defs)
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
