package anthropic

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// TestServedTierIsTheSpeed: usage.service_tier is the speed the call was
// served at; a stream that reports none has no speed.
func TestServedTierIsTheSpeed(t *testing.T) {
	for _, c := range []struct{ start, want string }{
		{`{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":3,"output_tokens":1,"service_tier":"priority"}}}`, "priority"},
		{`{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":3,"output_tokens":1}}}`, ""},
	} {
		a := newAccumulator(model.Stream{})
		if err := a.event([]byte(c.start)); err != nil {
			t.Fatal(err)
		}
		if got := a.response().Speed; got != c.want {
			t.Errorf("speed of %s = %q, want %q", c.start, got, c.want)
		}
	}
}
