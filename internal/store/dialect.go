package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL dialect.
//
// The store's statements are written once, in SQLite's SQL. On PostgreSQL
// every statement passes through pgSQL on its way to the server, which
// rewrites the few places where the two languages differ, once per
// distinct statement text (the result is cached):
//
//   - `?` and `?N` placeholders become `$n`;
//   - `INSERT OR IGNORE` becomes `INSERT … ON CONFLICT DO NOTHING`;
//   - `LIMIT -1` (no limit) becomes `LIMIT ALL`;
//   - an INSERT into a table with an integer key gets `RETURNING <key>`,
//     so sql.Result.LastInsertId works as it does on SQLite (PostgreSQL's
//     wire protocol has no last-insert id).
//
// The rest is kept equal by the PostgreSQL schema itself (pgmigrations/):
// integers are BIGINT, reals DOUBLE PRECISION, blobs BYTEA; the SQLite
// scalar functions the statements use (two-argument max and min, instr)
// exist as SQL functions; and the tables that SQLite orders by their
// implicit rowid have a rowid identity column. Booleans travel as 0 and 1
// (pgConn.CheckNamedValue), because the columns are integers on both
// backends.

// pgStatement is one statement as PostgreSQL runs it.
type pgStatement struct {
	sql string
	// returning is set when sql ends in the RETURNING clause pgSQL added:
	// an Exec of it reads the returned keys for LastInsertId.
	returning bool
}

// pgCache holds the rewritten statements by their SQLite text. The store's
// statements are fixed text, so it stays small.
var pgCache sync.Map // string → pgStatement

// pgKeys are the tables whose integer key LastInsertId reports, with the
// key's column.
var pgKeys = map[string]string{
	"runs": "seq", "messages": "id", "events": "id", "self_revisions": "id",
	"calls": "id", "compactions": "id", "memories": "id", "promotion_outbox": "id",
}

var (
	pgInsertRe = regexp.MustCompile(`(?is)^\s*INSERT\s+(OR\s+IGNORE\s+)?INTO\s+([A-Za-z_][A-Za-z0-9_]*)`)
	pgLimitRe  = regexp.MustCompile(`(?i)\bLIMIT\s+-1\b`)
	pgRetRe    = regexp.MustCompile(`(?i)\bRETURNING\b`)
)

// pgSQL rewrites one SQLite statement for PostgreSQL.
func pgSQL(query string) pgStatement {
	if st, ok := pgCache.Load(query); ok {
		return st.(pgStatement)
	}
	st := pgStatement{sql: pgPlaceholders(query)}
	st.sql = pgLimitRe.ReplaceAllString(st.sql, "LIMIT ALL")
	if m := pgInsertRe.FindStringSubmatchIndex(st.sql); m != nil {
		ignore := m[2] >= 0
		table := strings.ToLower(st.sql[m[4]:m[5]])
		if ignore {
			st.sql = st.sql[:m[0]] + "INSERT INTO " + st.sql[m[4]:]
			st.sql = strings.TrimRight(st.sql, " \t\n;") + " ON CONFLICT DO NOTHING"
		}
		if key, ok := pgKeys[table]; ok && !pgRetRe.MatchString(st.sql) {
			st.sql = strings.TrimRight(st.sql, " \t\n;") + " RETURNING " + key
			st.returning = true
		}
	}
	pgCache.Store(query, st)
	return st
}

// pgPlaceholders turns `?` into `$1`, `$2`, … in order and `?N` into `$N`,
// leaving string literals, quoted identifiers and comments alone.
func pgPlaceholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // doubled quote inside
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				j = len(q) - 1
			}
			b.WriteString(q[i : j+1])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i - 1
			}
			b.WriteString(q[i : i+j+1])
			i += j
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// pgConnector opens pgx connections that speak the store's SQL (pgConn).
type pgConnector struct{ c driver.Connector }

func (p pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := p.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: c.(*stdlib.Conn)}, nil
}

func (p pgConnector) Driver() driver.Driver { return p.c.Driver() }

// pgConn is a pgx database/sql connection that rewrites every statement
// with pgSQL and sends booleans as the integers the schema stores.
//
// Inside a groupTx transaction (a pgOwnTx) it holds the writes made with
// pgLaterKey in their context (execLater) instead of sending each in a
// round trip of its own: they go, in order, ahead of the transaction's
// next statement in a round trip of their own, or, when none follows, in
// the pipeline that commits (commitEvents, pgOwnTx.Commit). A held
// write's error is that of the round trip that sends it.
type pgConn struct {
	*stdlib.Conn
	own   bool      // a pgOwnTx is open on this connection
	later []pgLater // the writes it holds
}

// pgLater is one held write, rewritten, with its arguments.
type pgLater struct {
	sql  string
	args []any
}

// pgLaterKey in a write's context lets the connection hold it (pgConn).
type pgLaterKey struct{}

// flushLater sends the held writes, if any, in one round trip.
func (c *pgConn) flushLater(ctx context.Context) error {
	if len(c.later) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	queueLater(b, c.takeLater())
	br := c.Conn.Conn().SendBatch(ctx, b)
	err := execLater(br, b.Len())
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// takeLater returns the held writes and holds none.
func (c *pgConn) takeLater() []pgLater {
	l := c.later
	c.later = nil
	return l
}

// queueLater adds held writes to a pipeline.
func queueLater(b *pgx.Batch, later []pgLater) {
	for _, w := range later {
		b.Queue(w.sql, w.args...)
	}
}

// execLater reads the results of the first n statements of a pipeline,
// held writes.
func execLater(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("held write: %w", err)
		}
	}
	return nil
}

// ResetSession drops what a transaction left held (none is, once its
// Commit or Rollback ran) before the pool hands the connection on.
func (c *pgConn) ResetSession(ctx context.Context) error {
	c.own, c.later = false, nil
	return c.Conn.ResetSession(ctx)
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	if err := c.flushLater(context.Background()); err != nil {
		return nil, err
	}
	return c.Conn.PrepareContext(context.Background(), pgSQL(query).sql)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.flushLater(ctx); err != nil {
		return nil, err
	}
	return c.Conn.PrepareContext(ctx, pgSQL(query).sql)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.flushLater(ctx); err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(ctx, pgSQL(query).sql, args)
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st := pgSQL(query)
	if c.own && ctx.Value(pgLaterKey{}) != nil {
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = a.Value
		}
		c.later = append(c.later, pgLater{sql: st.sql, args: vals})
		return driver.ResultNoRows, nil // its caller reads no result
	}
	if err := c.flushLater(ctx); err != nil {
		return nil, err
	}
	if !st.returning {
		return c.Conn.ExecContext(ctx, st.sql, args)
	}
	rows, err := c.Conn.QueryContext(ctx, st.sql, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var res pgResult
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		res.n++
		if id, ok := dest[0].(int64); ok {
			res.id = id
		}
	}
	return res, nil
}

// pgOpen is one groupTx transaction that the store opens and may end
// itself (pgSharedTx): BeginTx with it in the context opens the
// transaction in one pipeline and reads the lease guard's row there, and
// its Commit sends nothing once the store's own pipeline has committed.
type pgOpen struct {
	guard *leaseGuard // the lease to read FOR SHARE, if any
	// runID is the run whose row to lock FOR NO KEY UPDATE and read after
	// the lease (groupRunTx); run is what the read found, runErr
	// ErrNotFound when there is no such run.
	runID  string
	run    Run
	runErr error
	// What the read found.
	found  bool
	holder string
	exp    int64
	// ended is set when the transaction was committed by a pipeline (read
	// by database/sql's rollback on a cancelled context, too).
	ended atomic.Bool
}

type pgOpenKey struct{}

// BeginTx opens a transaction. Under a pgOpen (pgSharedTx) it sends BEGIN,
// the write lock shared, the lease guard's read and the run row's lock and
// read (groupRunTx) in one pipeline: one round trip where a plain BEGIN
// and three statements take four.
func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	o, ok := ctx.Value(pgOpenKey{}).(*pgOpen)
	if !ok || opts.Isolation != 0 || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts)
	}
	pc := c.Conn.Conn()
	if err := o.begin(ctx, pc); err != nil {
		if pc.PgConn().TxStatus() != 'I' {
			_, _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return nil, err
	}
	c.own, c.later = true, nil
	return &pgOwnTx{ctx: ctx, conn: pc, c: c, o: o}, nil
}

func (o *pgOpen) begin(ctx context.Context, c *pgx.Conn) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock_shared($1)", pgWriteLock)
	if o.guard != nil {
		b.Queue("SELECT holder, expires_at FROM session_leases WHERE session_id = $1 FOR SHARE", pgText(o.guard.sessionID))
	}
	if o.runID != "" {
		b.Queue("SELECT "+pgRunCols+" FROM runs WHERE id = $1 FOR NO KEY UPDATE", pgText(o.runID))
	}
	br := c.SendBatch(ctx, b)
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("write lock: %w", err)
		}
		if o.guard != nil {
			err := br.QueryRow().Scan(&o.holder, &o.exp)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return fmt.Errorf("read lease of session %s: %w", o.guard.sessionID, err)
			default:
				o.found = true
			}
		}
		if o.runID == "" {
			return nil
		}
		r, err := scanRun(br.QueryRow())
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			o.runErr = fmt.Errorf("run %s: %w", o.runID, ErrNotFound)
		case err != nil:
			return fmt.Errorf("lock run %s: %w", o.runID, err)
		default:
			o.run = r
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// pgOwnTx is the driver's handle of a pgOpen transaction.
type pgOwnTx struct {
	ctx  context.Context
	conn *pgx.Conn
	c    *pgConn
	o    *pgOpen
}

// Commit sends the held writes, if any, and COMMIT in one pipeline.
func (t *pgOwnTx) Commit() error {
	later := t.c.takeLater()
	t.c.own = false
	if t.o.ended.Load() {
		return nil
	}
	b := &pgx.Batch{}
	queueLater(b, later)
	b.Queue("COMMIT")
	br := t.conn.SendBatch(t.ctx, b)
	err := func() error {
		if err := execLater(br, len(later)); err != nil {
			return err
		}
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("commit: the server answered %s", tag)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && t.conn.PgConn().TxStatus() != 'I' {
		// A held write failed: the transaction is aborted, not ended.
		_, _ = t.conn.Exec(context.WithoutCancel(t.ctx), "ROLLBACK")
	}
	return err
}

func (t *pgOwnTx) Rollback() error {
	t.c.later, t.c.own = nil, false
	if t.o.ended.Load() {
		return nil
	}
	_, err := t.conn.Exec(context.WithoutCancel(t.ctx), "ROLLBACK")
	return err
}

// CheckNamedValue sends a bool as 0 or 1: the schema's flags are integers,
// as on SQLite, so the same scans and comparisons work on both backends.
// A string PostgreSQL's text type cannot hold (a NUL byte, or bytes that
// are not UTF-8, as a tool's output of a binary file may be) has those
// bytes replaced with U+FFFD, where SQLite would keep them verbatim:
// refusing the statement would fail the checkpoint and with it the run.
func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		if v {
			nv.Value = int64(1)
		} else {
			nv.Value = int64(0)
		}
	case string:
		nv.Value = pgText(v)
	}
	return c.Conn.CheckNamedValue(nv)
}

// pgText is v as PostgreSQL's text type holds it: a NUL byte and bytes
// that are not UTF-8 become U+FFFD (see CheckNamedValue).
func pgText(v string) string {
	if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
		return strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "\uFFFD")
	}
	return v
}

// uniqueViolation reports whether err is a unique constraint's refusal, on
// either backend.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// pgResult is the result of an INSERT that returned its keys.
type pgResult struct{ id, n int64 }

func (r pgResult) LastInsertId() (int64, error) { return r.id, nil }
func (r pgResult) RowsAffected() (int64, error) { return r.n, nil }
