package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deltaharness/delta/internal/event"
)

// Live events across the workers of one PostgreSQL database.
//
// Every transaction that inserts events notifies eventsChannel (insertEvent,
// delivered at commit), a run write with the id of its last event as the
// payload (commitEvents). Each worker's EventTail listens on it and, on each
// notification, on a nudge from its own process and on a slow backstop
// poll, reads every event with an id above the last one it handed on, in id
// order. It relies on the invariant the write lock gives (postgres.go):
// events commit in id order, so a reader paging by id never skips a row
// that commits later with a smaller id. The tail is then the one source of
// durable events for the worker's live streams: each arrives once, in the
// events table's order, whichever worker wrote it.
//
// Text and reasoning deltas are never stored: a worker sends its own on
// deltasChannel in batches tagged with its holder, and hands on those of the
// other workers. They are best-effort, as deltas are in one process.

const (
	eventsChannel = "delta_events"
	deltasChannel = "delta_deltas"
	// deltaPayloadMax keeps a notification under PostgreSQL's 8000-byte
	// payload limit with room for the envelope.
	deltaPayloadMax = 7000
	deltaQueue      = 4096
	tailPage        = 500
)

// TailBackstop is how often an EventTail reads the table with no
// notification: it covers notifications lost with a LISTEN connection.
const TailBackstop = 2 * time.Second

// EventTail follows the events table of a PostgreSQL database for one
// worker and carries its deltas to and from the other workers.
type EventTail struct {
	st      *Store
	dsn     string
	holder  string
	deliver func(event.Event)
	wanted  func() bool
	logger  *slog.Logger

	listener *pgListener
	nudge    chan struct{}
	// Deltas wait in queue (guarded by qmu) until the sender or a commit
	// of this worker's events takes them (ahead). Whoever takes deltas is
	// a carrier until its notification has committed; a commit or a
	// carrier waits, before it sends, for the carriers taken before it
	// whose deltas are of its runs or sessions. So the deltas queued
	// before a commit reach the other workers before that commit's
	// events (a run's last text is not overtaken by its run.finished),
	// and a run's deltas keep their order, while commits of other runs
	// go on side by side. relay guards carriers and the taking.
	qmu      sync.Mutex
	queue    []event.Event
	queued   chan struct{}
	relay    sync.Mutex
	carriers []*carrier
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	last     int64 // the last id handed on; owned by the reader goroutine after Open

	// top is the highest event id a notification named: that event and
	// every smaller id have committed (they commit in id order). unsure
	// is set by a notification naming none and by a lost connection: the
	// table may hold more, and skipIdle reads its newest id.
	top    atomic.Int64
	unsure atomic.Bool
}

// TailOptions configure an EventTail.
type TailOptions struct {
	// Holder names this worker in the deltas it sends, so it skips its own.
	Holder string
	// Deliver takes each event, from one goroutine per kind: durable
	// events in id order, other workers' deltas as they arrive.
	Deliver func(event.Event)
	// Wanted reports whether anyone follows live events now (nil: always).
	// While no one does, the tail skips over new rows instead of reading
	// them: a follower that subscribes later is owed only what commits
	// after it subscribed.
	Wanted func() bool
	Logger *slog.Logger
}

// NewEventTail returns a tail over st, a PostgreSQL store at dsn.
func NewEventTail(st *Store, dsn string, o TailOptions) *EventTail {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Deliver == nil {
		o.Deliver = func(event.Event) {}
	}
	t := &EventTail{st: st, dsn: dsn, holder: o.Holder, deliver: o.Deliver, wanted: o.Wanted, logger: o.Logger,
		nudge: make(chan struct{}, 1), queued: make(chan struct{}, 1)}
	// Both channels share the connection, so a batch of deltas sent before
	// a commit is handed on before the reader is told of the commit.
	t.listener = &pgListener{dsn: dsn, what: "event tail", channels: []string{eventsChannel, deltasChannel}, logger: o.Logger,
		on: func(n *pgconn.Notification) {
			if n.Channel == deltasChannel {
				t.received(n.Payload) // another worker's deltas, handed on at once
			} else {
				t.committed(n.Payload)
				t.Nudge()
			}
		},
		lost: func() {
			t.unsure.Store(true) // what was sent meanwhile is gone
			t.Nudge()
		},
	}
	return t
}

// Open listens, reads the table's newest id as the start (events committed
// before Open are not handed on), and starts the goroutines. The first
// connection failing is the error; later losses are retried.
func (t *EventTail) Open(ctx context.Context) error {
	if !t.st.pg {
		return errors.New("open event tail: the store is not on PostgreSQL")
	}
	conn, err := t.listener.connect(ctx)
	if err != nil {
		return err
	}
	// Listening first, then reading the start: an event committed in
	// between is above the start and its notification is not lost.
	if err := t.st.r.QueryRowContext(ctx, maxEventID).Scan(&t.last); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("open event tail: %w", err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel = cancel
	t.wg.Add(3)
	go func() { defer t.wg.Done(); t.listener.run(lctx, conn) }()
	go func() { defer t.wg.Done(); t.read(lctx) }()
	go func() { defer t.wg.Done(); t.send(lctx) }()
	t.st.relay.Store(t)
	return nil
}

// Close stops the tail and waits for its goroutines and connection.
func (t *EventTail) Close(ctx context.Context) error {
	if t.cancel == nil {
		return nil
	}
	t.st.relay.CompareAndSwap(t, nil)
	t.cancel()
	if err := waitGoroutines(ctx, &t.wg); err != nil {
		return fmt.Errorf("close event tail: %w", err)
	}
	return nil
}

// Nudge makes the tail read the table now, up to the highest id the
// notifications have named (everything, after a notification that named
// none or a lost connection).
func (t *EventTail) Nudge() {
	select {
	case t.nudge <- struct{}{}:
	default:
	}
}

// committed records an events notification: its payload is the id of the
// last event its transaction inserted, or empty when the writer did not
// name one.
func (t *EventTail) committed(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || id <= 0 {
		t.unsure.Store(true)
		return
	}
	for {
		cur := t.top.Load()
		if id <= cur || t.top.CompareAndSwap(cur, id) {
			return
		}
	}
}

// SendDelta queues an ephemeral event for the other workers. A full queue
// drops it (deltas are best-effort), never blocking the run.
func (t *EventTail) SendDelta(e event.Event) {
	t.qmu.Lock()
	full := len(t.queue) >= deltaQueue
	if !full {
		t.queue = append(t.queue, e)
	}
	t.qmu.Unlock()
	if full {
		t.logger.Debug("delta not relayed: queue full", event.KeyRun, e.RunID)
		return
	}
	select {
	case t.queued <- struct{}{}:
	default:
	}
}

// carrier is a taker of deltas whose notification has not committed yet.
type carrier struct {
	keys map[string]bool // the runs and sessions of its deltas (relayKeys)
	done chan struct{}   // closed once its notification committed or failed
}

// relayKeys adds to keys the run and the session of each event: what a
// commit's events and a carrier's deltas are ordered by.
func relayKeys(keys map[string]bool, evs []*event.Event) map[string]bool {
	for _, e := range evs {
		if keys == nil {
			keys = make(map[string]bool, 2*len(evs))
		}
		if e.RunID != "" {
			keys["r\x00"+e.RunID] = true
		}
		if e.SessionID != "" {
			keys["s\x00"+e.SessionID] = true
		}
	}
	return keys
}

// ahead takes the queued deltas for a transaction committing evs (none:
// the sender's own notification) and waits for the carriers taken before
// it that hold deltas of the same runs or sessions as evs or the taken
// deltas. It returns the deltas as notification payloads, to be sent
// ahead of evs in the same transaction, and done, which the caller calls
// once that transaction has committed or failed (it ends this taker's
// turn as a carrier). An ended ctx while waiting is the error; the taken
// deltas are then lost, as deltas are whenever their commit fails.
func (t *EventTail) ahead(ctx context.Context, evs []*event.Event) (payloads []string, done func(), err error) {
	t.relay.Lock()
	t.qmu.Lock()
	deltas := t.queue
	t.queue = nil
	t.qmu.Unlock()
	ptrs := make([]*event.Event, len(deltas))
	for i := range deltas {
		ptrs[i] = &deltas[i]
	}
	var c *carrier
	if len(deltas) > 0 {
		c = &carrier{keys: relayKeys(nil, ptrs), done: make(chan struct{})}
	}
	var wait []chan struct{}
	if len(t.carriers) > 0 {
		keys := relayKeys(nil, evs)
		if c != nil {
			keys = relayKeys(keys, ptrs)
		}
		for _, o := range t.carriers {
			for k := range o.keys {
				if keys[k] {
					wait = append(wait, o.done)
					break
				}
			}
		}
	}
	if c != nil {
		t.carriers = append(t.carriers, c)
	}
	t.relay.Unlock()
	done = func() {
		if c == nil {
			return
		}
		t.relay.Lock()
		for i, o := range t.carriers {
			if o == c {
				t.carriers = append(t.carriers[:i], t.carriers[i+1:]...)
				break
			}
		}
		t.relay.Unlock()
		close(c.done)
	}
	for _, w := range wait {
		select {
		case <-w:
		case <-ctx.Done():
			done()
			return nil, func() {}, ctx.Err()
		}
	}
	return t.payloads(deltas), done, nil
}

// payloads encodes deltas into notification payloads under PostgreSQL's
// limit, in order; a delta too large for any is dropped.
func (t *EventTail) payloads(evs []event.Event) []string {
	var payloads []string
	b := deltaBatch{Holder: t.holder}
	size := len(t.holder) + 16
	flush := func() {
		if len(b.Events) == 0 {
			return
		}
		if raw, err := json.Marshal(b); err == nil {
			payloads = append(payloads, string(raw))
		}
		b.Events, size = nil, len(t.holder)+16
	}
	for _, e := range evs {
		raw, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if len(t.holder)+16+len(raw)+1 > deltaPayloadMax {
			t.logger.Debug("delta not relayed: too large for a notification", event.KeyRun, e.RunID, "bytes", len(raw))
			continue
		}
		if size+len(raw)+1 > deltaPayloadMax {
			flush()
		}
		size += len(raw) + 1
		b.Events = append(b.Events, e)
	}
	flush()
	return payloads
}

// read hands on the events above the last one, page by page, on each
// nudge and each backstop tick.
func (t *EventTail) read(ctx context.Context) {
	tick := time.NewTicker(TailBackstop)
	defer tick.Stop()
	for {
		backstop := false
		select {
		case <-ctx.Done():
			return
		case <-t.nudge:
		case <-tick.C:
			backstop = true
		}
		if t.skipIdle(ctx, backstop) {
			continue
		}
		// Read only up to the highest id a notification named: the
		// deltas a transaction sent ahead of its events were handed on
		// before its notification was, so none of its events overtakes
		// them. A backstop tick, or a notification that named no id,
		// reads whatever the table holds.
		bound := t.top.Load()
		if backstop || t.unsure.Swap(false) {
			bound = math.MaxInt64
		}
		for ctx.Err() == nil && t.last < bound {
			evs, err := t.st.Events(ctx, EventFilter{Since: t.last, Limit: tailPage})
			if err != nil {
				if ctx.Err() == nil {
					t.logger.Warn("event tail read", "since", t.last, "err", err)
				}
				break // the next nudge or tick retries from the same id
			}
			for _, e := range evs {
				if e.ID > bound {
					break
				}
				t.deliver(e)
				t.last = e.ID
			}
			if len(evs) < tailPage {
				break
			}
		}
	}
}

const maxEventID = "SELECT COALESCE(MAX(id), 0) FROM events"

// skipIdle moves the cursor to the newest committed id it knows when no
// one follows, and reports whether it did. It knows the highest id the
// notifications named (top); it reads the table's newest id only when it
// may know less (a notification that named none, a lost connection) and
// on the backstop tick (read), so an idle worker does not query the table
// for every commit. Asked again after learning the newest id: a follower
// that subscribed before is served from the cursor as it was, one that
// subscribes after it is owed nothing at or below it (that id and every
// smaller one had committed before it was known).
func (t *EventTail) skipIdle(ctx context.Context, backstop bool) bool {
	if t.wanted == nil || t.wanted() {
		return false
	}
	top := t.top.Load()
	if backstop || t.unsure.Swap(false) {
		var newest int64
		if err := t.st.r.QueryRowContext(ctx, maxEventID).Scan(&newest); err != nil {
			t.unsure.Store(true)
			return false // read the rows instead
		}
		top = max(top, newest)
	}
	if t.wanted() {
		return false
	}
	t.last = max(t.last, top)
	return true
}

// deltaBatch is the payload of one deltas notification.
type deltaBatch struct {
	Holder string        `json:"h"`
	Events []event.Event `json:"e"`
}

func (t *EventTail) received(payload string) {
	var b deltaBatch
	if err := json.Unmarshal([]byte(payload), &b); err != nil {
		t.logger.Debug("event tail: unreadable delta notification", "err", err)
		return
	}
	if b.Holder == t.holder {
		return
	}
	for _, e := range b.Events {
		if e.Ephemeral() { // only deltas travel this way
			t.deliver(e)
		}
	}
}

// send relays queued deltas: whatever queued while the previous
// notification was on its way goes in the next one, so a token stream
// costs a round trip per batch, not per delta. A commit of this worker's
// events takes what is queued at that moment into its own transaction
// instead (ahead).
func (t *EventTail) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.queued:
		}
		// The connection first, then the deltas, as a commit takes them: a
		// carrier waiting for the pool would hold up the commits that hold
		// the pool's connections and wait for it.
		conn, err := t.st.w.Conn(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.logger.Debug("deltas not relayed", "err", err)
			}
			continue // the queue keeps them for the next signal or commit
		}
		payloads, done, err := t.ahead(ctx, nil)
		if err == nil {
			for _, payload := range payloads {
				if _, err := conn.ExecContext(ctx, "SELECT pg_notify('"+deltasChannel+"', ?)", payload); err != nil && ctx.Err() == nil {
					t.logger.Debug("deltas not relayed", "err", err)
				}
			}
			done()
		}
		_ = conn.Close() // back to the pool
	}
}
