package openai_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// basicRequest is the shared suite's request on this wire.
func basicRequest() model.Request { return wire.Request() }

// TestChatSpecifics: the Chat Completions request asks for the usage
// chunk, sends no reasoning fields unasked, and a plain endpoint reports
// no cost.
func TestChatSpecifics(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	res, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 || res.Usage.CostReported {
		t.Errorf("Usage = %+v, want token counts and no reported cost", res.Usage)
	}
	got := fake.Requests()[0]
	if !got.IncludeUsage {
		t.Error("stream_options.include_usage not set")
	}
	if got.ReasoningEffort != "" || got.Reasoning != nil {
		t.Errorf("reasoning sent without being asked: %q %s", got.ReasoningEffort, got.Reasoning)
	}
}

func TestUsageAndCost(t *testing.T) {
	tests := []struct {
		name  string
		usage modeltest.Usage
		want  model.Usage
	}{
		{"openrouter cost", modeltest.Usage{PromptTokens: 1200, CompletionTokens: 34, CachedTokens: 1000, Cost: modeltest.USD(0.0123)},
			model.Usage{InputTokens: 1200, OutputTokens: 34, CacheReadTokens: 1000, CostUSD: 0.0123, CostReported: true}},
		{"free model reports zero cost", modeltest.Usage{PromptTokens: 10, CompletionTokens: 2, Cost: modeltest.USD(0)},
			model.Usage{InputTokens: 10, OutputTokens: 2, CostReported: true}},
		{"no cost field", modeltest.Usage{PromptTokens: 7, CompletionTokens: 3},
			model.Usage{InputTokens: 7, OutputTokens: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := tt.usage
			fake := modeltest.Serve(t, modeltest.Sequence(modeltest.Reply{Text: "hi", Usage: &u, Model: "anthropic/claude-4.5-sonnet-20250929"}))
			res, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != tt.want {
				t.Errorf("Usage = %+v, want %+v", res.Usage, tt.want)
			}
			if res.Model != "anthropic/claude-4.5-sonnet-20250929" {
				t.Errorf("Model = %q, want the served model", res.Model)
			}
		})
	}
}

// redirectTo returns an http.Client that sends every connection to addr,
// whatever host the URL names, so an openrouter.ai base URL reaches the fake.
func redirectTo(addr string) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return &http.Client{Transport: tr}
}

func TestReasoningEffortWire(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	addr := strings.TrimSuffix(strings.TrimPrefix(fake.URL(), "http://"), "/v1")
	tests := []struct {
		name, base, effort string
		wantTop            string // reasoning_effort
		wantObj            string // reasoning object, canonical JSON
	}{
		{"openrouter gets reasoning object", "http://openrouter.ai/v1", " HIGH ", "", `{"effort":"high"}`},
		{"openrouter subdomain", "http://eu.openrouter.ai/v1", "low", "", `{"effort":"low"}`},
		{"direct endpoint gets reasoning_effort", fake.URL(), "medium", "medium", ""},
		{"lookalike host is not openrouter", "http://openrouter.ai.example/v1", "low", "low", ""},
		{"no effort sends neither", "http://openrouter.ai/v1", "", "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openai.New(openai.Options{BaseURL: tt.base, HTTPClient: redirectTo(addr)})
			req := basicRequest()
			req.ReasoningEffort = tt.effort
			if _, err := c.Complete(context.Background(), req, model.Stream{}); err != nil {
				t.Fatal(err)
			}
			got := fake.Requests()[i]
			if got.ReasoningEffort != tt.wantTop {
				t.Errorf("reasoning_effort = %q, want %q", got.ReasoningEffort, tt.wantTop)
			}
			gotObj := ""
			if got.Reasoning != nil {
				gotObj = wiretest.Canonical(t, got.Reasoning)
			}
			if gotObj != tt.wantObj {
				t.Errorf("reasoning = %s, want %s", gotObj, tt.wantObj)
			}
		})
	}
}

func TestNonStreamingAnswerAccepted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"served-m","choices":[{"index":0,"message":{"role":"assistant","content":"plain","reasoning":"why","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,"cost":0.5}}`))
	}))
	defer srv.Close()
	var rec wiretest.Recorder
	res, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1"}).Complete(context.Background(), basicRequest(), rec.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "plain" || res.Model != "served-m" || res.FinishReason != "tool_calls" ||
		len(res.ToolCalls) != 1 || string(res.ToolCalls[0].Arguments) != `{"a":1}` ||
		res.Usage.CostUSD != 0.5 || !res.Usage.CostReported {
		t.Errorf("res = %+v", res)
	}
	if strings.Join(rec.Events, "|") != "r:why|t:plain" {
		t.Errorf("stream events = %q", rec.Events)
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, base := range []string{"ftp://example.test/v1", "not a url", "http://[::1"} {
		_, err := openai.New(openai.Options{BaseURL: base}).Complete(context.Background(), basicRequest(), model.Stream{})
		var me *model.Error
		if !errors.As(err, &me) || me.Retriable {
			t.Errorf("base %q: err = %v, want non-retriable *model.Error", base, err)
		}
	}
}

func TestBaseURLForms(t *testing.T) {
	fake := modeltest.Serve(t, nil)
	for _, tt := range []struct{ base, wantPath string }{
		{fake.URL(), "/v1/chat/completions"},
		{fake.URL() + "/", "/v1/chat/completions"},
		{strings.TrimSuffix(fake.URL(), "/v1"), "/chat/completions"},
	} {
		before := fake.Calls()
		if _, err := openai.New(openai.Options{BaseURL: tt.base}).Complete(context.Background(), basicRequest(), model.Stream{}); err != nil {
			t.Fatalf("base %q: %v", tt.base, err)
		}
		if got := fake.Requests()[before].Path; got != tt.wantPath {
			t.Errorf("base %q: path %q, want %q", tt.base, got, tt.wantPath)
		}
	}
}
