package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/deltaharness/delta/internal/model"
)

// ErrCaptured is what a Capture answers every request with.
var ErrCaptured = errors.New("captured")

// Capture is an http.RoundTripper that records the last request and answers
// with ErrCaptured, so nothing leaves the process: wire tests use it to see
// the exact bytes a client sends.
type Capture struct {
	URL    string
	Body   []byte
	Header http.Header
	Calls  int
}

// RoundTrip records r and fails it.
func (c *Capture) RoundTrip(r *http.Request) (*http.Response, error) {
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.URL, c.Body, c.Header = r.URL.String(), b, r.Header.Clone()
	c.Calls++
	return nil, ErrCaptured
}

// Tools50 is 50 tools with realistic schemas (~480 bytes each), the tool
// set of the wire benchmarks.
func Tools50() []model.ToolSpec {
	var out []model.ToolSpec
	for i := range 50 {
		out = append(out, model.ToolSpec{Name: fmt.Sprintf("tool_%02d", i), Description: "Read part of a file in the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"path relative to the workspace root"},"offset":{"type":"integer","description":"first line to read, 1-based"},"limit":{"type":"integer","description":"how many lines to read at most"},"pattern":{"type":"string","description":"a regular expression"}},"required":["path"],"additionalProperties":false}`)})
	}
	return out
}
