package responses

import (
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// history50 is the shared 50-message conversation, each assistant turn
// carrying stored reasoning as the native lane replays it.
func history50() model.Request {
	return wiretest.History50("gpt-5", "call_", json.RawMessage(`{"responses":{"items":[{"id":"rs","type":"reasoning","summary":[],"encrypted_content":"gAAAA"}],"phase":"commentary"}}`))
}

// BenchmarkWire runs the shared wire benchmarks on the Responses wire,
// the openai.com lane.
func BenchmarkWire(b *testing.B) {
	wiretest.RunBenchmarks(b, wiretest.Bench{
		History: history50(),
		Build: func(req model.Request, defs *model.ToolDefs) ([]byte, error) {
			p, err := build(req, lane{native: true, summary: "auto"}, defs)
			return p.encode(), err
		},
		Stream: []byte(recordedStream), StreamCalls: 1,
		Parse: wiretest.Accumulate(func(s model.Stream) *accumulator { return newAccumulator(s, true) }, (*accumulator).read, (*accumulator).response),
		New:   func(url string) model.Provider { return New(Options{BaseURL: url, APIKey: "sk-bench"}) },
	})
}
