package telemetry

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// The OTLP lane (Traces) sends every finished run as one trace to an
// OTLP/HTTP receiver with the official OpenTelemetry SDK (its tracer
// provider, batching processor and OTLP exporter; the HTTP transport under
// it is otlpHTTP).
//
// It reads the durable events table, never the engine: after a cursor kept
// in the database (store.TraceOutbox.Traced) it looks for run.finished
// events, reads that run's events and builds its span tree with the
// recorded timestamps, then hands the spans to a batching span processor.
// A step of a run never waits on it. Trace and span ids are derived from
// the run id, turn number and tool-call id, so a batch sent again after a
// failure or a restart carries the same ids and the receiver can
// deduplicate. The cursor moves only after the processor flushed the batch
// with no failed export, so delivery is at-least-once, as on the NDJSON
// lane, with the same backoff after a failure.
//
// Attributes come from the NDJSON lane's records (shaper.record): the same
// allowlist, the same DELTA_CAPTURE_PAYLOADS consent for tool arguments,
// results and error text, the same vault and credential-pattern scrubbing.

// DefaultTraceRuns is how many finished runs one flush round traces.
const DefaultTraceRuns = 100

// TraceStore is the durable side of the OTLP lane (*store.Store).
type TraceStore interface {
	TraceOutbox(ctx context.Context) (store.TraceOutbox, error)
	Events(ctx context.Context, f store.EventFilter) ([]event.Event, error)
	MarkTraced(ctx context.Context, id int64) error
}

// TracesOptions configure the OTLP lane. URL and Store are required; every
// exporter setting is passed here, from internal/config.
type TracesOptions struct {
	URL         string            // the OTLP/HTTP traces URL (…/v1/traces)
	Headers     map[string]string // sent with every request
	ServiceName string            // resource service.name
	Resource    map[string]string // further resource attributes
	Gzip        bool              // compress request bodies
	AgentID     string            // gen_ai.agent.id; the agent name when set
	Payloads    bool              // DELTA_CAPTURE_PAYLOADS
	Redact      func(string) string
	Store       TraceStore
	TLS         OTLPTLS      // CA and client certificate files
	Client      *http.Client // nil = one of its own, with TLS
	Interval    time.Duration
	Runs        int           // finished runs per flush round
	Timeout     time.Duration // one export request
	MaxBackoff  time.Duration
	Logger      *slog.Logger
}

// Traces exports finished runs as traces until Close.
type Traces struct {
	o        TracesOptions
	shaper   shaper
	endpoint string // scheme://host[:port] of the URL: no credentials, path or query
	mark     int64
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	rec      *recorder
	lane     // the loop, and the runs traced since start
}

// NewTraces builds the OTLP/HTTP exporter, the batching span processor and
// the tracer provider, and reads the lane's cursor.
//
// The SDK also reads OTEL_* variables itself for whatever is not passed
// explicitly (the OTEL_BSP_* and span limit variables, and
// OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME again for the resource):
// every value delta documents is passed here and wins.
func NewTraces(ctx context.Context, o TracesOptions) (*Traces, error) {
	if o.Runs <= 0 {
		o.Runs = DefaultTraceRuns
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("otlp traces: want an absolute http or https URL")
	}
	st, err := o.Store.TraceOutbox(ctx)
	if err != nil {
		return nil, err
	}
	client, err := newOTLPHTTP(o)
	if err != nil {
		return nil, err
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("otlp traces exporter: %w", err)
	}
	attrs := make([]attribute.KeyValue, 0, len(o.Resource)+2)
	for k, v := range o.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	attrs = append(attrs, semconv.ServiceName(o.ServiceName), semconv.ServiceInstanceID(st.DaemonID))
	rec := &recorder{next: exp}
	// Blocking: a flush round hands the processor more spans than its
	// queue holds; the round waits (it runs off the step path) instead of
	// dropping them.
	bsp := sdktrace.NewBatchSpanProcessor(rec, sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(4096),
		sdktrace.WithMaxExportBatchSize(512), sdktrace.WithBatchTimeout(time.Second), sdktrace.WithExportTimeout(2*o.Timeout))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bsp), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithIDGenerator(fixedIDs{}), sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)))
	t := &Traces{
		o: o, shaper: shaper{daemonID: st.DaemonID, agentID: o.AgentID, payloads: o.Payloads, redact: o.Redact},
		endpoint: u.Scheme + "://" + u.Host, mark: st.Traced, tp: tp, rec: rec,
		tracer: tp.Tracer("github.com/deltaharness/delta/internal/telemetry"),
	}
	t.lane = newLane(o.Interval, o.MaxBackoff, o.Logger, "otlp trace export", t.clean)
	return t, nil
}

// Endpoint is the receiver's scheme and host, safe to show.
func (t *Traces) Endpoint() string { return t.endpoint }

// Start runs the export loop in the background until Close.
func (t *Traces) Start(ctx context.Context) { t.start(ctx, t.Flush) }

// Close stops the loop, then shuts the provider down within a few
// seconds; spans of runs not yet marked are sent again by the next start.
func (t *Traces) Close(ctx context.Context) error {
	t.stop()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := t.tp.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("otlp traces shutdown: %w", err)
	}
	return nil
}

// clean makes an export error safe to show: the SDK names the full URL
// (whose query could carry a credential) and echoes the receiver's body.
func (t *Traces) clean(err error) string {
	s := strings.ReplaceAll(err.Error(), t.o.URL, t.endpoint)
	return clip.Runes(scrub(s, t.o.Redact), 300)
}

// Flush traces every finished run after the cursor, a round of Runs at a
// time, and moves the cursor after each round the receiver took whole.
func (t *Traces) Flush(ctx context.Context) error {
	for ctx.Err() == nil {
		ends, err := t.o.Store.Events(ctx, store.EventFilter{Since: t.mark, Name: event.RunFinished, Limit: t.o.Runs})
		if err != nil || len(ends) == 0 {
			return err
		}
		failed := t.rec.failedCount()
		for _, end := range ends {
			evs, err := t.runEvents(ctx, end)
			if err != nil {
				return err
			}
			t.emit(buildRun(t.shaper, evs))
		}
		fctx, cancel := context.WithTimeout(ctx, 4*t.o.Timeout)
		err = t.tp.ForceFlush(fctx)
		cancel()
		if err == nil {
			err = t.rec.failedSince(failed)
		}
		if err != nil {
			return fmt.Errorf("export traces: %w", err)
		}
		last := ends[len(ends)-1].ID
		if err := t.o.Store.MarkTraced(context.WithoutCancel(ctx), last); err != nil {
			return err
		}
		t.mark = last
		t.took(len(ends))
		if len(ends) < t.o.Runs {
			return nil
		}
	}
	return nil
}

// runEvents reads the run's events up to its run.finished.
func (t *Traces) runEvents(ctx context.Context, end event.Event) ([]event.Event, error) {
	const page = 500
	var out []event.Event
	since := int64(0)
	for {
		evs, err := t.o.Store.Events(ctx, store.EventFilter{RunID: end.RunID, Since: since, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("read events of run %s: %w", end.RunID, err)
		}
		for _, e := range evs {
			if e.ID > end.ID {
				return out, nil
			}
			out = append(out, e)
		}
		if len(evs) < page {
			return out, nil
		}
		since = evs[len(evs)-1].ID
	}
}

// TracesStatus is the OTLP lane's view for /v1/status.
type TracesStatus struct {
	Enabled       bool   `json:"enabled"`
	Endpoint      string `json:"endpoint,omitempty"` // scheme://host: no credentials, path or query
	Payloads      bool   `json:"capture_payloads"`
	PendingRuns   int64  `json:"pending_runs"`   // finished runs not yet traced
	ExportedRuns  int64  `json:"exported_runs"`  // since this process started
	ExportedSpans int64  `json:"exported_spans"` // since this process started
	Health
	StatusError string `json:"status_error,omitempty"`
}

// Status reports the lane's endpoint, backlog, counts and last error.
func (t *Traces) Status(ctx context.Context) TracesStatus {
	s := TracesStatus{Enabled: true, Endpoint: t.endpoint, Payloads: t.o.Payloads}
	if st, err := t.o.Store.TraceOutbox(ctx); err != nil {
		s.StatusError = err.Error()
	} else {
		s.PendingRuns = st.Pending
	}
	s.ExportedSpans = t.rec.exported()
	s.Health, s.ExportedRuns = t.health()
	return s
}

// recorder sits between the batching processor and the OTLP exporter: it
// counts exported spans and failed exports for the cursor and the status.
// It never returns the error to the processor, which would hand it to the
// process-wide OpenTelemetry error handler (a log line on stderr); the
// lane reports it instead.
type recorder struct {
	next sdktrace.SpanExporter

	mu      sync.Mutex
	spans   int64
	failed  int64
	lastErr error
}

func (r *recorder) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := r.next.ExportSpans(ctx, spans)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		r.lastErr = err
	} else {
		r.spans += int64(len(spans))
	}
	return nil
}

func (r *recorder) Shutdown(ctx context.Context) error { return r.next.Shutdown(ctx) }

func (r *recorder) failedCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// failedSince is the last export error when an export failed after the
// count was before.
func (r *recorder) failedSince(before int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed > before {
		return r.lastErr
	}
	return nil
}

func (r *recorder) exported() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans
}

// fixedIDs gives each span the ids its builder put in the context, so the
// same run always yields the same trace and span ids.
type fixedIDs struct{}

type idsKey struct{}

type spanIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func (fixedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(idsKey{}).(spanIDs); ok {
		return v.trace, v.span
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = crand.Read(tid[:])
	_, _ = crand.Read(sid[:])
	return tid, sid
}

func (f fixedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	_, sid := f.NewIDs(ctx)
	return sid
}
