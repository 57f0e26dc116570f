package openai

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// TestServedTierIsTheSpeed: the service_tier a chunk reports is the speed
// the call was served at; a stream that reports none has no speed.
func TestServedTierIsTheSpeed(t *testing.T) {
	for _, c := range []struct{ chunk, want string }{
		{`{"model":"m","service_tier":"priority","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "priority"},
		{`{"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, ""},
	} {
		a := newAccumulator(model.Stream{})
		if err := a.event([]byte(c.chunk)); err != nil {
			t.Fatal(err)
		}
		if got := a.response().Speed; got != c.want {
			t.Errorf("speed of %s = %q, want %q", c.chunk, got, c.want)
		}
	}
}
