package subagent

import (
	"context"
	"sync"

	"github.com/deltaharness/delta/internal/tool"
)

// holds is the budget the children still running in this process hold,
// per parent run. A child is given the parent's remaining budget; without
// the hold, two delegation calls of one turn (the engine runs a turn's
// calls at once) would each be given all of it, and the parent would spend
// it twice over.
type holds struct {
	mu   sync.Mutex
	runs map[string]hold
}

type hold struct {
	tokens int64
	cost   float64
}

// Tools returns spawn_subagent and eval_n sharing one record of held
// budget, so calls of either kind made at once split what the parent has
// left instead of each spending all of it.
func Tools(o Options) []tool.Tool {
	o.holds = &holds{runs: map[string]hold{}}
	return []tool.Tool{New(o), NewEvalN(o)}
}

// claim reads what runID has left, less what its other running children
// hold, and holds all of that for the caller until release is called,
// which must come after the caller's children are charged. held is what the
// other children held (zero when none run), for the refusal's wording.
func (o Options) claim(ctx context.Context, runID string) (tokens int64, cost float64, held hold, release func(), err error) {
	o.holds.mu.Lock()
	defer o.holds.mu.Unlock()
	tokens, cost, err = o.Remaining(ctx, runID)
	if err != nil {
		return 0, 0, hold{}, nil, err
	}
	held = o.holds.runs[runID]
	tokens, cost = tokens-held.tokens, cost-held.cost
	if tokens <= 0 || cost <= 0 {
		return tokens, cost, held, func() {}, nil
	}
	o.holds.runs[runID] = hold{held.tokens + tokens, held.cost + cost}
	return tokens, cost, held, func() {
		o.holds.mu.Lock()
		defer o.holds.mu.Unlock()
		h := o.holds.runs[runID]
		h.tokens -= tokens
		h.cost -= cost
		if h.tokens <= 0 {
			delete(o.holds.runs, runID)
			return
		}
		o.holds.runs[runID] = h
	}, nil
}

// busy says why no budget is left when other children hold it.
func (h hold) busy() string {
	if h.tokens <= 0 && h.cost <= 0 {
		return ""
	}
	return "; the rest is held by this run's other subagents, still running: wait for their results before delegating again"
}
