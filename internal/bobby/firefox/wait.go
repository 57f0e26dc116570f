package firefox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// ErrUnsupportedOnEngine marks what bobby does on Chromium that Firefox's
// protocol does not give it. Its message names the engine that can.
var ErrUnsupportedOnEngine = errors.New("unsupportedOnEngine")

// The waits Firefox supports, named as the tools name them.
const (
	WaitText         = "text"
	WaitValue        = "value"
	WaitURL          = "url"
	WaitDocument     = "document"
	WaitElement      = "element"
	WaitNetworkQuiet = "networkQuiet"
)

// Wait is one condition to wait for. Match decides text, value and url
// waits; Target (a ref) names the element of value and element waits and
// narrows a text wait (nil = the page); ReadyState is what a document wait
// wants ("interactive" or "complete"); State is what an element wait wants
// ("present", "visible", "hidden").
type Wait struct {
	Kind       string
	Match      func(string) bool
	Target     *snapshot.Target
	ReadyState string
	State      string
	Timeout    time.Duration // 0 = 10 s
}

// pollEvery is how often a wait reads the page again.
const pollEvery = 50 * time.Millisecond

// ErrTimeout is a wait whose condition did not hold in time.
var ErrTimeout = errors.New("wait timed out")

type reading struct {
	Found      bool   `json:"found"`
	Connected  bool   `json:"connected"`
	Visible    bool   `json:"visible"`
	Text       string `json:"text"`
	Value      string `json:"value"`
	URL        string `json:"url"`
	ReadyState string `json:"readyState"`
}

// read takes one reading of the page or of the element behind ref.
func (p *Page) read(ctx context.Context, ref string) (reading, error) {
	var id int64
	if ref != "" {
		n, err := snapshot.ParseRef(ref)
		if err != nil {
			return reading{}, err
		}
		id = int64(n)
	}
	p.mu.Lock()
	v, err := p.conn.CallFunctionIn(ctx, p.bc, sandbox, snapshot.WalkFunction(), "read", id)
	p.mu.Unlock()
	if err != nil {
		return reading{}, err
	}
	text, err := jsonField(v)
	if err != nil {
		return reading{}, err
	}
	var r reading
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return reading{}, fmt.Errorf("decode reading: %w", err)
	}
	return r, nil
}

// WaitFor polls the page until w holds, ctx ends or the timeout passes.
// A read that fails while a navigation swaps the document is read again.
// networkQuiet has no Firefox implementation: ErrUnsupportedOnEngine.
func (p *Page) WaitFor(ctx context.Context, w Wait) error {
	switch w.Kind {
	case WaitText, WaitValue, WaitURL:
		if w.Match == nil {
			return fmt.Errorf("wait %s: a matcher is required", w.Kind)
		}
	case WaitDocument:
		if w.ReadyState != "interactive" && w.ReadyState != "complete" {
			return fmt.Errorf("wait document: readyState %q: want interactive or complete", w.ReadyState)
		}
	case WaitElement:
		if w.Target == nil || w.Target.Ref == "" {
			return fmt.Errorf("wait element: a ref target is required")
		}
		switch w.State {
		case "", "present", "visible", "hidden":
		default:
			return fmt.Errorf("wait element: state %q: want present, visible or hidden", w.State)
		}
	case WaitNetworkQuiet:
		return fmt.Errorf("wait networkQuiet: %w: Firefox gives bobby no network-idle signal yet; "+
			"wait for text, a value, the url, the document or an element instead, or use engine = \"chromium\"", ErrUnsupportedOnEngine)
	default:
		return fmt.Errorf("wait: unknown kind %q", w.Kind)
	}
	if (w.Kind == WaitValue) && (w.Target == nil || w.Target.Ref == "") {
		return fmt.Errorf("wait value: a ref target is required")
	}
	if w.Target != nil && w.Target.Ref == "" {
		return fmt.Errorf("wait %s: %w: targets are refs on Firefox", w.Kind, snapshot.ErrInvalidTarget)
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ref := ""
	if w.Target != nil {
		ref = w.Target.Ref
	}
	var last reading
	for {
		r, err := p.read(ctx, ref)
		if err == nil {
			last = r
			if w.holds(r) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait %s: %w after %s (last: %s)", w.Kind, ErrTimeout, timeout, last.describe(w.Kind))
		case <-time.After(pollEvery):
		}
	}
}

func (w Wait) holds(r reading) bool {
	switch w.Kind {
	case WaitText:
		return r.Connected && w.Match(r.Text)
	case WaitValue:
		return r.Connected && w.Match(r.Value)
	case WaitURL:
		return w.Match(r.URL)
	case WaitDocument:
		return r.ReadyState == "complete" || (w.ReadyState == "interactive" && r.ReadyState == "interactive")
	case WaitElement:
		switch w.State {
		case "", "visible":
			return r.Connected && r.Visible
		case "present":
			return r.Connected
		case "hidden":
			return !r.Connected || !r.Visible
		}
	}
	return false
}

func (r reading) describe(kind string) string {
	switch kind {
	case WaitURL:
		return "url " + r.URL
	case WaitDocument:
		return "readyState " + r.ReadyState
	case WaitElement:
		return fmt.Sprintf("connected=%v visible=%v", r.Connected, r.Visible)
	case WaitValue:
		return fmt.Sprintf("value %q", clipText(r.Value))
	}
	return fmt.Sprintf("text %q", clipText(r.Text))
}

func clipText(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
