// Package cascade is the model.Provider the engine calls: it walks an
// ordered list of endpoints (the primary provider first, then the
// DELTA_PROVIDERS fallbacks), each with its own model list, and applies
// Delta's retry and advance rules around the wire clients,
// which never retry on their own.
//
// The rules, for one call:
//
//   - A retriable failure (network error, timeout, 408, 409, 429, 5xx, as the
//     wire classifies it) is retried on the same model until AttemptsPerModel
//     wire attempts (3) have failed, then the next model on that endpoint is
//     tried.
//   - A non-retriable failure (an ordinary 4xx) goes to the next model at
//     once, without a retry.
//   - Credential-wide failures skip the endpoint's remaining models: 401 and
//     403, a 409 or 429 from a shared subscription credential. An endpoint
//     with a renewable credential (Endpoint.Reauth) first gets one re-auth
//     and one more attempt on 401/403. A shared credential that answered 429
//     cools for Cooldown and is passed over by later calls while any other
//     endpoint remains.
//   - When an endpoint's models are exhausted, the failure that ended its
//     last model decides: a network error, 401, 403, 409, 429 or 5xx moves
//     to the next endpoint; an ordinary 4xx or an exhausted 408 ends the
//     call with that error (another provider would refuse the same request).
//   - A context-window overflow (model.ErrContextOverflow) ends the call at
//     once: the engine compacts and asks again.
//   - Once answer text has streamed, nothing is retried or switched: the
//     caller has already shown that text.
//   - Cancelling ctx ends the call at once, also during a backoff wait.
//
// Every retry, re-auth, model switch and provider failover is reported
// through model.Stream.OnRetry before the next attempt starts.
package cascade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/model"
)

// Human provider names, as /v1/status reports them.
const (
	KindAnthropic  = "anthropic-native" // native Anthropic Messages
	KindOpenAI     = "openai-native"    // OpenAI Responses with a static key
	KindOpenRouter = "openrouter"       // Chat Completions on openrouter.ai
	KindCodex      = "codex-sign-in"    // Responses with a broker-minted subscription token
	KindChat       = "chat"             // any other Chat Completions endpoint
)

// Retry reasons reported in model.Retry.Reason.
const (
	ReasonRetry    = "retry"
	ReasonReauth   = "reauth"
	ReasonSwitch   = "model_switch"
	ReasonFailover = "provider_failover"
)

// ErrAfterText marks a failure after answer text had streamed: it is never
// retried or switched, since the caller has already shown that text.
var ErrAfterText = errors.New("failed after answer text began streaming")

// Defaults applied by New.
const (
	DefaultAttemptsPerModel = 3
	DefaultCooldown         = 60 * time.Second
)

// Endpoint is one provider in the cascade.
type Endpoint struct {
	Label    string // operator's name for it; shown in reports and status
	Kind     string // one of the Kind constants
	Provider model.Provider
	Models   []string // tried in order; must not be empty
	// Shared marks a subscription credential shared with other users of
	// the account (the Codex broker): its 409 and 429 are credential-wide.
	Shared bool
	// Reauth, when set, renews the endpoint's credential (the broker's
	// Invalidate). On 401/403 it is called once per call and the same model
	// is tried again before the failure counts as credential-wide.
	Reauth func()
}

// Options configure a Cascade.
type Options struct {
	Endpoints []Endpoint
	// AttemptsPerModel is the number of wire attempts one model gets for
	// retriable failures (default 3: two retries).
	AttemptsPerModel int
	// Backoff is the wait before retry number attempt (1 = the first
	// retry). Default 500 ms doubling, capped at 8 s.
	Backoff func(attempt int) time.Duration
	// AttemptTimeout bounds one wire attempt (DELTA_MODEL_TIMEOUT_MS); 0
	// leaves it to the wire client. An attempt that runs out is a retriable
	// failure, not the end of the call.
	AttemptTimeout time.Duration
	// Cooldown is how long a shared credential that answered 429 is passed
	// over (default 60 s).
	Cooldown time.Duration
	// UtilityModel is DELTA_UTILITY_MODEL; "" sends Utility calls to the
	// main cascade.
	UtilityModel string
	Logger       *slog.Logger
	Now          func() time.Time // clock for cooldowns (tests)
}

// Cascade implements model.Provider over several endpoints. It is safe for
// concurrent use.
type Cascade struct {
	o Options

	mu     sync.Mutex
	cooled map[int]time.Time // endpoint index → passed over until
}

var _ model.Provider = (*Cascade)(nil)

// New validates the endpoints and fills defaults.
func New(o Options) (*Cascade, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("model cascade: no endpoints")
	}
	for i, ep := range o.Endpoints {
		if ep.Provider == nil {
			return nil, fmt.Errorf("model cascade: endpoint %d (%s) has no provider", i, ep.Label)
		}
		if len(ep.Models) == 0 {
			return nil, fmt.Errorf("model cascade: endpoint %d (%s) has no models", i, ep.Label)
		}
	}
	if o.AttemptsPerModel <= 0 {
		o.AttemptsPerModel = DefaultAttemptsPerModel
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Endpoints = append([]Endpoint(nil), o.Endpoints...)
	return &Cascade{o: o, cooled: map[int]time.Time{}}, nil
}

// DefaultBackoff waits 500 ms before the first retry, doubling, capped at 8 s.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 5 {
		return 8 * time.Second
	}
	return 500 * time.Millisecond << (attempt - 1)
}

// Served describes how a call was answered.
type Served struct {
	Label    string // endpoint label
	Provider string // endpoint kind (human name)
	Model    string // model asked for on that endpoint
	Retries  int    // retries, re-auths, switches and failovers before it
	Fallback bool   // not the first model of the first endpoint tried
}

// Complete runs req through the cascade. req.Model is ignored: the
// endpoints' model lists decide. Response.Model is the model that served.
func (c *Cascade) Complete(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	resp, _, err := c.CompleteServed(ctx, req, s)
	return resp, err
}

// CompleteServed is Complete that also says which endpoint and model served.
func (c *Cascade) CompleteServed(ctx context.Context, req model.Request, s model.Stream) (model.Response, Served, error) {
	plan := make([]step, 0, 4)
	for _, i := range c.order() {
		ep := c.o.Endpoints[i]
		for _, m := range ep.Models {
			plan = append(plan, step{ep: i, model: m})
		}
	}
	return c.run(ctx, req, s, plan, lane{attempts: c.o.AttemptsPerModel})
}

// step is one (endpoint, model) pair of a call's plan.
type step struct {
	ep    int
	model string
}

// order is the endpoint indexes a new call walks: shared credentials still
// cooling from a 429 are passed over unless nothing else is left.
func (c *Cascade) order() []int {
	now := c.o.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, 0, len(c.o.Endpoints))
	for i := range c.o.Endpoints {
		if until, ok := c.cooled[i]; ok {
			if now.Before(until) {
				continue
			}
			delete(c.cooled, i)
		}
		out = append(out, i)
	}
	if len(out) == 0 {
		for i := range c.o.Endpoints {
			out = append(out, i)
		}
	}
	return out
}

func (c *Cascade) cool(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cooled[i] = c.o.Now().Add(c.o.Cooldown)
}

// lane is how run treats failures: the main cascade's rules, or the utility
// lane's single attempt per endpoint with every failure moving on.
type lane struct {
	attempts int  // wire attempts per step for retriable failures
	tryEvery bool // advance to the next endpoint whatever the failure
}

// run walks plan under the rules of l.
func (c *Cascade) run(ctx context.Context, req model.Request, s model.Stream, plan []step, l lane) (model.Response, Served, error) {
	var (
		lastErr  error
		reports  int
		reauthed = map[int]bool{}
	)
	report := func(r model.Retry) {
		reports++
		if s.OnRetry != nil {
			s.OnRetry(r)
		}
	}
	for si := 0; si < len(plan); {
		st := plan[si]
		ep := c.o.Endpoints[st.ep]
		for attempt := 1; ; attempt++ {
			if err := ctx.Err(); err != nil {
				return model.Response{}, Served{}, fmt.Errorf("model call: %w", err)
			}
			resp, streamed, err := c.attempt(ctx, ep, st.model, req, s)
			if err == nil {
				if resp.Model == "" {
					resp.Model = st.model
				}
				return resp, Served{Label: ep.Label, Provider: ep.Kind, Model: st.model, Retries: reports, Fallback: si > 0}, nil
			}
			if ctx.Err() != nil {
				return model.Response{}, Served{}, fmt.Errorf("model call: %w", ctx.Err())
			}
			if streamed {
				return resp, Served{}, fmt.Errorf("model %s on %s: %w: %w", st.model, ep.Label, ErrAfterText, err)
			}
			lastErr = err
			f := classify(err, ep.Shared)
			c.o.Logger.Warn("model attempt failed", "provider", ep.Label, "model", st.model, "attempt", attempt, "status", f.status, "err", err)
			base := model.Retry{Provider: ep.Label, Model: st.model, Attempt: attempt, Status: f.status, Error: clip.Runes(err.Error(), 300)}

			if f.fatal && !l.tryEvery {
				return model.Response{}, Served{}, fmt.Errorf("model call via %s (%s): %w", ep.Label, st.model, err)
			}
			// One re-auth on a renewable credential before 401/403 counts.
			if f.auth && ep.Reauth != nil && !reauthed[st.ep] {
				reauthed[st.ep] = true
				ep.Reauth()
				r := base
				r.Reason, r.NextProvider, r.NextModel = ReasonReauth, ep.Label, st.model
				report(r)
				continue
			}
			if f.retriable && !f.credential && attempt < l.attempts {
				r := base
				r.Reason, r.NextProvider, r.NextModel = ReasonRetry, ep.Label, st.model
				report(r)
				if err := sleep(ctx, c.o.Backoff(attempt)); err != nil {
					return model.Response{}, Served{}, fmt.Errorf("model call: %w", err)
				}
				continue
			}
			if f.cool {
				c.cool(st.ep)
			}
			// Next model on this endpoint, unless the credential is gone.
			next := si + 1
			if f.credential {
				for next < len(plan) && plan[next].ep == st.ep {
					next++
				}
			}
			if next < len(plan) && plan[next].ep == st.ep {
				r := base
				r.Reason, r.NextProvider, r.NextModel = ReasonSwitch, ep.Label, plan[next].model
				report(r)
				si = next
				break
			}
			// The endpoint is exhausted: only some failures justify another.
			if next >= len(plan) || !(f.advance || l.tryEvery) {
				return model.Response{}, Served{}, fmt.Errorf("model call via %s (%s): %w", ep.Label, st.model, lastErr)
			}
			nx := plan[next]
			r := base
			r.Reason, r.NextProvider, r.NextModel = ReasonFailover, c.o.Endpoints[nx.ep].Label, nx.model
			report(r)
			si = next
			break
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no model to try")
	}
	return model.Response{}, Served{}, fmt.Errorf("model call: %w", lastErr)
}

// attempt makes one wire attempt, noting whether answer text streamed.
func (c *Cascade) attempt(ctx context.Context, ep Endpoint, name string, req model.Request, s model.Stream) (model.Response, bool, error) {
	req.Model = name
	var streamed atomic.Bool
	ws := model.Stream{OnReasoning: s.OnReasoning}
	if ws.OnReasoning == nil {
		ws.OnReasoning = func(string) {}
	}
	ws.OnText = func(d string) {
		if d == "" {
			return
		}
		streamed.Store(true)
		if s.OnText != nil {
			s.OnText(d)
		}
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.o.AttemptTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.o.AttemptTimeout)
	}
	defer cancel()
	resp, err := ep.Provider.Complete(actx, req, ws)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		// Our own per-attempt deadline, not the caller's: a timeout the
		// next attempt may well beat.
		err = &model.Error{Message: fmt.Sprintf("no complete answer within %s", c.o.AttemptTimeout), Retriable: true, Err: err}
	}
	return resp, streamed.Load(), err
}

// failure is what the rules need to know about one failed attempt.
type failure struct {
	status     int
	retriable  bool // worth another attempt on the same model
	auth       bool // 401/403: a re-auth may cure it
	credential bool // skip the endpoint's remaining models
	cool       bool // shared credential rate-limited
	advance    bool // may move to the next endpoint once this one is exhausted
	fatal      bool // not a wire failure: no other model or endpoint would help
}

func classify(err error, shared bool) failure {
	var me *model.Error
	if !errors.As(err, &me) {
		// Not a wire failure (a request the client could not even build):
		// the same request fails everywhere, so stop.
		return failure{fatal: true}
	}
	f := failure{status: me.Status, retriable: me.Retriable}
	if errors.Is(err, model.ErrContextOverflow) {
		// The engine answers this with a forced compaction; other models
		// would be asked the same oversized prompt in the meantime.
		f.fatal, f.retriable = true, false
		return f
	}
	switch st := me.Status; {
	case st == 0: // network error, cut stream, attempt timeout
		f.advance = true
	case st == http.StatusUnauthorized, st == http.StatusForbidden:
		f.auth, f.credential, f.advance, f.retriable = true, true, true, false
	case st == http.StatusConflict, st == http.StatusTooManyRequests:
		f.advance = true
		if shared {
			f.credential, f.retriable = true, false
			f.cool = st == http.StatusTooManyRequests
		}
	case st >= 500:
		f.advance = true
	}
	return f
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
