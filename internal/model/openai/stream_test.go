package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// readBody reads body as a recorded event stream with the wire's
// accumulator.
func readBody(body string, s model.Stream) (model.Response, error) {
	return parse(wiretest.Recorded([]byte(body)), s)
}

func TestReadStream(t *testing.T) {
	const role = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	const stop = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	tests := []struct {
		name       string
		body       string
		wantErr    error // errors.Is target; nil = success
		wantText   string
		wantCalls  string // id/name/args joined
		wantReason string
	}{
		{
			name:     "finish then DONE",
			body:     sse(role, `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`, stop, "[DONE]"),
			wantText: "Hi",
		},
		{
			name:     "finish without DONE is complete",
			body:     sse(role, `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`, stop),
			wantText: "Hi",
		},
		{
			name:     "DONE without finish is complete",
			body:     sse(role, `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`, "[DONE]"),
			wantText: "Hi",
		},
		{
			name:    "neither is incomplete",
			body:    sse(role, `{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`),
			wantErr: errIncomplete, wantText: "Hi",
		},
		{
			name:    "empty body is incomplete",
			body:    "",
			wantErr: errIncomplete,
		},
		{
			name:     "comments and other events are ignored",
			body:     ": OPENROUTER PROCESSING\n\n" + sse(role) + "event: ping\ndata: \n\n" + sse(`{"choices":[{"index":0,"delta":{"content":"ok"}}]}`, stop),
			wantText: "ok",
		},
		{
			name: "tool call without id, name repeated on every fragment",
			body: sse(role,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":":1}"}}]}}]}`),
			wantErr:   errIncomplete,
			wantCalls: "call_0/f/{\"a\":1}",
		},
		{
			name: "interleaved calls assemble by index and sort",
			body: sse(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			wantCalls: "a/f/{}|b/g/{}",
		},
		{
			name:       "reasoning_content is reasoning too",
			body:       sse(`{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`, `{"choices":[{"index":0,"delta":{"reasoning":null,"content":"x"}}]}`, stop),
			wantText:   "x",
			wantReason: "hmm",
		},
		{
			name:     "second choice ignored",
			body:     sse(`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`, stop),
			wantText: "mine",
		},
		{
			name:    "garbled chunk",
			body:    sse(role, `{"choices":[`),
			wantErr: errAny,
		},
		{
			name:    "error event",
			body:    sse(role, `{"error":{"message":"boom","code":"server_error"}}`),
			wantErr: errAny,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var reasoning strings.Builder
			res, err := readBody(tt.body, model.Stream{OnReasoning: func(d string) { reasoning.WriteString(d) }})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tt.wantErr == errAny && err == nil:
				t.Fatalf("err = nil, want an error")
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", res.Text, tt.wantText)
			}
			var calls []string
			for _, c := range res.ToolCalls {
				calls = append(calls, c.ID+"/"+c.Name+"/"+string(c.Arguments))
			}
			if got := strings.Join(calls, "|"); got != tt.wantCalls {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			if reasoning.String() != tt.wantReason {
				t.Errorf("reasoning = %q, want %q", reasoning.String(), tt.wantReason)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestUsageChunk(t *testing.T) {
	body := sse(
		`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"usage":null}`,
		`{"choices":[],"model":"served","usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":30},"cost":0.25}}`,
		"[DONE]")
	res, err := readBody(body, model.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 60, CacheWriteTokens: 30, CostUSD: 0.25, CostReported: true}
	if res.Usage != want || res.Model != "served" {
		t.Errorf("usage = %+v model %q, want %+v", res.Usage, res.Model, want)
	}
}

// FuzzSSEChunk feeds arbitrary chunk bodies, alone and inside a stream, to
// the accumulator: it may refuse them, never panic or hang.
func FuzzSSEChunk(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]}`,
		`{"choices":[{"index":-9223372036854775808,"delta":{"tool_calls":[{"index":-1}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":"x","cost":"free"}}`,
		`{"choices":[{"index":0,"delta":{"reasoning":{"nested":true}}}]}`,
		`{"error":{"code":{"x":1},"message":null}}`,
		`{"error":null}`,
		`[DONE]`,
		`null`,
		`[]`,
		`"text"`,
		"\xff\xfe",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		acc := newAccumulator(model.Stream{OnText: func(string) {}, OnReasoning: func(string) {}})
		_ = acc.event(data)
		_ = acc.response()
		_, _ = readBody("data: "+string(data)+"\n\n"+string(data), model.Stream{})
	})
}
