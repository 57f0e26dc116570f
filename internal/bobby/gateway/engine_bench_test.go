package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
	"github.com/deltaharness/delta/internal/bobby/firefox"
)

// The side-by-side figures of the two engines, through the MCP tools:
//
//	go test -run '^$' -bench BenchmarkEngine ./internal/bobby/gateway/
//
// session start (session_create + page_open), click → settled (a click
// whose outcome reports the page after it), and the snapshot's bytes.

// benchEngines runs f per engine over a fresh gateway with alice connected.
func benchEngines(b *testing.B, f func(b *testing.B, cs *mcp.ClientSession)) {
	for _, e := range bothEngines {
		b.Run(e, func(b *testing.B) {
			opts := Options{Config: testConfig(), Logger: slog.New(slog.DiscardHandler), Runtime: sharedRT}
			if e == engineFirefox {
				if _, err := os.Stat(bidi.DefaultFirefox); err != nil {
					b.Skipf("Firefox is missing at %s", bidi.DefaultFirefox)
				}
				ffOnce.Do(func() {
					sharedFF = firefox.New(firefox.Options{LaunchTimeout: biditest.LaunchTimeout})
					ffErr0 = sharedFF.Open(context.Background())
				})
				if ffErr0 != nil {
					b.Fatal(ffErr0)
				}
				opts.Runtime, opts.Firefox = nil, sharedFF
			}
			g, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Open(context.Background()); err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(g.HTTPHandler())
			defer func() { srv.Close(); _ = g.Close(context.Background()) }()
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
				Endpoint: srv.URL + MCPPath, HTTPClient: &http.Client{Transport: bearer{"alice-token"}},
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			f(b, cs)
		})
	}
}

// benchCall calls a tool and fails the benchmark unless it completed.
func benchCall(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	b.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if res.IsError {
		b.Fatalf("%s: %s", name, raw)
	}
	return m
}

func BenchmarkEngineSessionStart(b *testing.B) {
	benchEngines(b, func(b *testing.B, cs *mcp.ClientSession) {
		for b.Loop() {
			s := benchCall(b, cs, "session_create", map[string]any{"profile": "default"})
			benchCall(b, cs, "page_open", map[string]any{"sessionId": s["id"]})
			b.StopTimer() // the close is not the start
			benchCall(b, cs, "session_close", map[string]any{"sessionId": s["id"]})
			b.StartTimer()
		}
	})
}

func BenchmarkEngineClickSettled(b *testing.B) {
	benchEngines(b, func(b *testing.B, cs *mcp.ClientSession) {
		h := benchCall(b, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})["workflowHandle"]
		target := map[string]any{"role": "checkbox", "name": "Send me product news"}
		for b.Loop() {
			benchCall(b, cs, "click", map[string]any{"workflowHandle": h, "target": target})
		}
	})
}

func BenchmarkEngineSnapshot(b *testing.B) {
	benchEngines(b, func(b *testing.B, cs *mcp.ClientSession) {
		h := benchCall(b, cs, "workflow_start", map[string]any{"profile": "default", "url": matrixURL("/signup.html")})["workflowHandle"]
		var bytes float64
		for b.Loop() {
			m := benchCall(b, cs, "a11y_snapshot", map[string]any{"workflowHandle": h})
			bytes, _ = get(m, "evidence", "accessibility", "bytes").(float64)
		}
		b.ReportMetric(bytes, "snapshot-bytes")
	})
}

// BenchmarkEngineWorkflowStart measures workflow_start with a URL on a
// running browser: a new isolated session, its page and the navigation, as
// an agent's next task pays it. Between starts the benchmark pauses (off the
// clock) as an agent thinks, so background work of the last start is done.
func BenchmarkEngineWorkflowStart(b *testing.B) {
	benchEngines(b, func(b *testing.B, cs *mcp.ClientSession) {
		u := matrixURL("/signup.html")
		benchCall(b, cs, "workflow_start", map[string]any{"profile": "default", "url": u}) // launches the browser
		for b.Loop() {
			b.StopTimer()
			time.Sleep(500 * time.Millisecond)
			b.StartTimer()
			m := benchCall(b, cs, "workflow_start", map[string]any{"profile": "default", "url": u})
			b.StopTimer()
			if get(m, "navigationOutcome", "status") != "completed" {
				b.Fatalf("navigation outcome: %v", m["navigationOutcome"])
			}
			benchCall(b, cs, "session_close", map[string]any{"sessionId": m["sessionId"]})
			b.StartTimer()
		}
	})
}
