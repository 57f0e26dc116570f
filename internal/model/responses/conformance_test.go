package responses_test

import (
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
	Credential: wiretest.Bearer,
	Env:        wiretest.OpenAIEnv,
	ExtraKey:   "responses",
	Errors:     []wiretest.ErrorCase{{Status: 400, Message: "Your input exceeds the context window of this model.", Overflow: true}},
}

func TestConformance(t *testing.T) { wiretest.Run(t, wire) }
