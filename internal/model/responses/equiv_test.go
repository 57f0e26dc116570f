package responses

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	sdk "github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// The encoder (encode.go) must put on the wire exactly the bytes the SDK
// put there when it encoded ResponseNewParams itself. These tests send
// each request twice through a capturing transport: once through
// Complete, once through the SDK with the request lowered onto its params
// and "stream" set as the client did before, and compare what was sent.

// explicitMark is the breakpoint the client wrote raw before encode.go
// existed (the SDK drops a zero-valued breakpoint struct).
var explicitMark = json.RawMessage(`{"mode":"explicit"}`)

// sdkParams lowers a request (its tools given as specs) onto the SDK's
// params, item for item as the client built them before encode.go existed.
func sdkParams(p request, tools []model.ToolSpec) sdk.ResponseNewParams {
	out := sdk.ResponseNewParams{Model: shared.ResponsesModel(p.Model), Store: param.NewOpt(false)}
	if p.Instructions != "" {
		out.Instructions = param.NewOpt(p.Instructions)
	}
	var items sdk.ResponseInputParam
	for _, it := range p.Input {
		switch it.kind {
		case kindStored:
			items = append(items, param.Override[sdk.ResponseInputItemUnionParam](it.raw))
		case kindFunctionCall:
			items = append(items, sdk.ResponseInputItemParamOfFunctionCall(it.arguments, it.callID, it.name))
		case kindCallOutput:
			out := sdk.ResponseInputItemParamOfFunctionCallOutput(it.text)
			if it.breakpoint {
				out.OfFunctionCallOutput.Output = sdk.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: sdk.ResponseFunctionCallOutputItemListParam{
					{OfInputText: &sdk.ResponseInputTextContentParam{Text: it.text, PromptCacheBreakpoint: param.Override[sdk.ResponseInputTextContentPromptCacheBreakpointParam](explicitMark)}},
				}}
			}
			out.OfFunctionCallOutput.CallID = param.NewOpt(it.callID)
			items = append(items, out)
		case kindMessage:
			role := sdk.EasyInputMessageRole(it.role)
			var msg sdk.ResponseInputItemUnionParam
			switch {
			case it.breakpoint:
				msg = sdk.ResponseInputItemParamOfMessage(sdk.ResponseInputMessageContentListParam{
					{OfInputText: &sdk.ResponseInputTextParam{Text: it.text, PromptCacheBreakpoint: param.Override[sdk.ResponseInputTextPromptCacheBreakpointParam](explicitMark)}},
				}, role)
			case len(it.images) > 0:
				parts := make(sdk.ResponseInputMessageContentListParam, 0, len(it.images)+1)
				if it.text != "" {
					parts = append(parts, sdk.ResponseInputContentUnionParam{OfInputText: &sdk.ResponseInputTextParam{Text: it.text}})
				}
				for _, im := range it.images {
					img := sdk.ResponseInputImageParam{Detail: sdk.ResponseInputImageDetailAuto, ImageURL: param.NewOpt(im.DataURL())}
					parts = append(parts, sdk.ResponseInputContentUnionParam{OfInputImage: &img})
				}
				msg = sdk.ResponseInputItemParamOfMessage(parts, role)
			default:
				msg = sdk.ResponseInputItemParamOfMessage(it.text, role)
			}
			if it.phase != "" {
				msg.OfMessage.Phase = sdk.EasyInputMessagePhase(it.phase)
			}
			items = append(items, msg)
		}
	}
	out.Input = sdk.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, spec := range tools {
		t, err := buildTool(spec)
		if err != nil {
			panic(err) // build accepted it
		}
		params := map[string]any{}
		for _, m := range t.parameters {
			params[m.Name] = m.Value
		}
		fn := sdk.FunctionToolParam{Name: t.name, Parameters: params, Strict: param.NewOpt(false)}
		if t.description != "" {
			fn.Description = param.NewOpt(t.description)
		}
		out.Tools = append(out.Tools, sdk.ToolUnionParam{OfFunction: &fn})
	}
	out.Reasoning.Effort = shared.ReasoningEffort(p.Effort)
	out.Reasoning.Summary = shared.ReasoningSummary(p.Summary)
	out.Text.Verbosity = sdk.ResponseTextConfigVerbosity(p.Verbosity)
	if p.IncludeSealed {
		out.Include = []sdk.ResponseIncludable{sdk.ResponseIncludableReasoningEncryptedContent}
	}
	if p.ExplicitCache {
		out.PromptCacheOptions.Mode = "explicit"
	}
	return out
}

const (
	plainBase  = "http://capture.invalid/v1"
	nativeBase = "https://api.openai.com/v1"
)

func equivOptions(base string, tr http.RoundTripper) Options {
	return Options{BaseURL: base, APIKey: "sk-equiv", HTTPClient: &http.Client{Transport: tr},
		Headers: map[string]string{"X-Title": "Delta"}, TextVerbosity: " Medium ", ReasoningSummary: "auto"}
}

func viaClient(t testing.TB, base string, req model.Request) wiretest.Sent {
	t.Helper()
	tr := &modeltest.Capture{}
	c := New(equivOptions(base, tr))
	return wiretest.Completed(t, tr, c, req)
}

func viaSDK(t testing.TB, base string, req model.Request) wiretest.Sent {
	t.Helper()
	tr := &modeltest.Capture{}
	o := equivOptions(base, tr)
	p, err := build(req, New(o).lane, nil)
	if err != nil {
		return wiretest.Sent{}
	}
	svc := sdk.NewResponseService(openai.SDKOptions(base, o.APIKey, o.HTTPClient, o.Headers)...)
	return wiretest.OpenAISDK(t, tr, svc.New, sdkParams(p, req.Tools))
}

// checkSame fails t unless both paths sent the same request to the same
// URL; it reports whether the request was sent at all.
func checkSame(t testing.TB, base string, req model.Request) bool {
	t.Helper()
	return wiretest.CheckSame(t, viaClient(t, base, req), viaSDK(t, base, req), false)
}

func equivRequest() model.Request { return wiretest.EncodingRequest("gpt-5") }

func TestEncoderMatchesSDK(t *testing.T) {
	gif := []byte("GIF89a\x01\x00\x01\x00")
	with := wiretest.Edits(equivRequest)
	stored := `{"responses":{"items":[{"id":"rs_1","type":"reasoning","summary":[ ],"encrypted_content":"gAAAA<&>"}, {"bad":` + "\n" + `"json"]],"phase":"commentary"}}`
	toolRound := func(r *model.Request, args, extra string) {
		r.Messages = append(r.Messages,
			model.Message{Role: model.RoleAssistant, Content: "On it.", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "write_file", Arguments: json.RawMessage(args)}, {ID: "call_2", Name: "noop"}}, Extra: json.RawMessage(extra)},
			model.Message{Role: model.RoleTool, ToolCallID: "call_1", Name: "write_file", Content: "wrote it"},
			model.Message{Role: model.RoleTool, ToolCallID: "call_2", Content: ""},
			model.Message{Role: model.RoleUser, Content: "<delta:turn step=2/>"})
	}
	schema := wiretest.ToolSchema
	tests := wiretest.EncodingCases(equivRequest)
	maps.Copy(tests, map[string]model.Request{
		"50 messages": history50(),
		"tool round trip": with(func(r *model.Request) {
			toolRound(r, `{"path":"a.md","content":"# Brief <x> & \u2028"}`, `{"responses":{"items":[{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAA"}],"phase":"commentary"}}`)
		}),
		"stored items spaced":   with(func(r *model.Request) { toolRound(r, " {\n \"a\" : 1 }", stored) }),
		"stored items damaged":  with(func(r *model.Request) { toolRound(r, `{}`, `{"responses":{"items":"nope"}}`) }),
		"stored null item":      with(func(r *model.Request) { toolRound(r, `{}`, `{"responses":{"items":[null, 1, "s"]}}`) }),
		"effort":                with(func(r *model.Request) { r.ReasoningEffort = " HIGH " }),
		"effort none":           with(func(r *model.Request) { r.Model, r.ReasoningEffort = "gpt-4.1", "none" }),
		"not a reasoning model": with(func(r *model.Request) { r.Model = "gpt-4.1" }),
		"explicit cache": with(func(r *model.Request) {
			r.Model = "gpt-5.6"
			toolRound(r, `{}`, "")
			r.Messages = append(r.Messages, model.Message{Role: model.RoleUser, Content: "and more <b>"}, model.Message{Role: model.RoleSystem, Content: "sys"})
		}),
		"explicit cache, images": with(func(r *model.Request) {
			r.Model = "openai/gpt-5.7-mini"
			toolRound(r, `{}`, "")
			r.Messages = append(r.Messages, model.Message{Role: model.RoleUser, Content: "<delta:images/>", Images: []model.Image{{MIME: "image/gif", Data: gif}, {MIME: "", Data: nil}}},
				model.Message{Role: model.RoleUser, Images: []model.Image{{MIME: "image/png", Data: gif}}})
		}),
		"explicit cache, only turn blocks": with(func(r *model.Request) {
			r.Model = "gpt-6"
			r.Messages = []model.Message{{Role: model.RoleUser, Content: "  <delta:turn/>"}}
		}),
		"schema keys to order": with(schema(`{"type":"object","properties":{},"$defs":{"a":{}},"additionalProperties":false,"Zed":1,"é":2,"<k>":3,"a\"b":4,"\u2028":5,"":6}`)),
	})
	wiretest.SentOnEach(t, tests, []string{plainBase, nativeBase}, checkSame)
}

// FuzzEncoderMatchesSDK builds requests from arbitrary text, tool
// arguments, stored items, a tool schema and an effort, on both lanes,
// and holds the encoder to the SDK's bytes for each.
func FuzzEncoderMatchesSDK(f *testing.F) {
	f.Add("write <a> & b", `{"path":"a.md"}`, `{"responses":{"items":[{"type":"reasoning","encrypted_content":"x"}],"phase":"final"}}`, `{"type":"object","properties":{"a":{}}}`, "medium", uint8(0))
	f.Add("\u2028\xff\x00", " { \"a\" : [1, 2] } ", `{"responses":{"items":[ { "a" : [ 1 ] } ]}}`, "{ \"properties\" : { \"x\" : 1 } , \"b\" : [ ] }", "<&>", uint8(1))
	f.Add("", "", "", `{}`, "", uint8(2))
	f.Add("<delta:turn/>", `{`, "{", `{"required":null}`, "none", uint8(7))
	f.Fuzz(func(t *testing.T, text, args, stored, schema, effort string, flags uint8) {
		models := []string{"gpt-5", "gpt-5.6", "gpt-4.1", "o3-" + text}
		req := wiretest.Fuzz{Model: models[int(flags)%len(models)], CallID: "call_" + text, Text: text, Args: args, Stored: stored, Schema: schema, Effort: effort, Flags: flags}.Request()
		base := plainBase
		if flags&16 != 0 {
			base = nativeBase
		}
		checkSame(t, base, req)
	})
}
