package browser

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// Wait condition kinds.
const (
	WaitText         = "text"
	WaitValue        = "value"
	WaitDocument     = "document"
	WaitURL          = "url"
	WaitElement      = "element"
	WaitNetworkQuiet = "networkQuiet"
)

// Element states for WaitElement.
const (
	ElementPresent = "present" // in the document
	ElementVisible = "visible" // in the document, rendered with a non-empty box
	ElementHidden  = "hidden"  // absent, or present but not visible
)

// Wait bounds and defaults.
const (
	DefaultWaitTimeout = 10 * time.Second
	MaxWaitTimeout     = 5 * time.Minute
	DefaultQuietIdle   = 500 * time.Millisecond
	MaxMatchValue      = 64 << 10 // bytes of TextMatch.Value
	pollInterval       = 100 * time.Millisecond
)

// TextMatch matches text: exact and contains compare with whitespace runs
// collapsed and the ends trimmed (what a reader sees); regex is an RE2
// expression over the raw text.
type TextMatch struct {
	Kind  string `json:"kind"` // exact, contains or regex
	Value string `json:"value"`
}

// Matcher validates the match and returns its predicate.
func (m TextMatch) Matcher() (func(string) bool, error) {
	if len(m.Value) > MaxMatchValue {
		return nil, invalidf("matcher value is longer than %d bytes", MaxMatchValue)
	}
	switch m.Kind {
	case "exact":
		want := normalizeSpace(m.Value)
		return func(s string) bool { return normalizeSpace(s) == want }, nil
	case "contains":
		want := normalizeSpace(m.Value)
		return func(s string) bool { return strings.Contains(normalizeSpace(s), want) }, nil
	case "regex":
		re, err := regexp.Compile(m.Value)
		if err != nil {
			return nil, invalidf("matcher regex: %v", err)
		}
		return re.MatchString, nil
	}
	return nil, invalidf("matcher kind %q: want exact, contains or regex", m.Kind)
}

// normalizeSpace collapses whitespace runs to one space and trims the ends.
func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// Condition is one wait_for condition (a discriminated union on Kind).
type Condition struct {
	Kind string `json:"kind"`
	// Matcher is required for text, value and url.
	Matcher *TextMatch `json:"matcher,omitempty"`
	// Target is the element for text, value and element waits. Nil (or a
	// body/html/:root selector) means the whole page: text and value then
	// match document.body.innerText. Required for element waits.
	Target *NodeRef `json:"target,omitempty"`
	// ReadyState is the state a document wait wants: loading, interactive
	// or complete (default). A later state also satisfies it.
	ReadyState string `json:"readyState,omitempty"`
	// State is what an element wait wants: present, visible (default) or
	// hidden.
	State string `json:"state,omitempty"`
	// IdleMs is how long the network must stay quiet (default 500).
	IdleMs int `json:"idleMs,omitempty"`
	// TimeoutMs bounds the wait (default 10 s, at most 5 min).
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// WaitResult says whether the condition was met before the timeout.
type WaitResult struct {
	Kind      string `json:"kind"`
	Matched   bool   `json:"matched"`
	TimedOut  bool   `json:"timedOut"`
	ElapsedMs int64  `json:"elapsedMs"`
	// Observed is the last value seen for url, document and element waits
	// (the URL, the ready state, the element state). Text and values are
	// never echoed: they can be large or secret.
	Observed string `json:"observed,omitempty"`
}

var readyRank = map[string]int{"loading": 0, "interactive": 1, "complete": 2}

// Validate checks the condition without running it.
func (c Condition) Validate() error {
	if c.TimeoutMs < 0 || time.Duration(c.TimeoutMs)*time.Millisecond > MaxWaitTimeout {
		return invalidf("timeoutMs %d: want 0..%d", c.TimeoutMs, MaxWaitTimeout.Milliseconds())
	}
	switch c.Kind {
	case WaitText, WaitValue, WaitURL:
		if c.Matcher == nil {
			return invalidf("%s wait needs a matcher", c.Kind)
		}
		if _, err := c.Matcher.Matcher(); err != nil {
			return err
		}
		if c.Kind == WaitURL && c.Target != nil {
			return invalidf("url wait takes no target")
		}
	case WaitDocument:
		if _, ok := readyRank[c.readyState()]; !ok {
			return invalidf("readyState %q: want loading, interactive or complete", c.ReadyState)
		}
	case WaitElement:
		if c.Target == nil || c.Target.IsZero() {
			return invalidf("element wait needs a target")
		}
		switch c.state() {
		case ElementPresent, ElementVisible, ElementHidden:
		default:
			return invalidf("element state %q: want present, visible or hidden", c.State)
		}
	case WaitNetworkQuiet:
		if c.IdleMs < 0 || time.Duration(c.IdleMs)*time.Millisecond > MaxWaitTimeout {
			return invalidf("idleMs %d: want 0..%d", c.IdleMs, MaxWaitTimeout.Milliseconds())
		}
	default:
		return invalidf("wait kind %q: want text, value, document, url, element or networkQuiet", c.Kind)
	}
	return nil
}

func (c Condition) readyState() string {
	if c.ReadyState == "" {
		return "complete"
	}
	return c.ReadyState
}

func (c Condition) state() string {
	if c.State == "" {
		return ElementVisible
	}
	return c.State
}

func (c Condition) timeout() time.Duration {
	if c.TimeoutMs == 0 {
		return DefaultWaitTimeout
	}
	return time.Duration(c.TimeoutMs) * time.Millisecond
}

// pageLevel reports whether a target means the whole page.
func pageLevel(ref *NodeRef) bool {
	return ref == nil || (ref.BackendNodeID == 0 && ref.FrameID == "" && PageLevelCSS(ref.Selector))
}

// JavaScript probes. Each runs with `this` bound to the element (or to
// document.body for page-level targets).
const (
	jsText  = `function(){ return String(this.innerText ?? this.textContent ?? "") }`
	jsValue = `function(){ return ("value" in this) ? String(this.value ?? "") : String(this.innerText ?? this.textContent ?? "") }`
	jsState = `function(){
		if (!this.isConnected) return "absent";
		const e = this.nodeType === 1 ? this : this.parentElement;
		if (!e) return "hidden";
		const r = e.getBoundingClientRect();
		const seen = typeof e.checkVisibility === "function"
			? e.checkVisibility({opacityProperty: true, visibilityProperty: true})
			: getComputedStyle(e).visibility !== "hidden" && getComputedStyle(e).display !== "none";
		return seen && r.width > 0 && r.height > 0 ? "visible" : "hidden";
	}`
	jsPageRoot = `(document.body || document.documentElement)`
)

// WaitFor polls the condition until it holds or its timeout passes. A timeout
// is a result (Matched false, TimedOut true), not an error; errors are bad
// conditions, a dialog (*DialogError), a closed page, or a backend node that
// is gone for good.
func (p *Page) WaitFor(ctx context.Context, c Condition) (WaitResult, error) {
	res := WaitResult{Kind: c.Kind}
	if err := c.Validate(); err != nil {
		return res, fmt.Errorf("wait for: %w", err)
	}
	start := time.Now()
	timeout := c.timeout()
	if c.Kind == WaitNetworkQuiet {
		idle := DefaultQuietIdle
		if c.IdleMs > 0 {
			idle = time.Duration(c.IdleMs) * time.Millisecond
		}
		ok, err := p.WaitNetworkQuiet(ctx, idle, timeout)
		res.ElapsedMs = time.Since(start).Milliseconds()
		res.Matched, res.TimedOut = ok, !ok && err == nil
		if err != nil {
			return res, fmt.Errorf("wait for: %w", err)
		}
		return res, nil
	}

	var match func(string) bool
	if c.Matcher != nil {
		match, _ = c.Matcher.Matcher() // validated above
	}
	deadline := start.Add(timeout)
	for {
		matched, observed, _, err := p.probe(ctx, c, match, time.Until(deadline))
		res.ElapsedMs = time.Since(start).Milliseconds()
		if err != nil {
			return res, fmt.Errorf("wait for: %w", err)
		}
		if observed != "" {
			res.Observed = observed
		}
		if matched {
			res.Matched = true
			return res, nil
		}
		expired, err := p.pause(ctx, deadline)
		if err != nil {
			return res, fmt.Errorf("wait for: %w", err)
		}
		if expired {
			res.TimedOut = true
			return res, nil
		}
	}
}

// pause waits for the next poll: until the page reports a change (a
// navigation or load can make a condition true), the poll interval passes,
// or deadline. expired is true when deadline had already passed.
func (p *Page) pause(ctx context.Context, deadline time.Time) (expired bool, err error) {
	remaining := time.Until(deadline)
	if remaining <= 0 {
		return true, nil
	}
	changed := p.tr.snap().changed
	timer := time.NewTimer(min(pollInterval, remaining))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-changed:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}

// probe checks the condition once. Transient failures (a navigation
// destroying the context mid-call, a renderer too busy to answer within
// the budget) count as "not yet", with answered false.
func (p *Page) probe(ctx context.Context, c Condition, match func(string) bool, budget time.Duration) (matched bool, observed string, answered bool, err error) {
	if budget < 50*time.Millisecond {
		budget = 50 * time.Millisecond
	}
	group := newObjectGroup()
	defer p.release(group)
	err = p.do(ctx, min(budget, p.session.rt.opts.ActionTimeout), func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		var s string
		switch c.Kind {
		case WaitURL:
			if err := evalValue(pctx, t, `location.href`, &s); err != nil {
				return err
			}
			observed, matched = s, match(s)
		case WaitDocument:
			if err := evalValue(pctx, t, `document.readyState`, &s); err != nil {
				return err
			}
			observed = s
			matched = readyRank[s] >= readyRank[c.readyState()]
		case WaitText, WaitValue:
			fn := jsText
			if c.Kind == WaitValue && !pageLevel(c.Target) {
				fn = jsValue
			}
			found, err := p.probeOn(pctx, t, c.Target, group, fn, &s)
			if err != nil {
				return err
			}
			matched = found && match(s)
		case WaitElement:
			found, err := p.probeOn(pctx, t, c.Target, group, jsState, &s)
			if err != nil {
				return err
			}
			if !found {
				s = "absent"
			}
			observed = s
			switch c.state() {
			case ElementPresent:
				matched = s != "absent"
			case ElementVisible:
				matched = s == "visible"
			case ElementHidden:
				matched = s != "visible"
			}
		}
		return nil
	})
	if err == nil {
		return matched, observed, true, nil
	}
	var de *DialogError
	switch {
	case errors.As(err, &de),
		errors.Is(err, ErrInvalidArgument),
		errors.Is(err, ErrPageClosed), errors.Is(err, ErrPageCrashed),
		errors.Is(err, ErrSessionClosed), errors.Is(err, ErrBrowserCrashed):
		return false, observed, false, err
	case errors.Is(err, ErrNodeNotFound) && c.Target != nil && c.Target.BackendNodeID != 0 && c.Kind != WaitElement:
		// a backend node never comes back
		return false, observed, false, err
	case ctx.Err() != nil:
		return false, observed, false, ctx.Err()
	}
	return false, observed, false, nil
}

// probeOn runs fn on the target (or the page root) and decodes its result.
// found is false when a selector matches nothing or the node is gone.
func (p *Page) probeOn(ctx context.Context, t *chromedp.Target, ref *NodeRef, group, fn string, out *string) (found bool, err error) {
	if pageLevel(ref) {
		return true, evalValue(ctx, t, "("+fn+").call("+jsPageRoot+")", out)
	}
	n, err := resolve(ctx, t, *ref, group)
	if errors.Is(err, ErrNodeNotFound) {
		if ref.BackendNodeID != 0 {
			return false, err
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, callOn(ctx, t, n.object, fn, out)
}

// WaitNetworkQuiet waits until the page has had no request in flight for
// idle, measured from the call (so a request that starts just after a click
// is not missed), and at most timeout. It reports whether quiet was reached.
// It needs no renderer, so a dialog does not block it.
func (p *Page) WaitNetworkQuiet(ctx context.Context, idle, timeout time.Duration) (bool, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		if err := p.Err(); err != nil {
			return false, err
		}
		s := p.tr.snap()
		now := time.Now()
		wait := time.Until(deadline)
		if s.pending == 0 {
			since := s.lastNet
			if since.Before(start) {
				since = start
			}
			quiet := now.Sub(since)
			if quiet >= idle {
				return true, nil
			}
			wait = min(wait, idle-quiet)
		}
		if !now.Before(deadline) {
			return false, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-s.changed:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return false, ctx.Err()
		}
	}
}
