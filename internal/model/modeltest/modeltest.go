// Package modeltest holds test helpers for the model wires: Capture (a
// RoundTripper that records the exact request bytes and sends nothing),
// Tools50 (the wire benchmarks' tool set) and Serve (a scripted fake for
// the life of one test). It also re-exports the scripted
// endpoint of model/scripted under the names tests have always used, so a
// test needs one import for both.
//
// Production code must not import this package: `delta demo` uses
// model/scripted directly, and cmd/delta's dependency test keeps this
// package out of the binary.
package modeltest

import (
	"testing"

	"github.com/deltaharness/delta/internal/model/scripted"
)

// The scripted endpoint's types, for tests.
type (
	Server      = scripted.Server
	Script      = scripted.Script
	Reply       = scripted.Reply
	Usage       = scripted.Usage
	ChatRequest = scripted.ChatRequest
	ChatMessage = scripted.ChatMessage
	ChatTool    = scripted.ChatTool
	ChatImage   = scripted.ChatImage
	ToolCall    = scripted.ToolCall
)

// DefaultBriefPath is where DemoScript writes when the request names no file.
const DefaultBriefPath = scripted.DefaultBriefPath

// Start serves script on a fresh loopback port (scripted.Start).
func Start(script Script) (*Server, error) { return scripted.Start(script) }

// Serve serves script on a fresh loopback fake until t ends. A nil script
// answers "ok" to everything.
func Serve(t testing.TB, script Script) *Server {
	t.Helper()
	s, err := scripted.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // a close error after the test has no one to tell
	return s
}

// DemoScript is the deterministic agent behind `delta demo` (scripted.DemoScript).
func DemoScript() Script { return scripted.DemoScript() }

// Sequence answers the nth request with the nth reply (scripted.Sequence).
func Sequence(replies ...Reply) Script { return scripted.Sequence(replies...) }

// TextReply answers with text.
func TextReply(text string) Reply { return scripted.TextReply(text) }

// ToolReply answers with tool calls.
func ToolReply(calls ...ToolCall) Reply { return scripted.ToolReply(calls...) }

// ErrorReply answers with an HTTP error.
func ErrorReply(status int, message string) Reply { return scripted.ErrorReply(status, message) }

// OverflowReply answers with the wire's context-window refusal.
func OverflowReply() Reply { return scripted.OverflowReply() }

// USD returns a pointer to v, for Usage.Cost.
func USD(v float64) *float64 { return scripted.USD(v) }

// DecodeRequest decodes a Chat Completions body (scripted.DecodeRequest).
func DecodeRequest(body []byte) (ChatRequest, error) { return scripted.DecodeRequest(body) }

// DecodeAnthropicRequest decodes a Messages body (scripted.DecodeAnthropicRequest).
func DecodeAnthropicRequest(body []byte) (ChatRequest, error) {
	return scripted.DecodeAnthropicRequest(body)
}

// DecodeResponsesRequest decodes a Responses body (scripted.DecodeResponsesRequest).
func DecodeResponsesRequest(body []byte) (ChatRequest, error) {
	return scripted.DecodeResponsesRequest(body)
}
