package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL backend: the same Store over a PostgreSQL database,
// selected by a postgres:// or postgresql:// URL. One pool serves reads and
// writes. The statements are the SQLite ones, rewritten by the dialect
// (dialect.go); the schema is pgmigrations/, numbered as migrations/.
//
// SQLite has one writer at a time, and the store relies on it: a write
// transaction reads, decides and writes with nothing in between, and event
// ids commit in increasing order, so a reader paging events by id never
// skips one that commits later with a smaller id. On PostgreSQL several
// workers write at once, and the store keeps both guarantees with two
// transaction-scoped advisory locks:
//
//   - the write lock (pgWriteLock). The write paths of a run's life
//     (CreateRun, Start, the step and tool-result checkpoints, Finish,
//     AddEvents: groupTx) hold it shared, so they run side by side; each
//     of them makes its read-decide-write safe with row locks of its own
//     (the run's row locked FOR NO KEY UPDATE before its status is read,
//     conditional UPDATEs, an advisory lock per idempotency key). Every
//     other write transaction (tx) holds it exclusive and so still runs
//     alone, as on SQLite.
//   - the event-ordering lock (pgEventLock). A transaction holding the
//     write lock shared holds its events back (insertEvent) and, when fn
//     is done, sends the server one pipeline: take this lock, insert the
//     events (drawing their ids), commit (pgSharedTx). The invariant:
//     event ids commit in increasing order. Proof: every transaction that
//     inserts an event holds, from before its first id is drawn until it
//     commits or rolls back, either the write lock exclusive or the event
//     lock; two such transactions therefore never overlap in that span,
//     and the one that draws its ids first has ended before the other
//     draws any. When a reader sees an event committed, every smaller id
//     was drawn by a transaction that had already ended: committed (and
//     visible to that reader's snapshot) or rolled back (never visible).
//     The events identity sequence caches one value (the default), so
//     ids are drawn in the order the inserts run. The lock is held for
//     the server's work on the pipeline only, no round trip to a worker,
//     so the run writes of different workers serialize on a few inserts,
//     not on whole transactions. TestEventIDsCommitInOrderAcrossStores
//     pages events by id during concurrent writes of two store handles
//     and fails when the lock is left out.
//
// Lock order, so transactions do not wait on each other in a cycle: the
// write lock, the session lease row (the lease guard, FOR SHARE), the rows
// a write path locks, the event lock. A claim takes no advisory lock; it
// locks candidate runs and their existing lease rows SKIP LOCKED and
// inserts missing leases ON CONFLICT DO NOTHING (claimRunsPG), so it waits
// on no run write, only, briefly, on another claim inserting the same
// lease; and claims lock disjoint runs.

//go:embed pgmigrations/*.sql
var pgMigrationFS embed.FS

func pgMigrations() ([]migration, error) { return migrationsIn(pgMigrationFS, "pgmigrations") }

// Advisory lock keys (an arbitrary constant namespace, "delta" in ASCII).
const (
	pgWriteLock   int64 = 0x64656c7461_01 // held by every write transaction: exclusive by tx, shared by groupTx
	pgMigrateLock int64 = 0x64656c7461_02 // held while migrating
	pgEventLock   int64 = 0x64656c7461_03 // held by a groupTx transaction's closing pipeline: its events and its commit
)

// pgPoolSize bounds a worker's connections unless the URL's
// pool_max_conns says otherwise (pgPoolParam). A run in flight holds one
// only for a statement or a transaction, not across its model call, so a
// pool well below DELTA_MAX_CONCURRENCY serves it; too small a pool queues
// the runs' checkpoints behind each other inside the worker.
const pgPoolSize = 24

// pgPoolParam is pgx's standard URL parameter for the pool's size
// (pgxpool reads it the same way). It is the pool's, not a server
// setting: it is taken out of the URL before connecting, since the server
// would refuse it as an unknown run-time parameter.
const pgPoolParam = "pool_max_conns"

// pgPoolMax bounds pool_max_conns: far above any worker's need, below a
// value that is surely a typo.
const pgPoolMax = 10000

// pgPoolConfig returns dsn without pool_max_conns and the pool size it
// asks for (pgPoolSize when absent). A value that is not a whole number
// from 1 to pgPoolMax is an error naming the parameter.
func pgPoolConfig(dsn string) (string, int, error) {
	base, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return dsn, pgPoolSize, nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return "", 0, fmt.Errorf("parse the URL's query: %w", err)
	}
	vs, ok := vals[pgPoolParam]
	if !ok {
		return dsn, pgPoolSize, nil
	}
	if len(vs) != 1 {
		return "", 0, fmt.Errorf("%s is given %d times; give it once", pgPoolParam, len(vs))
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < 1 || n > pgPoolMax {
		return "", 0, fmt.Errorf("%s=%q: want a whole number of connections from 1 to %d", pgPoolParam, vs[0], pgPoolMax)
	}
	vals.Del(pgPoolParam)
	if len(vals) == 0 {
		return base, n, nil
	}
	return base + "?" + vals.Encode(), n, nil
}

// pgConnDSN is dsn as a single connection takes it: without the pool's
// parameter (a listener's connection is not the pool's). Open has refused
// a dsn it cannot read.
func pgConnDSN(dsn string) string {
	clean, _, err := pgPoolConfig(dsn)
	if err != nil {
		return dsn
	}
	return clean
}

// IsPostgresURL reports whether dsn names a PostgreSQL database rather
// than a SQLite file.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redactURL is dsn without its password, for logs and error messages:
// the userinfo's, and the password and sslpassword query parameters, which
// pgx reads as libpq does (postgres://user@host/db?password=…).
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	u.RawQuery = queryPassword.ReplaceAllString(u.RawQuery, "${1}${2}=xxxxx")
	return u.Redacted()
}

// queryPassword matches a password parameter of a URL's raw query.
var queryPassword = regexp.MustCompile(`(^|&)(password|sslpassword)=[^&]*`)

// openPostgres opens and migrates the PostgreSQL database at dsn.
func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	name := redactURL(dsn)
	dsn, pool, err := pgPoolConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	if err := migratePG(ctx, cfg, name); err != nil {
		return nil, err
	}
	db := sql.OpenDB(pgConnector{c: stdlib.GetConnector(*cfg)})
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	s := &Store{w: db, r: db, path: name, pg: true}
	s.wstmts.off, s.rstmts.off = true, true // pgx prepares and caches per connection itself
	return s, nil
}

// migratePG applies the PostgreSQL migrations newer than the database's
// recorded schema version, each in its own transaction, under an advisory
// lock so workers starting together migrate once; it refuses a database a
// newer binary has migrated further. The version lives in delta_schema, a
// one-row table outside the numbered migrations (PostgreSQL has no
// PRAGMA user_version).
func migratePG(ctx context.Context, cfg *pgx.ConnConfig, name string) error {
	ms, err := pgMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open store %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", pgMigrateLock); err != nil {
		return fmt.Errorf("open store %s: migration lock: %w", name, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", pgMigrateLock) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS delta_schema (
		id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("open store %s: schema table: %w", name, err)
	}
	var current int
	err = conn.QueryRow(ctx, "SELECT version FROM delta_schema WHERE id = 1").Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("open store %s: read schema version: %w", name, err)
	}
	pending, err := migrationsAfter(name, current, ms)
	if err != nil {
		return err
	}
	for _, m := range pending {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil { // no arguments: the simple protocol, several statements
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO delta_schema (id, version) VALUES (1, $1)
				ON CONFLICT (id) DO UPDATE SET version = excluded.version`, m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s to %s: %w", name, m.name, err)
		}
	}
	return nil
}

// schemaVersion reads the database's schema version inside tx.
func (s *Store) schemaVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var v int
	q := "PRAGMA user_version"
	if s.pg {
		q = "SELECT version FROM delta_schema WHERE id = 1"
	}
	err := tx.QueryRowContext(ctx, q).Scan(&v)
	return v, err
}

// Write-lock modes of pgTx.
const (
	pgExclusive = iota // alone: every write path that is not groupTx's
	pgShared           // beside the other run writes (groupTx)
	pgNoLock           // row locks alone: claims and leases, which write no event
)

// pgTx runs fn in a PostgreSQL write transaction holding the write lock in
// mode (see the top of this file), after the session lease guard of ctx,
// if any (WithSessionLease).
func (s *Store) pgTx(ctx context.Context, mode int, fn func(*sql.Tx) error) error {
	if mode == pgShared {
		return s.pgSharedTx(ctx, fn)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	err = func() error {
		if mode == pgExclusive {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?), "+pgUnawaited, pgWriteLock); err != nil {
				return err
			}
		}
		if err := s.checkLease(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	}()
	if err != nil {
		_ = tx.Rollback() // fn's error is the one to report; a failed rollback leaves nothing committed
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if mode == pgExclusive {
		// Bounded by the server's flush, not by ctx: the write has
		// committed, and a caller told it failed might redo it.
		if err := s.awaitDurable(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}

// Committing without holding locks across the disk. A transaction's locks
// (the write lock, the event lock, the rows it wrote, and PostgreSQL's own
// NOTIFY lock, taken at commit by every transaction that notifies) are
// released only when its commit ends; with synchronous commit that is after
// its WAL reached the disk, so every writer waiting on one of them waits
// for someone else's disk flush, and the workers of a durable server commit
// about one run write per flush between them. So a write transaction that
// holds such locks commits with synchronous_commit off (pgUnawaited): its
// commit is visible and its locks are free as soon as its commit record is
// in the WAL. The writer then waits for durability holding nothing
// (pgAwaitDurable), and its caller hears of the write only then: an
// acknowledged write is on disk, as before.
//
// pgAwaitDurable is a transaction that writes one WAL record of its own (a
// logical-decoding message, which nothing reads) and commits with the
// server's synchronous_commit. PostgreSQL waits at commit only for a
// transaction that wrote WAL, and its flush (or standby confirmation) runs
// to its own commit record, which comes after every commit before it: the
// writer's, and every commit a read before it saw. The WAL is one
// sequence, so a write another worker makes after seeing this one is
// durable only after this one is; what others may see before the flush
// reaches clients through events only, and an events read waits the same
// way before it returns rows (Events). Concurrent waits meet in one flush
// (group commit).
const (
	pgUnawaited       = "set_config('synchronous_commit', 'off', true)"
	pgCommitUnawaited = "SELECT " + pgUnawaited
	pgAwaitDurable    = "SELECT pg_logical_emit_message(true, 'delta', '')"
)

// awaitDurable returns once every transaction committed on the server
// before it began is on disk (see pgAwaitDurable).
func (s *Store) awaitDurable(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, pgAwaitDurable); err != nil {
		return fmt.Errorf("wait for the disk: %w", err)
	}
	return nil
}

// pgPending is a groupTx transaction's events, held back by insertEvent
// until the transaction ends, whether the event tails are to be told
// (notifyEvents) and whether the idle workers are (notifyRuns).
type pgPending struct {
	later  []pgLater // the connection's held writes (execLater), sent first
	events []*event.Event
	deltas []string // delta notifications sent ahead of the events
	notify bool
	runs   bool
}

// pgSharedTx is pgTx for groupTx, with its round trips cut to what the
// statements of fn need: the transaction opens in one pipeline (BEGIN, the
// write lock shared, the lease guard's read and, for groupRunTx, the run's
// row locked and read: pgConn.BeginTx), and the
// events fn inserts are held back (insertEvent) and written at the end in
// one pipeline with the event-ordering lock and the commit. The server
// takes that lock, draws the events' ids, inserts them and commits with no
// round trip to this process in between, so the run writes of every
// worker serialize only on that work of the server's.
func (s *Store) pgSharedTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.pgSharedTxOpen(ctx, &pgOpen{}, fn)
}

// pgSharedTxOpen is pgSharedTx opening the transaction as o says (the run
// row to lock and read in the opening pipeline, if any).
func (s *Store) pgSharedTxOpen(ctx context.Context, o *pgOpen, fn func(*sql.Tx) error) error {
	if g, ok := ctx.Value(leaseGuardKey{}).(leaseGuard); ok {
		o.guard = &g
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithValue(ctx, pgOpenKey{}, o), nil)
	if err != nil {
		return err
	}
	p := &pgPending{}
	s.pgEvents.Store(tx, p)
	defer s.pgEvents.Delete(tx)
	err = func() error {
		if o.guard != nil {
			if err := o.guard.verdict(o.found, o.holder, o.exp); err != nil {
				return err
			}
		}
		return fn(tx)
	}()
	if err != nil {
		_ = tx.Rollback() // fn's error is the one to report; a failed rollback leaves nothing committed
		return err
	}
	if len(p.events) == 0 && !p.runs {
		return tx.Commit()
	}
	if t := s.relay.Load(); t != nil && len(p.events) > 0 {
		// The deltas this worker queued before these events travel in
		// their transaction, ahead of them: notifications of one
		// transaction arrive in the order sent, and before those of any
		// later commit, so no worker sees this commit before them. Deltas
		// of these runs taken earlier by another carrier are waited for
		// (ahead); commits of other runs are not.
		var done func()
		p.deltas, done, err = t.ahead(ctx, p.events)
		if err != nil {
			_ = tx.Rollback() // the wait's error is the one to report; nothing is committed
			return fmt.Errorf("relay deltas: %w", err)
		}
		defer done()
	}
	ids := make([]int64, len(p.events))
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*pgConn)
		if !ok {
			return fmt.Errorf("write events: connection %T is not the store's", dc)
		}
		p.later = c.takeLater()
		return commitEvents(ctx, c.Conn.Conn(), p, ids)
	})
	if err != nil {
		_ = tx.Rollback() // ends what the failed pipeline left open; nothing of it is committed
		return err
	}
	// The pipeline committed: Commit sends nothing and only releases the
	// handle (its error, a context ended since, changes nothing).
	o.ended.Store(true)
	_ = tx.Commit()
	for i, e := range p.events {
		e.ID = ids[i]
	}
	return nil
}

// pgInsertEvent is insertEvent's statement in PostgreSQL's SQL.
var pgInsertEvent = `INSERT INTO events (run_id, session_id, owner, task_id, turn, name, data, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`

// pgInsertEventNotify is pgInsertEvent for a transaction's last event when
// the event tails are to be told: the same statement notifies
// eventsChannel with the event's id as the payload, delivered at commit.
// Events commit in id order, so a tail that receives it knows every event
// up to that id has committed (EventTail.skipIdle).
var pgInsertEventNotify = `WITH e AS (` + pgInsertEvent + `)
	SELECT id, pg_notify('` + eventsChannel + `', id::text) IS NULL FROM e`

// commitEvents sends the event-ordering lock, the inserts of p's events,
// the notifications p asks for (delivered at the commit, as notifyEvents's
// and notifyRuns's), the commit (without waiting for the disk) and the
// wait for the disk (pgAwaitDurable) to the server in one pipeline, and
// reads the ids drawn into ids. An error before the commit leaves the
// transaction uncommitted; a failed wait after it is an error too, so no
// caller takes a write that may not be on disk as done.
func commitEvents(ctx context.Context, c *pgx.Conn, p *pgPending, ids []int64) error {
	// database/sql may have rolled the transaction back meanwhile (its
	// context ended): the events must not then commit on their own.
	if st := c.PgConn().TxStatus(); st != 'T' {
		return fmt.Errorf("write events: the transaction is no longer open (status %q)", st)
	}
	evs := p.events
	b := &pgx.Batch{}
	b.Queue(pgCommitUnawaited)
	queueLater(b, p.later)
	for _, d := range p.deltas {
		b.Queue("SELECT pg_notify('"+deltasChannel+"', $1)", d)
	}
	if len(evs) > 0 {
		b.Queue("SELECT pg_advisory_xact_lock($1)", pgEventLock)
	}
	for i, e := range evs {
		var data any
		if len(e.Data) > 0 {
			data = pgText(string(e.Data))
		}
		q := pgInsertEvent
		if p.notify && i == len(evs)-1 {
			q = pgInsertEventNotify
		}
		b.Queue(q, pgText(e.RunID), pgText(e.SessionID), pgText(e.Owner), pgText(e.TaskID), int64(e.Turn),
			pgText(e.Name), data, e.Time.UnixMilli())
	}
	if p.runs {
		b.Queue("SELECT pg_notify('" + runsChannel + "', '')")
	}
	b.Queue("COMMIT")
	b.Queue(pgAwaitDurable)
	br := c.SendBatch(ctx, b)
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("commit without waiting: %w", err)
		}
		if err := execLater(br, len(p.later)); err != nil {
			return err
		}
		for range p.deltas {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("relay deltas: %w", err)
			}
		}
		if len(evs) > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("event order lock: %w", err)
			}
		}
		for i, e := range evs {
			dest := []any{&ids[i]}
			if p.notify && i == len(evs)-1 {
				var null bool
				dest = append(dest, &null)
			}
			if err := br.QueryRow().Scan(dest...); err != nil {
				return fmt.Errorf("insert event %s: %w", e.Name, err)
			}
		}
		if p.runs {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("notify runs: %w", err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("commit: the server answered %s", tag)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("commit: wait for the disk: %w", err)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// deferNotify marks the event tails' notification of a groupTx
// transaction on PostgreSQL for its closing pipeline and reports whether
// it did.
func (s *Store) deferNotify(tx *sql.Tx) bool {
	v, ok := s.pgEvents.Load(tx)
	if !ok {
		return false
	}
	v.(*pgPending).notify = true
	return true
}

// deferNotifyRuns marks the idle workers' wake-up (notifyRuns) of a
// groupTx transaction on PostgreSQL for its closing pipeline and reports
// whether it did.
func (s *Store) deferNotifyRuns(tx *sql.Tx) bool {
	v, ok := s.pgEvents.Load(tx)
	if !ok {
		return false
	}
	v.(*pgPending).runs = true
	return true
}

// deferEvent holds e back when tx is a groupTx transaction on PostgreSQL
// (pgSharedTx writes it at the end) and reports whether it did.
func (s *Store) deferEvent(tx *sql.Tx, e *event.Event) bool {
	if !s.pg {
		return false
	}
	v, ok := s.pgEvents.Load(tx)
	if !ok {
		return false
	}
	p := v.(*pgPending)
	p.events = append(p.events, e)
	return true
}

// rowTx runs fn in a write transaction that relies on row locks alone: on
// PostgreSQL it does not take the store's write lock, so it must write no
// event (work claims and leases); on SQLite it is tx.
func (s *Store) rowTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if !s.pg {
		return s.tx(ctx, fn)
	}
	return s.pgTx(ctx, pgNoLock, fn)
}
