package openai_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// wire is the Chat Completions client as the shared suite drives it.
var wire = wiretest.Wire{
	New: func(o wiretest.Options) model.Provider {
		return openai.New(openai.Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Timeout: o.Timeout, Headers: o.Headers})
	},
	Model:      "test/model-1",
	Path:       "/v1/chat/completions",
	Credential: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
	Env: map[string]string{"OPENAI_API_KEY": "sk-from-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_ORG_ID": "org-env",
		"OPENAI_PROJECT_ID": "proj-env", "OPENAI_CUSTOM_HEADERS": "X-From-Env: yes"},
}

func TestConformance(t *testing.T) { wiretest.Run(t, wire) }
