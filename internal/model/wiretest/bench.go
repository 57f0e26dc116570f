package wiretest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// History50 is a 50-message conversation for modelName: a user request,
// then 16 rounds of an assistant tool call (call IDs callPrefix000…, each
// assistant message carrying extra as its stored wire state, nil for
// none), its tool result and a harness block, then a user turn.
func History50(modelName, callPrefix string, extra json.RawMessage) model.Request {
	req := model.Request{
		Model:           modelName,
		System:          []string{"You are Delta, an agent harness.", "Workspace rules and tool index."},
		ReasoningEffort: "medium",
		Tools: []model.ToolSpec{{Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
		Messages: []model.Message{{Role: model.RoleUser, Content: "Summarise the repository."}},
	}
	for i := 0; len(req.Messages) < 49; i++ {
		id := fmt.Sprintf("%s%03d", callPrefix, i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: "Reading the next file.", Extra: extra,
				ToolCalls: []model.ToolCall{{ID: id, Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/f%03d.go"}`, i))}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "read_file", Content: "package main\n\nfunc main() {}\n"},
			model.Message{Role: model.RoleUser, Content: "<delta:turn/>"},
		)
	}
	req.Messages = append(req.Messages[:49], model.Message{Role: model.RoleUser, Content: "<delta:turn step=17/>"})
	return req
}

// Bench describes one wire to RunBenchmarks.
type Bench struct {
	// History is the wire's History50.
	History model.Request
	// Build builds and encodes the body Complete would send for req; defs
	// is the client's memo of tool definitions, nil for none.
	Build func(req model.Request, defs *model.ToolDefs) ([]byte, error)
	// Stream is a recorded tool-call event stream holding StreamCalls
	// calls (StreamFile names a file holding it instead), and Parse reads
	// one.
	Stream      []byte
	StreamFile  string
	StreamCalls int
	Parse       Parse
	// New builds the wire's client for a base URL.
	New func(baseURL string) model.Provider
}

// RunBenchmarks runs the wire benchmarks every wire has, as sub-benchmarks:
//
//   - BuildRequest: the pure request build and JSON encoding of the
//     50-message history, no network.
//   - BuildRequestTools50: the same with modeltest.Tools50, as every call
//     of a client after its first builds it: the tools' definitions
//     memoized.
//   - ParseStream: parsing the recorded tool-call stream.
//   - CompleteHistory50: one whole call with that history over loopback
//     against the fake at zero latency: build the request, send it through
//     the SDK's transport, stream a tool call back, assemble it. The fake's
//     own work is in the figure too.
func RunBenchmarks(b *testing.B, w Bench) {
	if w.StreamFile != "" {
		var err error
		if w.Stream, err = os.ReadFile(w.StreamFile); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("BuildRequest", func(b *testing.B) {
		benchBuild(b, func() ([]byte, error) { return w.Build(w.History, nil) })
	})
	b.Run("BuildRequestTools50", func(b *testing.B) {
		req := w.History
		req.Tools = modeltest.Tools50()
		var defs model.ToolDefs
		benchBuild(b, func() ([]byte, error) { return w.Build(req, &defs) })
	})
	b.Run("ParseStream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := w.Parse(Recorded(w.Stream), model.Stream{})
			if err != nil {
				b.Fatal(err)
			}
			if len(r.ToolCalls) != w.StreamCalls {
				b.Fatal(r)
			}
		}
	})
	b.Run("CompleteHistory50", func(b *testing.B) {
		BenchComplete(b, w.History, modeltest.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"src/next.go"}`}, w.New)
	})
}

func benchBuild(b *testing.B, build func() ([]byte, error)) {
	b.ReportAllocs()
	for b.Loop() {
		body, err := build()
		if err != nil {
			b.Fatal(err)
		}
		if len(body) == 0 {
			b.Fatal("empty body")
		}
	}
}

// BenchComplete measures one whole call of req over loopback against the
// fake at zero latency, the fake streaming call back; newClient builds the
// wire's client for the fake's base URL.
func BenchComplete(b *testing.B, req model.Request, call modeltest.ToolCall, newClient func(baseURL string) model.Provider) {
	b.Helper()
	fake := modeltest.Serve(b, modeltest.Sequence(modeltest.ToolReply(call)))
	c := newClient(fake.URL())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Complete(ctx, req, model.Stream{})
		if err != nil || len(res.ToolCalls) != 1 {
			b.Fatalf("Complete = %+v, %v", res, err)
		}
	}
}
