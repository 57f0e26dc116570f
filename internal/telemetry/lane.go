package telemetry

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// lane is what the NDJSON and the OTLP lanes share: the background loop
// that flushes every interval and backs off after a failure, and the
// health of their attempts that /v1/status reports.
type lane struct {
	interval   time.Duration
	maxBackoff time.Duration
	logger     *slog.Logger
	warning    string             // the log message of a failed flush
	describe   func(error) string // a failure as it is logged and shown

	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	sent        int64 // what the receiver took since start: records or runs
	lastSuccess time.Time
	lastError   string
	lastErrorAt time.Time
	failures    int // consecutive
}

// newLane is a lane flushing every interval (DefaultInterval when not
// positive), backing off up to maxBackoff (DefaultMaxBackoff), logging a
// failure to logger (none when nil) as warning with describe's text.
func newLane(interval, maxBackoff time.Duration, logger *slog.Logger, warning string, describe func(error) string) lane {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return lane{interval: interval, maxBackoff: maxBackoff, logger: logger, warning: warning, describe: describe}
}

// start runs flush in the background, every interval or backoff, until
// stop.
func (l *lane) start(ctx context.Context, flush func(context.Context) error) {
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		exportLoop(ctx, l.interval, flush, l.next)
	}()
}

// stop ends the loop and waits for it; a lane never started has nothing
// to stop.
func (l *lane) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

// exportLoop is both lanes' loop: it sleeps wait, flushes, and lets next
// turn the flush's outcome into the following wait (the interval, or a
// backoff after a failure), until ctx is done.
func exportLoop(ctx context.Context, wait time.Duration, flush func(context.Context) error, next func(error) time.Duration) {
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := flush(ctx)
		if ctx.Err() != nil {
			return
		}
		wait = next(err)
	}
}

// next records the outcome of a wake and returns how long to sleep.
func (l *lane) next(err error) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.failures = 0
		return l.interval
	}
	l.failures++
	l.lastError, l.lastErrorAt = l.describe(err), time.Now()
	l.logger.Warn(l.warning, "err", l.lastError, "failures", l.failures)
	return backoff(l.interval, l.maxBackoff, l.failures, rand.Float64())
}

// backoff is the wait after the n-th consecutive failure: uniform in
// [base, min(base·2ⁿ, ceiling)] (u in [0, 1)).
func backoff(base, ceiling time.Duration, n int, u float64) time.Duration {
	hi := ceiling
	if n < 30 && base<<n < ceiling {
		hi = base << n
	}
	hi = max(hi, base)
	return base + time.Duration(u*float64(hi-base))
}

// took records that the receiver took n more records or runs.
func (l *lane) took(n int) {
	l.mu.Lock()
	l.sent += int64(n)
	l.lastSuccess = time.Now()
	l.mu.Unlock()
}

// Health is what both lanes' statuses report of their latest attempts.
type Health struct {
	LastSuccess         string `json:"last_success,omitempty"` // RFC 3339
	LastError           string `json:"last_error,omitempty"`
	LastErrorAt         string `json:"last_error_at,omitempty"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
}

// health is the lane's Health and how much the receiver took since start.
func (l *lane) health() (Health, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := Health{ConsecutiveFailures: l.failures}
	if !l.lastSuccess.IsZero() {
		h.LastSuccess = l.lastSuccess.UTC().Format(time.RFC3339)
	}
	if l.lastError != "" {
		h.LastError, h.LastErrorAt = l.lastError, l.lastErrorAt.UTC().Format(time.RFC3339)
	}
	return h, l.sent
}
