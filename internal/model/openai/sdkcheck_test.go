package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// The client reads chunks and completions without the SDK's root package
// (lenient.go). These targets hold that reading to the SDK's, which tests
// may still link: chunkOf and completionOf take from the SDK's decoding
// exactly what the client used to take.

// chunkOf takes from the SDK's decoding of a chunk what chunk holds.
func chunkOf(sc *sdk.ChatCompletionChunk) chunk {
	c := chunk{Model: sc.Model, ServiceTier: string(sc.ServiceTier)}
	if sc.JSON.Usage.Valid() {
		c.Usage = usageFromSDK(&sc.Usage)
	}
	for _, ch := range sc.Choices {
		cc := chunkChoice{Index: ch.Index, FinishReason: ch.FinishReason, Delta: chunkDelta{
			Content:          ch.Delta.Content,
			Reasoning:        rawField(ch.Delta.JSON.ExtraFields, "reasoning"),
			ReasoningContent: rawField(ch.Delta.JSON.ExtraFields, "reasoning_content"),
		}}
		for _, tc := range ch.Delta.ToolCalls {
			t := chunkToolCall{Index: tc.Index, ID: tc.ID}
			t.Function.Name, t.Function.Arguments = tc.Function.Name, tc.Function.Arguments
			cc.Delta.ToolCalls = append(cc.Delta.ToolCalls, t)
		}
		c.Choices = append(c.Choices, cc)
	}
	return c
}

func usageFromSDK(su *sdk.CompletionUsage) *chunkUsage {
	u := &chunkUsage{PromptTokens: su.PromptTokens, CompletionTokens: su.CompletionTokens, Cost: rawField(su.JSON.ExtraFields, "cost")}
	u.PromptTokensDetails.CachedTokens = su.PromptTokensDetails.CachedTokens
	u.PromptTokensDetails.CacheWriteTokens = su.PromptTokensDetails.CacheWriteTokens
	return u
}

// rawField is an extra field's raw JSON, nil when absent.
func rawField(extra map[string]respjson.Field, key string) json.RawMessage {
	if f, ok := extra[key]; ok && f.Raw() != "" {
		return json.RawMessage(f.Raw())
	}
	return nil
}

// completionOf takes from the SDK's decoding of a completion what
// completion holds.
func completionOf(sc *sdk.ChatCompletion) chunk {
	c := chunk{Model: sc.Model, ServiceTier: string(sc.ServiceTier)}
	if sc.JSON.Usage.Valid() {
		c.Usage = usageFromSDK(&sc.Usage)
	}
	for _, ch := range sc.Choices {
		extra := ch.Message.JSON.ExtraFields
		cc := chunkChoice{Index: ch.Index, FinishReason: ch.FinishReason, Delta: chunkDelta{Content: ch.Message.Content,
			Reasoning: rawField(extra, "reasoning"), ReasoningContent: rawField(extra, "reasoning_content")}}
		for _, tc := range ch.Message.ToolCalls {
			var c chunkToolCall
			c.ID, c.Function.Name, c.Function.Arguments = tc.ID, tc.Function.Name, tc.Function.Arguments
			cc.Delta.ToolCalls = append(cc.Delta.ToolCalls, c)
		}
		c.Choices = append(c.Choices, cc)
	}
	return c
}

// recordedChunks are the data payloads of the recorded streams.
func recordedChunks(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open("testdata/stream_tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && d[0] == '{' {
			out = append(out, bytes.Clone(d))
		}
	}
	if len(out) == 0 {
		t.Fatal("no chunks in testdata/stream_tools.sse")
	}
	return out
}

// lenientSeeds are chunks whose fields have unexpected types, repeated or
// case-changed names, nulls and odd strings: the cases where the strict
// decoder gives up and the lenient one reads.
var lenientSeeds = []string{
	`{"choices":[{"index":"0","delta":{"content":12.50,"tool_calls":[{"index":1.9,"id":7,"function":{"name":true,"arguments":{"a":[1, 2]}}}]},"finish_reason":false}],"model":["m"],"service_tier":1e2}`,
	`{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}],"Model":"x","model":"first","model":"second","usage":{"prompt_tokens":"12","completion_tokens":"1.5e1","cost":"0.1"}}`,
	`{"choices":[null,{"index":0,"delta":"text"}],"usage":"none"}`,
	`{"choices":[{"index":0},"bad"],"usage":[]}`,
	`{"choices":{"index":0},"usage":{"prompt_tokens":9007199254740993,"completion_tokens":-99999999999999999999,"prompt_tokens_details":{"cached_tokens":true,"cache_write_tokens":"x"}}}`,
	`{"choices":[{"index":0,"delta":{"content":"\ud800\u0041 \udc00 \ud83d\ude00 \u00e9 \/ \"","reasoning":"r","reasoning_content":null,"tool_calls":[null,{"function":"f"}]}}],"usage":null}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff\xfe utf8\",\"tool_calls\":{}}}],\"model\":-0}",
	`{"choices":[{"index":"-9223372036854775809","delta":null,"finish_reason":{"x":1}}],"model":1.0,"service_tier":null}`,
	`1`, `"s"`, `[]`, `true`, `null`, `{}`,
}

// FuzzLenientChunkMatchesSDK holds the lenient chunk reading to the SDK's
// for any JSON value: the same refusal, and the same fields read.
func FuzzLenientChunkMatchesSDK(f *testing.F) {
	for _, c := range recordedChunks(f) {
		f.Add(c)
	}
	for _, s := range lenientSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSpace(data)
		if !json.Valid(data) {
			t.Skip() // the strict decoder refuses it before the lenient one runs
		}
		readsAsSDK(t, data, lenientChunk, chunkOf)
	})
}

// FuzzCompletionMatchesSDK holds the reading of a whole chat.completion
// (a gateway that ignored stream:true) to the SDK's.
func FuzzCompletionMatchesSDK(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning":"r","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"custom","custom":{"name":"g","input":"x"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":1},"cost":0.5}}`,
		`{"choices":[{"index":"0","message":{"content":{"a":1},"reasoning_content":"why","tool_calls":[{"function":{"arguments":{"b":2}}}]},"finish_reason":null}],"model":5,"usage":"u"}`,
		`{"choices":[{"message":null},{"index":1,"message":"x"}],"choices":[]}`,
		`{"choices":[7]}`, `null`, `[]`, `"x"`, ` {"model":"m"} `, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	for _, s := range lenientSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readsAsSDK(t, data, decodeCompletion, completionOf)
	})
}

// readsAsSDK fails t unless ours reads data as the SDK's decoding into S
// does (read through of): both refuse it, or both accept it and agree.
func readsAsSDK[S any](t *testing.T, data []byte, ours func([]byte) (chunk, error), of func(*S) chunk) {
	t.Helper()
	got, err := ours(data)
	var sc S
	sdkErr := json.Unmarshal(data, &sc)
	if (err == nil) != (sdkErr == nil) {
		t.Fatalf("error %v, SDK error %v\n%s", err, sdkErr, data)
	}
	if err != nil {
		return
	}
	if want := of(&sc); !reflect.DeepEqual(got, want) {
		t.Fatalf("read\n got %s\nsdk  %s\nfrom %s", dump(got), dump(want), data)
	}
}

func dump(v any) string { return fmt.Sprintf("%+v", v) }

// TestRequestMatchesSDKOnTheWire: the client, posting through the
// responses service re-pointed at chat/completions, puts on the wire the
// very request openai-go's chat service put there: request line, Host,
// every header (the SDK's user agent and X-Stainless-* among them) and the
// body, for base URLs with and without a path, a trailing slash, an
// escaped segment or a query, with and without a key and extra headers.
func TestRequestMatchesSDKOnTheWire(t *testing.T) {
	rec := wiretest.NewWireRecorder(t)
	for _, tc := range []struct {
		name, path, key string
		headers         map[string]string
	}{
		{"path", "/v1", "sk-wire", equivHeaders},
		{"trailing slash", "/api/v1/", "sk-wire", nil},
		{"no path", "", "", nil},
		{"escaped segment", "/a%2Fb/v%C3%A9", "sk-wire", map[string]string{"X-Title": "Delta"}},
		{"query", "/v1?api-version=2024", "sk-wire", nil},
		{"dot segments", "/x/../v1/./", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := rec.URL + tc.path
			hc := &http.Client{}
			c := New(Options{BaseURL: base, APIKey: tc.key, HTTPClient: hc, Headers: tc.headers})
			_, err := c.Complete(context.Background(), equivRequest(), model.Stream{})
			var me *model.Error
			if !errors.As(err, &me) || me.Status != http.StatusBadRequest || me.Message != "recorded" {
				t.Fatalf("Complete: %v, want the recorder's 400", err)
			}
			got := rec.Take()
			_, body, _ := bytes.Cut(got, []byte("\r\n\r\n"))
			svc := sdk.NewChatCompletionService(SDKOptions(base, tc.key, hc, tc.headers)...)
			res, _ := Post(context.Background(), svc.New, body) //nolint:bodyclose // closed below
			if res != nil {
				res.Body.Close()
			}
			want := rec.Take()
			wiretest.CheckSameWire(t, got, want)
			if !bytes.HasPrefix(want, []byte("POST ")) || !bytes.Contains(want, []byte("/chat/completions")) {
				t.Fatalf("the SDK's request is not a POST to chat/completions:\n%s", want)
			}
		})
	}
}
