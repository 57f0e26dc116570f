package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// The encoder (encode.go) must put on the wire exactly the bytes the SDK
// put there when it encoded MessageNewParams itself. These tests send
// each request twice through a capturing transport: once through Complete,
// once through the SDK with the request lowered onto its params, as the
// client did before, and compare the bodies and headers.

// sdkParams lowers a request (its tools given as specs) onto the SDK's
// params, block for block as the client built them before encode.go
// existed.
func sdkParams(p request, tools []model.ToolSpec) sdk.MessageNewParams {
	out := sdk.MessageNewParams{MaxTokens: p.MaxTokens, Model: sdk.Model(p.Model)}
	for _, m := range p.Messages {
		blocks := make([]sdk.ContentBlockParamUnion, len(m.Content))
		for i, c := range m.Content {
			blocks[i] = sdkBlock(c)
		}
		if m.Role == model.RoleAssistant {
			out.Messages = append(out.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			out.Messages = append(out.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	if p.OutputEffort != "" {
		out.OutputConfig.Effort = sdk.OutputConfigEffort(p.OutputEffort)
	}
	for _, s := range p.System {
		out.System = append(out.System, *sdkBlock(s).OfText)
	}
	switch p.Thinking.kind {
	case "enabled":
		out.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{Type: "enabled", BudgetTokens: p.Thinking.budget}}
	case "adaptive":
		out.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{Type: "adaptive"}}
	case "disabled":
		out.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{Type: "disabled"}}
	}
	for _, spec := range tools {
		t, err := buildTool(spec)
		if err != nil {
			panic(err) // build accepted it
		}
		schema := sdk.ToolInputSchemaParam{Properties: t.properties, Required: t.required}
		for _, f := range t.extras {
			if schema.ExtraFields == nil {
				schema.ExtraFields = map[string]any{}
			}
			schema.ExtraFields[f.key] = f.value
		}
		tl := sdk.ToolParam{Name: t.name, InputSchema: schema}
		if t.description != "" {
			tl.Description = sdk.String(t.description)
		}
		out.Tools = append(out.Tools, sdk.ToolUnionParam{OfTool: &tl})
	}
	return out
}

func sdkBlock(c content) sdk.ContentBlockParamUnion {
	cc := sdk.CacheControlEphemeralParam{}
	if c.cache {
		cc.Type = "ephemeral"
	}
	switch c.kind {
	case kindText:
		b := sdk.NewTextBlock(c.text)
		b.OfText.CacheControl = cc
		return b
	case kindImage:
		return sdk.NewImageBlockBase64(c.mediaType, c.data)
	case kindToolUse:
		return sdk.NewToolUseBlock(c.id, c.input, c.name)
	case kindToolResult:
		r := sdk.ToolResultBlockParam{ToolUseID: c.id, CacheControl: cc}
		if c.text != "" {
			r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: c.text}}}
		}
		return sdk.ContentBlockParamUnion{OfToolResult: &r}
	case kindThinking:
		return sdk.NewThinkingBlock(c.signature, c.text)
	case kindRedactedThinking:
		return sdk.NewRedactedThinkingBlock(c.data)
	}
	panic("unknown kind " + c.kind)
}

func viaClient(t testing.TB, req model.Request) wiretest.Sent {
	t.Helper()
	tr := &modeltest.Capture{}
	c := New(Options{BaseURL: "http://capture.invalid/v1", APIKey: "sk-ant-equiv", HTTPClient: &http.Client{Transport: tr},
		Headers: map[string]string{"anthropic-beta": "b1", "x-extra": "e"}})
	return wiretest.Completed(t, tr, c, req)
}

func viaSDK(t testing.TB, req model.Request) wiretest.Sent {
	t.Helper()
	p, err := build(req, DefaultMaxTokens, nil)
	if err != nil {
		return wiretest.Sent{}
	}
	tr := &modeltest.Capture{}
	svc := sdk.NewMessageService(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL("http://capture.invalid/"),
		option.WithHTTPClient(&http.Client{Transport: tr}),
		option.WithMaxRetries(0),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			r.URL.Path = "/v1/messages"
			return next(r)
		}),
		option.WithHeaderDel("authorization"),
		option.WithHeader("x-api-key", "sk-ant-equiv"),
		option.WithHeader("anthropic-beta", "b1"),
		option.WithHeader("x-extra", "e"),
	)
	var res *http.Response
	stream := svc.NewStreaming(context.Background(), sdkParams(p, req.Tools), option.WithHeader("Accept", "text/event-stream"), option.WithResponseBodyInto(&res))
	return wiretest.CapturedSDK(t, tr, stream.Err())
}

// multiExtras reports whether some tool's schema has two or more extra
// top-level keys, which the SDK writes in Go map order (a new order each
// time) and the encoder writes sorted.
func multiExtras(req model.Request) bool {
	for _, spec := range req.Tools {
		if t, err := buildTool(spec); err == nil && len(t.extras) > 1 {
			return true
		}
	}
	return false
}

// checkSame fails t unless both paths sent the same request: the same
// bytes, or, where the SDK's own order is random (multiExtras), the same
// JSON with members in another order and the same length. It reports
// whether the request was sent at all.
func checkSame(t testing.TB, req model.Request) bool {
	t.Helper()
	return wiretest.CheckSame(t, viaClient(t, req), viaSDK(t, req), multiExtras(req))
}

func equivRequest() model.Request {
	r := wiretest.EncodingRequest("claude-sonnet-4-5")
	r.Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)
	return r
}

func TestEncoderMatchesSDK(t *testing.T) {
	with := wiretest.Edits(equivRequest)
	toolRound := func(r *model.Request, args, extra string) {
		r.Messages = append(r.Messages,
			model.Message{Role: model.RoleAssistant, Content: "On it.", ToolCalls: []model.ToolCall{{ID: "toolu_1", Name: "write_file", Arguments: json.RawMessage(args)}}, Extra: json.RawMessage(extra)},
			model.Message{Role: model.RoleTool, ToolCallID: "toolu_1", Name: "write_file", Content: "wrote it"},
			model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"})
	}
	schema := wiretest.ToolSchema
	tests := wiretest.EncodingCases(equivRequest)
	maps.Copy(tests, map[string]model.Request{
		"golden request": goldenLike(),
		"50 messages":    history50(),
		"tool round trip": with(func(r *model.Request) {
			toolRound(r, `{"path":"a.md","content":"# Brief <x> & \u2028"}`, "")
		}),
		"arguments with space": with(func(r *model.Request) {
			toolRound(r, " {\n  \"path\" : \"a b.md\",\t\"n\": [1, 2.50, -0.1e3, true, null] }\n", "")
		}),
		"arguments not an object": with(func(r *model.Request) { toolRound(r, `[1,2]`, "") }),
		"arguments invalid":       with(func(r *model.Request) { toolRound(r, `{"path":`, "") }),
		"arguments empty":         with(func(r *model.Request) { toolRound(r, ``, "") }),
		"thinking replayed": with(func(r *model.Request) {
			r.ReasoningEffort = "high"
			toolRound(r, `{"path":"a"}`, `{"anthropic":{"thinking":[{"type":"thinking","thinking":"Plan <a>.","signature":"c2ln"},{"type":"redacted_thinking","data":"ZGF0YQ=="},{"type":"thinking","thinking":"no signature"},{"type":"bogus"}]}}`)
		}),
		"damaged extra": with(func(r *model.Request) {
			r.ReasoningEffort = "low"
			toolRound(r, `{"path":"a"}`, `{"anthropic":{"thinking":"nope"}}`)
		}),
		"another wire's extra": with(func(r *model.Request) {
			toolRound(r, `{"path":"a"}`, `{"responses":{"items":[{"type":"reasoning"}]}}`)
		}),
		"system message in history": with(func(r *model.Request) {
			r.Messages = append(r.Messages, model.Message{Role: model.RoleSystem, Content: "compacted summary"}, model.Message{Role: model.RoleUser, Content: ""})
		}),
		"tool result without content": with(func(r *model.Request) {
			r.Messages = append(r.Messages,
				model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "noop"}}},
				model.Message{Role: model.RoleTool, ToolCallID: "t1"})
		}),
		"adaptive effort":        with(func(r *model.Request) { r.Model, r.ReasoningEffort = "claude-opus-4-6", "xhigh" }),
		"adaptive none":          with(func(r *model.Request) { r.Model, r.ReasoningEffort = "claude-sonnet-5", "none" }),
		"adaptive unknown":       with(func(r *model.Request) { r.Model, r.ReasoningEffort = "claude-future", " Weird " }),
		"budget none":            with(func(r *model.Request) { r.ReasoningEffort = "none" }),
		"budget unknown":         with(func(r *model.Request) { r.Model, r.ReasoningEffort = "claude-3-7-sonnet-20250219", "ultra" }),
		"model to escape":        with(func(r *model.Request) { r.Model = "claude-<&>-4-5\u2029" }),
		"schema required null":   with(schema(`{"properties":{},"required":null}`)),
		"schema required []":     with(schema(`{"properties":{},"required":[]}`)),
		"schema escaped names":   with(schema(`{"properties":{"a":{}},"required":["<a>","\u00e9","\ud83c\udf89"]}`)),
		"schema properties null": with(schema(`{"properties":null}`)),
		"schema duplicate keys":  with(schema(`{"properties":{"a":{}},"properties":{"b":{}},"title":"one","title":"two"}`)),
		"schema one odd key":     with(schema(`{"properties":{},"x.y":1}`)),
		"schema odd keys":        with(schema(`{"properties":{},"$defs":{"a":{"type":"string"}},"additionalProperties":false,"x-y_z$":[1, 2],"a.b":1,"c|d":2,"e#f":3,"g@h":4,"i*j":5,"k?l":6,"m:n":7,"o\\p":8,"q r":9,"<s>":10,"é":11,"0":12,"-1":13,"\"q\"":14,"t!u":15,"v=w":16,"#":17,"@this":18}`)),
		"schema empty key":       with(schema(`{"properties":{},"":1}`)),
	})
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// An empty schema key is a path sjson refuses: neither path
			// sends that request.
			if sent := checkSame(t, req); sent != (name != "schema empty key") {
				t.Errorf("sent = %v", sent)
			}
		})
	}
}

// goldenLike is the shape of the parallel_12 golden case: a 12-call turn
// wider than one lookback window.
func goldenLike() model.Request {
	r := equivRequest()
	r.Model, r.ReasoningEffort = "claude-opus-4-6", "high"
	var calls []model.ToolCall
	for i := 1; i <= 12; i++ {
		calls = append(calls, model.ToolCall{ID: fmt.Sprintf("toolu_%02d", i), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/file_%02d.go"}`, i))})
	}
	r.Messages = append(r.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: calls,
		Extra: json.RawMessage(`{"anthropic":{"thinking":[{"signature":"c2lnX3ByZXY","thinking":"Read the files first.","type":"thinking"}]}}`)})
	for i := 1; i <= 12; i++ {
		r.Messages = append(r.Messages, model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprintf("toolu_%02d", i), Name: "read_file", Content: fmt.Sprintf("package f%02d", i)})
	}
	r.Messages = append(r.Messages, model.Message{Role: model.RoleUser, Content: "<delta:turn step=3/>"})
	return r
}

// FuzzEncoderMatchesSDK builds requests from arbitrary text, tool
// arguments, stored thinking, a tool schema and an effort, and holds the
// encoder to the SDK's bytes for each.
func FuzzEncoderMatchesSDK(f *testing.F) {
	f.Add("write <a> & b", `{"path":"a.md"}`, `{"anthropic":{"thinking":[{"type":"thinking","thinking":"t","signature":"s"}]}}`, `{"type":"object","properties":{"a":{}},"required":["a"]}`, "medium", uint8(0))
	f.Add("\u2028\xff\x00", " { \"a\" : [1, 2] } ", `{"anthropic":{"thinking":[{"type":"redacted_thinking","data":"d"}]}}`, `{"properties":{},"additionalProperties":false,"$defs":{}}`, "none", uint8(1))
	f.Add("", "[]", "null", `{"properties":{},"x.y":{"a b":"c"}}`, "max", uint8(2))
	f.Add("tool", "{", "{", `{"required":null}`, "", uint8(3))
	f.Add("image", `{}`, "", `{"properties":{"<p>":{"enum":["&"]}},"0":1}`, "high", uint8(4))
	f.Fuzz(func(t *testing.T, text, args, stored, schema, effort string, flags uint8) {
		models := []string{"claude-sonnet-4-5", "claude-opus-4-6", "claude-3-7-sonnet-20250219", "claude-future"}
		req := wiretest.Fuzz{Model: models[int(flags)%len(models)], CallID: "toolu_" + text, Text: text, Args: args, Stored: stored, Schema: schema, Effort: effort, Flags: flags &^ 8}.Request()
		if flags&8 != 0 {
			// A system message right after the first turn, the rest dropped.
			req.Messages = append(req.Messages[:1], model.Message{Role: model.RoleSystem, Content: text})
		}
		checkSame(t, req)
	})
}
