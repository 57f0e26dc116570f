// Package telemetry ships the daemon's durable events off the box: a
// background exporter posts them as NDJSON records to a collector the
// operator runs.
//
// Delivery is at-least-once. The events table is the outbox: rows above a
// durable export mark (store.Outbox.Exported) are unexported, and the mark
// moves only after the collector answers a batch with a 2xx, so a crash or
// a kill between the post and the mark re-sends that batch, and the
// collector deduplicates on event.id (<daemon id>:<row id>).
//
// Cadence: the exporter wakes every Interval (2 s), then sends batches of up
// to Batch (200) records back to back while full batches keep succeeding,
// so a backlog drains at the collector's pace rather than 200 per wake. A
// failed request (network error, timeout, non-2xx) is retried serially
// after an exponential backoff with full jitter: the n-th consecutive
// failure waits a uniformly random time in [Interval, min(Interval·2ⁿ,
// MaxBackoff)], so many daemons behind one recovering collector spread
// their retries instead of arriving in lockstep. The first success resets
// it.
//
// The outbox is bounded at Cap rows: exported rows are deleted first, and
// the oldest unexported rows only when the backlog alone exceeds the cap
// (counted as dropped and reported in the status).
package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// Defaults of the delivery contract.
const (
	DefaultInterval   = 2 * time.Second
	DefaultBatch      = 200
	DefaultTimeout    = 15 * time.Second
	DefaultCap        = 50_000
	DefaultMaxBackoff = time.Minute
)

// Outbox is the durable side of the exporter: the events table and the
// export mark (*store.Store).
type Outbox interface {
	TelemetryOutbox(ctx context.Context) (store.Outbox, error)
	Events(ctx context.Context, f store.EventFilter) ([]event.Event, error)
	MarkExported(ctx context.Context, id int64) error
	TrimOutbox(ctx context.Context, limit int64) (store.Trim, error)
}

// Options configure an Exporter. URL and Outbox are required.
type Options struct {
	URL     string
	Token   string // bearer; empty = no Authorization header
	AgentID string
	// Payloads exports tool arguments, tool results and error text.
	Payloads bool
	// Redact replaces vault values in exported strings.
	Redact     func(string) string
	Outbox     Outbox
	Client     *http.Client // nil = a fresh client
	Interval   time.Duration
	Batch      int
	Timeout    time.Duration
	Cap        int64
	MaxBackoff time.Duration
	Logger     *slog.Logger
}

// Exporter posts unexported events to the collector until Close.
type Exporter struct {
	o        Options
	daemonID string
	shaper   shaper
	mark     int64 // the export mark; only this exporter moves it
	lane           // the loop, and the records acknowledged since start
}

// New prepares an exporter: it reads (or creates) the database's daemon id.
func New(ctx context.Context, o Options) (*Exporter, error) {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cap <= 0 {
		o.Cap = DefaultCap
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	st, err := o.Outbox.TelemetryOutbox(ctx)
	if err != nil {
		return nil, err
	}
	return &Exporter{o: o, daemonID: st.DaemonID, mark: st.Exported,
		shaper: shaper{daemonID: st.DaemonID, agentID: o.AgentID, payloads: o.Payloads, redact: o.Redact},
		lane:   newLane(o.Interval, o.MaxBackoff, o.Logger, "telemetry export", error.Error)}, nil
}

// DaemonID is the database's identity on the wire.
func (x *Exporter) DaemonID() string { return x.daemonID }

// Start runs the export loop in the background until Close.
func (x *Exporter) Start(ctx context.Context) { x.start(ctx, x.Flush) }

// Close stops the loop and waits for it; an in-flight request is
// abandoned (its batch stays unexported and is sent again next time).
func (x *Exporter) Close(context.Context) error {
	x.stop()
	return nil
}

// Flush sends unexported events until a batch comes back short or a
// request fails, then trims the outbox to its cap.
func (x *Exporter) Flush(ctx context.Context) error {
	var sendErr error
	for ctx.Err() == nil {
		n, err := x.sendBatch(ctx)
		if err != nil {
			sendErr = err
			break
		}
		if n < x.o.Batch {
			break
		}
	}
	tr, err := x.o.Outbox.TrimOutbox(context.WithoutCancel(ctx), x.o.Cap)
	if err != nil {
		return errors.Join(sendErr, err)
	}
	if tr.Dropped > 0 {
		x.logger.Warn("telemetry outbox over its cap: oldest unexported events dropped", "dropped", tr.Dropped, "cap", x.o.Cap)
	}
	return sendErr
}

// sendBatch posts the next batch and moves the mark on a 2xx. It returns
// how many events the batch held.
func (x *Exporter) sendBatch(ctx context.Context) (int, error) {
	evs, err := x.o.Outbox.Events(ctx, store.EventFilter{Since: x.mark, Limit: x.o.Batch})
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range evs {
		if err := enc.Encode(x.shaper.record(e)); err != nil {
			return 0, fmt.Errorf("encode event %d: %w", e.ID, err)
		}
	}
	if err := x.post(ctx, body.Bytes()); err != nil {
		return 0, err
	}
	last := evs[len(evs)-1].ID
	if err := x.o.Outbox.MarkExported(context.WithoutCancel(ctx), last); err != nil {
		return 0, err
	}
	x.mark = last
	x.took(len(evs))
	return len(evs), nil
}

func (x *Exporter) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, x.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.o.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if x.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+x.o.Token)
	}
	resp, err := x.o.Client.Do(req)
	if err != nil {
		// The URL's query could carry a credential: name only the failure.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to collector: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drained so the connection is reused
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("collector answered %s", resp.Status)
	}
	return nil
}

// Status is the exporter's view for /v1/status.
type Status struct {
	Enabled  bool  `json:"enabled"`
	Payloads bool  `json:"capture_payloads"`
	Backlog  int64 `json:"backlog"`
	// OldestUnexportedAgeS is the age in seconds of the oldest event still
	// waiting (0 when none).
	OldestUnexportedAgeS float64 `json:"oldest_unexported_age_s"`
	Exported             int64   `json:"exported"` // since this process started
	Dropped              int64   `json:"dropped"`  // by the outbox cap, ever
	Cap                  int64   `json:"cap"`
	Health
	StatusError string `json:"status_error,omitempty"` // reading the outbox failed
}

// Status reports the backlog, its oldest age, the last success and the
// last error.
func (x *Exporter) Status(ctx context.Context) Status {
	s := Status{Enabled: true, Payloads: x.o.Payloads, Cap: x.o.Cap}
	st, err := x.o.Outbox.TelemetryOutbox(ctx)
	if err != nil {
		s.StatusError = err.Error()
	} else {
		s.Backlog, s.Dropped = st.Backlog, st.Dropped
		if !st.Oldest.IsZero() {
			s.OldestUnexportedAgeS = max(time.Since(st.Oldest).Seconds(), 0)
		}
	}
	s.Health, s.Exported = x.health()
	return s
}
