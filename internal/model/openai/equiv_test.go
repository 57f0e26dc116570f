package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// The encoder (encode.go) must put on the wire exactly the bytes the SDK
// put there when it encoded ChatCompletionNewParams itself. These tests
// send each request twice through a capturing transport: once through
// Complete, once through the SDK with the request lowered onto its params
// and "stream" set as the client did before, and compare what was sent.

// sdkParams lowers a request (its tools given as specs) onto the SDK's
// params, message for message as the client built them before encode.go
// existed.
func sdkParams(p request, tools []model.ToolSpec) sdk.ChatCompletionNewParams {
	out := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	for _, m := range p.Messages {
		switch m.Role {
		case model.RoleSystem:
			out.Messages = append(out.Messages, sdk.SystemMessage(m.Content))
		case model.RoleUser:
			if len(m.Images) == 0 {
				out.Messages = append(out.Messages, sdk.UserMessage(m.Content))
				continue
			}
			var parts []sdk.ChatCompletionContentPartUnionParam
			if m.Content != "" {
				parts = append(parts, sdk.TextContentPart(m.Content))
			}
			for _, im := range m.Images {
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: im.DataURL()}))
			}
			out.Messages = append(out.Messages, sdk.UserMessage(parts))
		case model.RoleTool:
			out.Messages = append(out.Messages, sdk.ToolMessage(m.Content, m.ToolCallID))
		case model.RoleAssistant:
			var a sdk.ChatCompletionAssistantMessageParam
			if m.HasContent {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			out.Messages = append(out.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, spec := range tools {
		t, err := buildTool(spec)
		if err != nil {
			panic(err) // build accepted it
		}
		params := sdk.FunctionParameters{}
		for _, m := range t.Parameters {
			params[m.Name] = m.Value
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		out.Tools = append(out.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if p.ReasoningEffort != "" {
		out.ReasoningEffort = shared.ReasoningEffort(p.ReasoningEffort)
	}
	if p.RouterEffort != "" {
		out.SetExtraFields(map[string]any{"reasoning": map[string]string{"effort": p.RouterEffort}})
	}
	return out
}

var equivHeaders = map[string]string{"X-Title": "Delta", "HTTP-Referer": "https://example.test"}

func viaClient(t testing.TB, base string, req model.Request) wiretest.Sent {
	t.Helper()
	tr := &modeltest.Capture{}
	c := New(Options{BaseURL: base, APIKey: "sk-equiv", HTTPClient: &http.Client{Transport: tr}, Headers: equivHeaders})
	return wiretest.Completed(t, tr, c, req)
}

func viaSDK(t testing.TB, base string, req model.Request) wiretest.Sent {
	t.Helper()
	p, err := build(req, New(Options{BaseURL: base}).openRouter, nil)
	if err != nil {
		return wiretest.Sent{}
	}
	tr := &modeltest.Capture{}
	svc := sdk.NewChatCompletionService(SDKOptions(base, "sk-equiv", &http.Client{Transport: tr}, equivHeaders)...)
	return wiretest.OpenAISDK(t, tr, svc.New, sdkParams(p, req.Tools))
}

// checkSame fails t unless both paths sent the same request to the same
// URL; it reports whether the request was sent at all.
func checkSame(t testing.TB, base string, req model.Request) bool {
	t.Helper()
	return wiretest.CheckSame(t, viaClient(t, base, req), viaSDK(t, base, req), false)
}

const (
	directBase = "http://capture.invalid/v1"
	routerBase = "https://openrouter.ai/api/v1"
)

func equivRequest() model.Request { return wiretest.EncodingRequest("test/model-1") }

func TestEncoderMatchesSDK(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	with := wiretest.Edits(equivRequest)
	toolRound := func(r *model.Request, args string) {
		r.Messages = append(r.Messages,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "write_file", Arguments: json.RawMessage(args)}, {ID: "call_2", Name: "noop"}}},
			model.Message{Role: model.RoleTool, ToolCallID: "call_1", Name: "write_file", Content: "wrote it"},
			model.Message{Role: model.RoleTool, ToolCallID: "call_2", Name: "noop", Content: ""},
			model.Message{Role: model.RoleAssistant, Content: "Done <ok>."},
			model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"})
	}
	schema := wiretest.ToolSchema
	tests := wiretest.EncodingCases(equivRequest)
	maps.Copy(tests, map[string]model.Request{
		"50 messages":          history50(),
		"tool round trip":      with(func(r *model.Request) { toolRound(r, `{"path":"a.md","content":"# Brief <x> & \u2028"}`) }),
		"arguments with space": with(func(r *model.Request) { toolRound(r, " {\n  \"path\" : \"a b.md\" }\n") }),
		"arguments invalid":    with(func(r *model.Request) { toolRound(r, `{"path":`) }),
		"arguments blank":      with(func(r *model.Request) { toolRound(r, " \n") }),
		"images on assistant": with(func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleAssistant, Content: "x", Images: []model.Image{{MIME: "image/png", Data: png}}})
		}),
		"effort":               with(func(r *model.Request) { r.ReasoningEffort = " HIGH " }),
		"effort to escape":     with(func(r *model.Request) { r.ReasoningEffort = "<&>" }),
		"schema keys to order": with(schema(`{"type":"object","properties":{},"$defs":{"a":{}},"additionalProperties":false,"Zed":1,"é":2,"<k>":3,"a\"b":4,"\u2028":5,"":6}`)),
	})
	lanes := []string{directBase, routerBase}
	wiretest.SentOnEach(t, tests, lanes, checkSame)
	for _, name := range []string{"schema spaced", "effort"} {
		// The lane where the SDK compacts the schema.
		r := tests[name]
		r.ReasoningEffort = "medium"
		for _, base := range lanes {
			t.Run(name+"/"+base+"/with effort", func(t *testing.T) {
				t.Parallel()
				checkSame(t, base, r)
			})
		}
	}
}

// TestMemoKeepsLanesApart: one OpenRouter client sends a schema with
// white space without an effort (the schema as it is), with one (the
// schema compacted, as the SDK sent it), and without again; each body is
// the SDK's.
func TestMemoKeepsLanesApart(t *testing.T) {
	tr := &modeltest.Capture{}
	c := New(Options{BaseURL: routerBase, APIKey: "sk-equiv", HTTPClient: &http.Client{Transport: tr}, Headers: equivHeaders})
	req := equivRequest()
	req.Tools[0].Parameters = json.RawMessage("{ \"type\" : \"object\", \"properties\" : { \"a\" : { } } }")
	var bodies []string
	for _, effort := range []string{"", "high", ""} {
		req.ReasoningEffort = effort
		_, _ = c.Complete(context.Background(), req, model.Stream{})
		want := viaSDK(t, routerBase, req)
		if !bytes.Equal(tr.Body, want.Body) {
			t.Fatalf("effort %q:\nclient: %s\nsdk:    %s", effort, tr.Body, want.Body)
		}
		bodies = append(bodies, string(tr.Body))
	}
	if bodies[0] == bodies[1] || bodies[0] != bodies[2] {
		t.Errorf("the two lanes' bodies are not told apart: %q", bodies)
	}
}

// FuzzEncoderMatchesSDK builds requests from arbitrary text, tool
// arguments, a tool schema and an effort, on both lanes, and holds the
// encoder to the SDK's bytes for each.
func FuzzEncoderMatchesSDK(f *testing.F) {
	f.Add("write <a> & b", `{"path":"a.md"}`, `{"type":"object","properties":{"a":{}},"required":["a"]}`, "medium", uint8(0))
	f.Add("\u2028\xff\x00", " { \"a\" : [1, 2] } ", "{ \"properties\" : { \"x\" : 1 } , \"b\" : [ ] }", "<&>", uint8(1))
	f.Add("", "", `{}`, "", uint8(2))
	f.Add("image", `{`, `{"required":null}`, "high", uint8(7))
	f.Fuzz(func(t *testing.T, text, args, schema, effort string, flags uint8) {
		req := wiretest.Fuzz{Model: "test/" + text, CallID: "call_" + text, Text: text, Args: args, Schema: schema, Effort: effort, Flags: flags}.Request()
		base := directBase
		if flags&1 != 0 {
			base = routerBase
		}
		checkSame(t, base, req)
	})
}

// applyOld applies one chunk body as the client did before: always
// through the SDK's ChatCompletionChunk.
func (a *accumulator) applyOld(data []byte) error {
	return a.apply(data, func(data []byte) (chunk, error) {
		var sc sdk.ChatCompletionChunk
		if err := json.Unmarshal(data, &sc); err != nil {
			return chunk{}, fmt.Errorf("malformed stream chunk: %w", err)
		}
		return chunkOf(&sc), nil
	})
}

// FuzzChunkMatchesSDK holds the chunk decoder to the SDK's reading of the
// same chunks: the answer assembled, the deltas streamed and whether a
// chunk is refused are the same.
func FuzzChunkMatchesSDK(f *testing.F) {
	for _, seed := range []string{
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Hi <b> \u2028","reasoning":"why","tool_calls":[{"index":1,"id":"a","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":null}`,
		`{"choices":[],"model":"served","usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":30},"cost":0.25}}`,
		`{"choices":[{"index":0,"delta":{"reasoning":null,"reasoning_content":"hmm"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":{"nested":true},"content":null}}],"usage":{"cost":"free"}}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}],"usage":{"prompt_tokens":"12"}}`,
		`{"choices":null,"model":null,"usage":{}}`,
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff\xfe \\ud800 utf8\"}}],\"model\":\"m\",\"model\":\"n\"}",
		`{"error":{"message":"boom","code":502}}`,
		`null`,
		`[]`,
		`[DONE]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if irregular(data) {
			t.Skip()
		}
		var newEvents, oldEvents []string
		rec := func(ev *[]string) model.Stream {
			return model.Stream{
				OnText:      func(d string) { *ev = append(*ev, "t:"+d) },
				OnReasoning: func(d string) { *ev = append(*ev, "r:"+d) },
			}
		}
		a, b := newAccumulator(rec(&newEvents)), newAccumulator(rec(&oldEvents))
		// Twice, so fragments of one call meet.
		errA := errors.Join(a.event(data), a.event(data))
		errB := errors.Join(b.applyOld(data), b.applyOld(data))
		if (errA == nil) != (errB == nil) {
			t.Fatalf("error %v, SDK error %v\n%s", errA, errB, data)
		}
		if g, w := fmt.Sprintf("%+v %q %v %v", a.response(), newEvents, a.finished, a.done), fmt.Sprintf("%+v %q %v %v", b.response(), oldEvents, b.finished, b.done); g != w {
			t.Fatalf("assembled\n got %s\nsdk  %s\nfrom %s", g, w, data)
		}
	})
}

// chunkKeys are the member names the chunk decoder reads.
var chunkKeys = []string{"model", "choices", "usage", "index", "delta", "finish_reason", "content", "reasoning",
	"reasoning_content", "tool_calls", "id", "function", "name", "arguments", "prompt_tokens", "completion_tokens",
	"prompt_tokens_details", "cached_tokens", "cache_write_tokens", "cost"}

// irregular reports whether data is JSON no endpoint sends, which
// encoding/json and the SDK's decoder read differently: invalid UTF-8
// (replaced by U+FFFD, or kept), a repeated member name (the last wins, or
// the first), a name that only case-insensitively equals one the decoder
// reads ("Usage" is usage, or an unknown field).
func irregular(data []byte) bool {
	if !utf8.Valid(data) {
		return true
	}
	d := json.NewDecoder(bytes.NewReader(data))
	// value reads one value and reports an irregular name in it; it
	// stops at the first error.
	var value func() (irregular bool, err error)
	value = func() (bool, error) {
		tok, err := d.Token()
		if err != nil {
			return false, err
		}
		switch tok {
		case json.Delim('{'):
			names := map[string]bool{}
			for d.More() {
				tok, err := d.Token()
				if err != nil {
					return false, err
				}
				name, _ := tok.(string)
				if names[name] {
					return true, nil
				}
				names[name] = true
				for _, k := range chunkKeys {
					if name != k && strings.EqualFold(name, k) {
						return true, nil
					}
				}
				if found, err := value(); found || err != nil {
					return found, err
				}
			}
			_, err = d.Token()
		case json.Delim('['):
			for d.More() {
				if found, err := value(); found || err != nil {
					return found, err
				}
			}
			_, err = d.Token()
		}
		return false, err
	}
	found, _ := value()
	return found
}

// TestMemoMatchesSDK: one client, given a memo, sends on every call of
// wiretest.MemoConversation exactly the SDK's bytes, on both lanes.
func TestMemoMatchesSDK(t *testing.T) {
	for _, base := range []string{directBase, routerBase} {
		tr := &modeltest.Capture{}
		c := New(Options{BaseURL: base, APIKey: "sk-equiv", HTTPClient: &http.Client{Transport: tr}, Headers: equivHeaders})
		wiretest.PlayMemo(equivRequest(), func(st wiretest.MemoStep, r model.Request) {
			_, _ = c.Complete(context.Background(), r, model.Stream{})
			want := viaSDK(t, base, st.Req)
			if !bytes.Equal(tr.Body, want.Body) {
				t.Fatalf("%s, %s:\nmemo: %s\nsdk:  %s", base, st.Name, tr.Body, want.Body)
			}
		})
	}
}

// TestMemoReusesTheOpening: after a call, the next call of a grown
// conversation builds only what follows the unchanged opening (the system
// blocks and the old history, not the old per-turn block), and its body
// is the fresh encoding's; a compaction that rewrites the first message
// reuses only the system blocks.
func TestMemoReusesTheOpening(t *testing.T) {
	memo := &model.Memo{}
	owner := new(int)
	send := func(req model.Request) (skip int) {
		t.Helper()
		req.Memo = memo
		pre, _ := memo.Take(owner).(*prefix)
		p, err := buildAfter(req, false, nil, pre)
		if err != nil {
			t.Fatal(err)
		}
		got := p.encode()
		memo.Put(owner, p.next)
		req.Memo = nil
		fresh, err := build(req, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := fresh.encode(); !bytes.Equal(got, want) {
			t.Fatalf("memo body differs:\nmemo:  %s\nfresh: %s", got, want)
		}
		return p.skip
	}
	req := equivRequest() // two non-empty system blocks, one user message
	turn := func(n int) model.Message {
		return model.Message{Role: model.RoleUser, Content: fmt.Sprintf("<delta:turn>%d</delta:turn>", n)}
	}
	hist := append([]model.Message(nil), req.Messages...)
	with := func(msgs ...model.Message) model.Request {
		r := req
		r.Messages = append(append([]model.Message(nil), hist...), msgs...)
		return r
	}
	if skip := send(with(turn(1))); skip != 0 {
		t.Fatalf("first call reused %d elements", skip)
	}
	for n := 2; n <= 5; n++ {
		id := fmt.Sprint("call_", n)
		hist = append(hist, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: "ok"})
		want := 2 + len(hist) - 2 // system blocks and the history the last call had
		if skip := send(with(turn(n))); skip != want {
			t.Fatalf("call %d reused %d elements, want %d", n, skip, want)
		}
	}
	hist = append([]model.Message{{Role: model.RoleUser, Content: "<summary/>"}}, hist[len(hist)-2:]...)
	if skip := send(with(turn(6))); skip != 2 {
		t.Fatalf("after a compaction the call reused %d elements, want the 2 system blocks", skip)
	}
}

// FuzzMemoMatchesFresh draws a conversation's calls from ops: grow a tool
// round, change the per-turn block, rewrite a stored message, replace the
// history's opening, add a message with images, or start a fresh memo;
// each call's body through the memo must equal a fresh encoding's.
func FuzzMemoMatchesFresh(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 0, 3, 0, 4, 0, 5, 0}, "text <&> \u2028")
	f.Add([]byte{4, 4, 0, 2, 2, 3, 3}, "")
	f.Fuzz(func(t *testing.T, ops []byte, text string) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		owner := new(int)
		memo := &model.Memo{}
		req := equivRequest()
		hist := append([]model.Message(nil), req.Messages...)
		for i, op := range ops {
			switch op % 6 {
			case 0:
				id := fmt.Sprint("call_", i)
				hist = append(hist, model.Message{Role: model.RoleAssistant, Content: text, ToolCalls: []model.ToolCall{{ID: id, Name: text, Arguments: json.RawMessage(text)}}},
					model.Message{Role: model.RoleTool, ToolCallID: id, Content: text + fmt.Sprint(i)})
			case 1:
				text += "."
			case 2:
				k := int(op/6) % len(hist)
				hist[k].Content += text
				for j := range hist[k].ToolCalls {
					hist[k].ToolCalls[j].Arguments = append(hist[k].ToolCalls[j].Arguments, 'x')
				}
			case 3:
				hist[0] = model.Message{Role: model.RoleUser, Content: "<summary>" + text}
			case 4:
				hist = append(hist, model.Message{Role: model.RoleUser, Content: text, Images: []model.Image{{MIME: "image/png", Data: []byte(text)}}})
			case 5:
				memo = &model.Memo{}
			}
			r := req
			r.Messages = append(append([]model.Message(nil), hist...), model.Message{Role: model.RoleUser, Content: text})
			r.Memo = memo
			pre, _ := memo.Take(owner).(*prefix)
			p, err := buildAfter(r, false, nil, pre)
			r.Memo = nil
			fresh, ferr := build(r, false, nil)
			if (err == nil) != (ferr == nil) {
				t.Fatalf("op %d: memo build error %v, fresh %v", i, err, ferr)
			}
			if err != nil {
				continue
			}
			got := p.encode()
			memo.Put(owner, p.next)
			if want := fresh.encode(); !bytes.Equal(got, want) {
				t.Fatalf("op %d: memo body differs:\nmemo:  %s\nfresh: %s", i, got, want)
			}
		}
	})
}
