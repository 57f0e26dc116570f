package responses

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// TestServedTierIsTheSpeed: the completed response's service_tier is the
// speed the call was served at; a response that reports none has no speed.
func TestServedTierIsTheSpeed(t *testing.T) {
	for _, c := range []struct{ done, want string }{
		{`{"type":"response.completed","response":{"model":"gpt","status":"completed","service_tier":"flex"}}`, "flex"},
		{`{"type":"response.completed","response":{"model":"gpt","status":"completed"}}`, ""},
	} {
		a := newAccumulator(model.Stream{}, true)
		if err := a.event([]byte(c.done)); err != nil {
			t.Fatal(err)
		}
		if got := a.response().Speed; got != c.want {
			t.Errorf("speed of %s = %q, want %q", c.done, got, c.want)
		}
	}
}
