package browser

import (
	"context"
	"fmt"
	"time"
)

// MaxStateConditions bounds the conditions of one WaitState.
const MaxStateConditions = 8

// StateCondition is one part of a page state: a wait condition, or with
// Not its opposite (the text is gone, the URL no longer matches).
type StateCondition struct {
	Condition
	Not bool `json:"not,omitempty"`
}

// StateResult says whether the page reached the state. A timeout is a
// result, not an error; Conditions holds the last reading of each part, in
// order, so the caller sees which part did not hold.
type StateResult struct {
	Matched    bool         `json:"matched"`
	TimedOut   bool         `json:"timedOut"`
	ElapsedMs  int64        `json:"elapsedMs"`
	Conditions []WaitResult `json:"conditions"`
}

// WaitState waits until every condition holds at the same reading (a page
// state such as "the spinner is hidden, the URL contains /done and the
// network is quiet"), at most timeout (default DefaultWaitTimeout). Each
// condition's own timeoutMs is ignored: the state has one deadline.
func (p *Page) WaitState(ctx context.Context, conds []StateCondition, timeout time.Duration) (StateResult, error) {
	var res StateResult
	if len(conds) == 0 || len(conds) > MaxStateConditions {
		return res, fmt.Errorf("wait for state: %w", invalidf("give 1..%d conditions, got %d", MaxStateConditions, len(conds)))
	}
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	if timeout > MaxWaitTimeout {
		return res, fmt.Errorf("wait for state: %w", invalidf("timeout %s: at most %s", timeout, MaxWaitTimeout))
	}
	matchers := make([]func(string) bool, len(conds))
	for i, c := range conds {
		c.TimeoutMs = 0
		if err := c.Validate(); err != nil {
			return res, fmt.Errorf("wait for state: condition %d: %w", i, err)
		}
		if c.Matcher != nil {
			matchers[i], _ = c.Matcher.Matcher()
		}
	}
	start := time.Now()
	deadline := start.Add(timeout)
	res.Conditions = make([]WaitResult, len(conds))
	seen := make([]bool, len(conds)) // the page answered this condition's probe at least once
	for {
		all := true
		for i, c := range conds {
			var matched bool
			var observed string
			answered := true
			if c.Kind == WaitNetworkQuiet {
				idle := DefaultQuietIdle
				if c.IdleMs > 0 {
					idle = time.Duration(c.IdleMs) * time.Millisecond
				}
				s := p.tr.snap()
				matched = s.pending == 0 && time.Since(s.lastNet) >= idle
			} else {
				var err error
				matched, observed, answered, err = p.probe(ctx, c.Condition, matchers[i], time.Until(deadline))
				if err != nil {
					res.ElapsedMs = time.Since(start).Milliseconds()
					return res, fmt.Errorf("wait for state: condition %d: %w", i, err)
				}
			}
			if c.Not {
				matched = !matched
			}
			if !answered {
				matched = false // no answer is "not yet", also for a negated condition
			}
			if !answered && seen[i] {
				// The page did not answer this round (the last probe before
				// the deadline has little time): report what it last said
				// rather than a "not matched" nobody observed. It does not
				// count toward all-matched, which needs a fresh answer.
				all = false
				continue
			}
			seen[i] = seen[i] || answered
			res.Conditions[i] = WaitResult{Kind: c.Kind, Matched: matched, Observed: observed}
			all = all && matched
		}
		res.ElapsedMs = time.Since(start).Milliseconds()
		if all {
			res.Matched = true
			return res, nil
		}
		expired, err := p.pause(ctx, deadline)
		if err != nil {
			return res, fmt.Errorf("wait for state: %w", err)
		}
		if expired {
			res.TimedOut = true
			return res, nil
		}
	}
}
