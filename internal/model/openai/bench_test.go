package openai_test

import (
	"context"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
)

// BenchmarkComplete is one tool-call round trip over loopback against the
// fake at zero latency: encode the request, stream the reply, assemble the
// call. It measures the client's and the SDK's overhead, not a model.
func BenchmarkComplete(b *testing.B) {
	fake, err := modeltest.Start(modeltest.Sequence(modeltest.ToolReply(modeltest.ToolCall{
		ID: "call_1", Name: "write_file",
		Arguments: `{"path":"brief.md","content":"# Brief\n\n> Plan the launch party for Friday, budget is small.\n"}`,
	})))
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	c := openai.New(openai.Options{BaseURL: fake.URL(), APIKey: "sk-bench"})
	req := basicRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Complete(ctx, req, model.Stream{})
		if err != nil || len(res.ToolCalls) != 1 {
			b.Fatalf("Complete = %+v, %v", res, err)
		}
	}
}
