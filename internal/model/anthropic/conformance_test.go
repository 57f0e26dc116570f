package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// wire is the Messages client as the shared suite drives it: the key
// travels as x-api-key, never as a bearer token.
var wire = wiretest.Wire{
	New: func(o wiretest.Options) model.Provider {
		return anthropic.New(anthropic.Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Timeout: o.Timeout, Headers: o.Headers})
	},
	Model: "claude-sonnet-4-5",
	Path:  "/v1/messages",
	Credential: func(h http.Header) string {
		if h.Get("Authorization") != "" {
			return "Authorization: " + h.Get("Authorization")
		}
		return h.Get("X-Api-Key")
	},
	Env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-from-env", "ANTHROPIC_AUTH_TOKEN": "tok-from-env", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
		"ANTHROPIC_CUSTOM_HEADERS": "X-From-Env: yes", "ANTHROPIC_PROFILE": "nope"},
	ExtraKey: "anthropic",
	Errors: []wiretest.ErrorCase{
		{Status: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum", Overflow: true},
		{Status: 400, Message: "input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000", Overflow: true},
		{Status: 529, Message: "Overloaded", Retriable: true},
	},
}

func TestConformance(t *testing.T) { wiretest.Run(t, wire) }
