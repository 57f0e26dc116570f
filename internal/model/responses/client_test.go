package responses_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/responses"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

const testKey = "sk-test-0123456789abcdef"

// toFake sends every request, whatever its scheme and host, to the fake
// over plain HTTP, so an https://api.openai.com base URL reaches it.
type toFake struct{ addr string }

func (f toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", f.addr
	return http.DefaultTransport.RoundTrip(r)
}

func native(fake *modeltest.Server, o responses.Options) *responses.Client {
	o.BaseURL = "https://api.openai.com/v1"
	o.HTTPClient = &http.Client{Transport: toFake{strings.TrimSuffix(strings.TrimPrefix(fake.URL(), "http://"), "/v1")}}
	return responses.New(o)
}

func basicRequest() model.Request {
	return model.Request{
		Model:    "gpt-5",
		System:   []string{"You are Delta.", "Workspace: /tmp/ws."},
		Messages: []model.Message{{Role: model.RoleUser, Content: "write a brief"}},
		Tools: []model.ToolSpec{{Name: "write_file", Description: "Write a file in the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)}},
	}
}

func TestCompleteTextAndUsage(t *testing.T) {
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.Reply{Text: "Hello there, in several deltas.", Reasoning: "Think briefly.",
		Usage: &modeltest.Usage{PromptTokens: 900, CompletionTokens: 20, CachedTokens: 512}}))
	fake.RequireKey(testKey)
	var text, reasoning strings.Builder
	c := responses.New(responses.Options{BaseURL: fake.URL(), APIKey: testKey, TextVerbosity: "low", ReasoningSummary: "auto"})
	res, err := c.Complete(context.Background(), basicRequest(), model.Stream{
		OnText: func(d string) { text.WriteString(d) }, OnReasoning: func(d string) { reasoning.WriteString(d) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello there, in several deltas." || text.String() != res.Text || reasoning.String() != "Think briefly." || res.FinishReason != "stop" || res.Model != "gpt-5" {
		t.Errorf("res = %+v reasoning %q", res, reasoning.String())
	}
	if want := (model.Usage{InputTokens: 900, OutputTokens: 20, CacheReadTokens: 512}); res.Usage != want {
		t.Errorf("Usage = %+v", res.Usage)
	}
	got := fake.Requests()[0]
	raw := string(got.Raw)
	if got.Path != "/v1/responses" || got.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("path %q auth %q", got.Path, got.Header.Get("Authorization"))
	}
	// A non-openai.com host gets the plain surface and no sealed payloads.
	for _, f := range []string{"verbosity", "summary", "encrypted_content", "include"} {
		if strings.Contains(raw, f) {
			t.Errorf("plain lane sent %q: %s", f, raw)
		}
	}
	if res.Extra != nil {
		t.Errorf("plain lane kept Extra %s", res.Extra)
	}
	if u := responses.Unmapped(fake.URL(), responses.Options{TextVerbosity: "low", ReasoningSummary: "auto"}); strings.Join(u, ",") != "DELTA_TEXT_VERBOSITY,DELTA_REASONING_SUMMARY" {
		t.Errorf("Unmapped = %v", u)
	}
	if u := responses.Unmapped("https://api.openai.com/v1", responses.Options{TextVerbosity: "low"}); len(u) != 0 {
		t.Errorf("Unmapped on openai.com = %v", u)
	}
}

func TestNativeLaneReasoningCarry(t *testing.T) {
	call := modeltest.ToolCall{ID: "call_1", Name: "write_file", Arguments: `{"path":"brief.md","content":"ünïcödé across fragments"}`}
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.Reply{Reasoning: "Write it.", Text: "Writing now.", ToolCalls: []modeltest.ToolCall{call}}, modeltest.TextReply("Done.")))
	c := native(fake, responses.Options{TextVerbosity: "low", ReasoningSummary: "auto"})
	req := basicRequest()
	req.ReasoningEffort = "High"
	res, err := c.Complete(context.Background(), req, model.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "call_1" || string(res.ToolCalls[0].Arguments) != call.Arguments || res.FinishReason != "tool_calls" {
		t.Fatalf("res = %+v", res)
	}
	if !strings.Contains(string(res.Extra), "gAAAAmodeltest") || !strings.Contains(string(res.Extra), `"phase":"commentary"`) {
		t.Fatalf("Extra = %s", res.Extra)
	}
	next := req
	next.Messages = append(append([]model.Message(nil), req.Messages...),
		model.Message{Role: model.RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls, Extra: res.Extra},
		model.Message{Role: model.RoleTool, ToolCallID: "call_1", Name: "write_file", Content: "wrote it"})
	if _, err := c.Complete(context.Background(), next, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	raw := string(fake.Requests()[1].Raw)
	for _, want := range []string{`"encrypted_content":"gAAAAmodeltest`, `"phase":"commentary"`, `"verbosity":"low"`, `"summary":"auto"`, `"effort":"high"`, `"include":["reasoning.encrypted_content"]`, `"store":false`} {
		if !strings.Contains(raw, want) {
			t.Errorf("second request lacks %s: %s", want, raw)
		}
	}
	// The same history to a plain host: the sealed items stay home.
	if _, err := responses.New(responses.Options{BaseURL: fake.URL()}).Complete(context.Background(), next, model.Stream{}); err != nil {
		t.Fatal(err)
	}
	if raw := string(fake.Requests()[2].Raw); strings.Contains(raw, "encrypted") || strings.Contains(raw, "phase") {
		t.Errorf("plain host received the carry: %s", raw)
	}
}

func goldenCases() map[string]model.Request {
	plain := basicRequest()
	round := basicRequest()
	round.Messages = append(round.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_01", Name: "write_file", Arguments: json.RawMessage(`{"path":"brief.md","content":"# Brief"}`)}},
			Extra: json.RawMessage(`{"responses":{"items":[{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAAsealed"}],"phase":"commentary"}}`)},
		model.Message{Role: model.RoleTool, ToolCallID: "call_01", Name: "write_file", Content: "wrote 7 bytes"},
		model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"})
	par := basicRequest()
	var calls []model.ToolCall
	for i := 1; i <= 12; i++ {
		calls = append(calls, model.ToolCall{ID: fmt.Sprintf("call_%02d", i), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/f%02d.go"}`, i))})
	}
	par.Messages = append(par.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: calls})
	for i := 1; i <= 12; i++ {
		par.Messages = append(par.Messages, model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprintf("call_%02d", i), Content: fmt.Sprintf("package f%02d", i)})
	}
	return map[string]model.Request{"plain": plain, "tool_round_trip": round, "parallel_12": par}
}

func TestGoldenRequests(t *testing.T) {
	for _, laneName := range []string{"plain", "native"} {
		for name, req := range goldenCases() {
			for _, effort := range []string{"", "minimal", "high"} {
				if effort != "" && name != "tool_round_trip" {
					continue
				}
				t.Run(laneName+"/"+name+"/"+effort, func(t *testing.T) {
					fake := modeltest.Serve(t, nil)
					o := responses.Options{APIKey: "sk-golden", TextVerbosity: "medium", ReasoningSummary: "auto"}
					c := responses.New(responses.Options{BaseURL: fake.URL(), APIKey: o.APIKey, TextVerbosity: o.TextVerbosity, ReasoningSummary: o.ReasoningSummary})
					if laneName == "native" {
						c = native(fake, o)
					}
					req.ReasoningEffort = effort
					if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
						t.Fatal(err)
					}
					file := laneName + "_" + name
					if effort != "" {
						file += "_" + effort
					}
					wiretest.Golden(t, filepath.Join("testdata", file+".golden"), wiretest.GoldenRequest(t, fake.Requests()[0], "Authorization", "Content-Type", "Accept"))
				})
			}
		}
	}
}
