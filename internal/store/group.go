package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit.
//
// A run's step writes one transaction, and the database has one writer, so
// with many runs in flight their transactions queue for it and each commit
// writes its own WAL frames for the same few pages (the tail of messages,
// events, the journal and their indexes). groupTx lets the transactions that
// arrive while another is committing share the next one: the caller that
// finds the writer idle leads; callers arriving meanwhile queue; when the
// leader's transaction ends, the first queued caller leads the next batch,
// made of everything queued by then. Each member runs inside its own
// SAVEPOINT, so a member whose work fails is rolled back alone and gets its
// own error, as it would from a transaction of its own; the others commit.
// No caller returns before the commit that holds its work: durability is
// exactly that of one transaction per caller. A caller alone runs a plain
// transaction, as tx does, with nothing added.
//
// Inside a groupTx transaction a write statement runs with its caller's
// cancellation detached (exec, scanRow): SQLite rolls back the whole
// transaction when a write statement inside it is interrupted, which would
// undo the other members' work. A member whose context has ended before its
// turn is skipped with that error; a caller alone still has its transaction
// rolled back when its context ends before the commit. (Detached statements
// also spare the driver a watcher goroutine per statement.)

// maxGroup bounds the members of one shared transaction.
const maxGroup = 64

type writeReq struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	err  error
	wake chan bool // true: lead the next batch; false: the batch holding this request has ended
}

// writeGroup queues the callers of groupTx while a batch is being written.
type writeGroup struct {
	mu    sync.Mutex
	queue []*writeReq
	busy  bool                   // a leader is writing a batch; busy == false implies an empty queue
	batch atomic.Pointer[sql.Tx] // the groupTx transaction being written, if any
}

// groupTx runs fn in an immediate write transaction that it may share with
// other callers' (see above).
func (s *Store) groupTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.pg {
		// PostgreSQL has writers of its own, side by side under the
		// store's write lock held shared (postgres.go): each caller keeps
		// its transaction.
		return s.pgTx(ctx, pgShared, fn)
	}
	r := &writeReq{ctx: ctx, fn: s.guarded(ctx, fn), wake: make(chan bool, 1)}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, r)
	if g.busy {
		g.mu.Unlock()
		if lead := <-r.wake; !lead {
			return r.err
		}
		g.mu.Lock()
	}
	g.busy = true
	n := min(len(g.queue), maxGroup)
	batch := make([]*writeReq, n)
	copy(batch, g.queue) // r is batch[0]: it was alone or first in line
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()

	s.writeBatch(batch)
	s.committed()
	// The writer connection is free again: prepare what ran unprepared.
	s.wstmts.prepareWanted(context.WithoutCancel(ctx), s.w)

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].wake <- true
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	for _, m := range batch[1:] {
		m.wake <- false
	}
	return r.err
}

// writeBatch writes batch in one transaction and sets each member's err.
func (s *Store) writeBatch(batch []*writeReq) {
	if len(batch) == 1 {
		r := batch[0]
		r.err = s.soloTx(r.ctx, r.fn)
		return
	}
	// The shared transaction belongs to no one caller: it must not end
	// when one of them is cancelled.
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	s.group.batch.Store(tx)
	defer s.group.batch.Store(nil)
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		if _, err := s.exec(ctx, tx, "SAVEPOINT member"); err != nil {
			abort(tx, batch, err)
			return
		}
		if r.err = runMember(r.fn, tx); r.err != nil {
			if _, err := s.exec(ctx, tx, "ROLLBACK TO member"); err != nil {
				abort(tx, batch, err)
				return
			}
		}
		if _, err := s.exec(ctx, tx, "RELEASE member"); err != nil {
			abort(tx, batch, err)
			return
		}
	}
	s.indexIfDue(ctx, tx)
	if err := tx.Commit(); err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
}

// abort rolls a shared transaction back after it failed as a whole: the
// members done so far lose their work, the rest never run; each that has
// no error of its own gets err.
func abort(tx *sql.Tx, batch []*writeReq, err error) {
	_ = tx.Rollback() // err is the one to report; nothing of the batch is committed either way
	err = fmt.Errorf("shared write transaction: %w", err)
	for _, r := range batch {
		if r.err == nil {
			r.err = err
		}
	}
}

// soloTx is txOn for a caller alone: one transaction of its own, begun on
// its context (a cancel before the commit rolls it back), its write
// statements detached like a shared transaction's.
func (s *Store) soloTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	s.group.batch.Store(tx)
	err = runMember(fn, tx)
	if err == nil {
		s.indexIfDue(ctx, tx)
	}
	s.group.batch.Store(nil)
	if err != nil {
		_ = tx.Rollback() // fn's error is the one to report; a failed rollback leaves nothing committed
		return err
	}
	return tx.Commit()
}

// runMember runs one caller's work, turning a panic into its error so the
// batch, the leadership hand-off and every caller waiting on them still end.
func runMember(fn func(*sql.Tx) error, tx *sql.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// detach is ctx without its cancellation while tx is groupTx's.
func (s *Store) detach(ctx context.Context, tx *sql.Tx) context.Context {
	if s.group.batch.Load() == tx {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// groupRunTx is groupTx for a write path that begins by locking run id's
// row and reading it (lockRun): fn gets the run as locked. On PostgreSQL
// the read travels in the pipeline that opens the transaction, after the
// lease guard's (the lock order of postgres.go), one round trip fewer.
func (s *Store) groupRunTx(ctx context.Context, id string, fn func(*sql.Tx, Run) error) error {
	if !s.pg {
		return s.groupTx(ctx, func(tx *sql.Tx) error {
			r, err := s.lockRun(ctx, tx, id)
			if err != nil {
				return err
			}
			return fn(tx, r)
		})
	}
	o := &pgOpen{runID: id}
	return s.pgSharedTxOpen(ctx, o, func(tx *sql.Tx) error {
		if o.runErr != nil {
			return o.runErr
		}
		return fn(tx, o.run)
	})
}
