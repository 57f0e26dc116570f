package responses_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/responses"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// wire is the Responses client on its plain lane (a host other than
// api.openai.com) as the shared suite drives it.
var wire = wiretest.Wire{
	New: func(o wiretest.Options) model.Provider {
		return responses.New(responses.Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Timeout: o.Timeout, Headers: o.Headers})
	},
	Model:      "gpt-5",
	Path:       "/v1/responses",
	Credential: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
	Env: map[string]string{"OPENAI_API_KEY": "sk-from-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_ORG_ID": "org-env",
		"OPENAI_PROJECT_ID": "proj-env", "OPENAI_CUSTOM_HEADERS": "X-From-Env: yes"},
	ExtraKey: "responses",
	Errors:   []wiretest.ErrorCase{{Status: 400, Message: "Your input exceeds the context window of this model.", Overflow: true}},
}

func TestConformance(t *testing.T) { wiretest.Run(t, wire) }
