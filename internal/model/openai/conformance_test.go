package openai_test

import (
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
	Credential: wiretest.Bearer,
	Env:        wiretest.OpenAIEnv,
}

func TestConformance(t *testing.T) { wiretest.Run(t, wire) }
