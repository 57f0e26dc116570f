package anthropic

import sdk "github.com/anthropics/anthropic-sdk-go/v2"

type paramsForTest struct{ sdk.MessageNewParams }

func textBlock(s string) sdk.ContentBlockParamUnion { return sdk.NewTextBlock(s) }

func resultBlock(id string) sdk.ContentBlockParamUnion {
	return sdk.ContentBlockParamUnion{OfToolResult: &sdk.ToolResultBlockParam{ToolUseID: id}}
}

func marked(b block) bool {
	switch {
	case b.param.OfText != nil:
		return b.param.OfText.CacheControl.Type != ""
	case b.param.OfToolResult != nil:
		return b.param.OfToolResult.CacheControl.Type != ""
	}
	return false
}
