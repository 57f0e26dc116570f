package openai_test

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// BenchmarkComplete is one tool-call round trip over loopback against the
// fake at zero latency: encode the request, stream the reply, assemble the
// call. It measures the client's and the SDK's overhead, not a model.
func BenchmarkComplete(b *testing.B) {
	wiretest.BenchComplete(b, basicRequest(), modeltest.ToolCall{
		ID: "call_1", Name: "write_file",
		Arguments: `{"path":"brief.md","content":"# Brief\n\n> Plan the launch party for Friday, budget is small.\n"}`,
	}, func(url string) model.Provider { return openai.New(openai.Options{BaseURL: url, APIKey: "sk-bench"}) })
}
