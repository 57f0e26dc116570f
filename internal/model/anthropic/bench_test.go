package anthropic

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// history50 is the shared 50-message conversation on a Claude model.
func history50() model.Request { return wiretest.History50("claude-sonnet-4-5", "toolu_", nil) }

// parse reads a stream with the wire's accumulator.
var parse = wiretest.Accumulate(newAccumulator, (*accumulator).read, (*accumulator).response)

// BenchmarkWire runs the shared wire benchmarks on the Messages wire.
func BenchmarkWire(b *testing.B) {
	wiretest.RunBenchmarks(b, wiretest.Bench{
		History: history50(),
		Build: func(req model.Request, defs *model.ToolDefs) ([]byte, error) {
			p, err := build(req, DefaultMaxTokens, defs)
			return p.encode(), err
		},
		StreamFile: "testdata/stream_tools.sse", StreamCalls: 2,
		Parse: parse,
		New:   func(url string) model.Provider { return New(Options{BaseURL: url, APIKey: "sk-bench"}) },
	})
}
