package store

import (
	"context"
	"database/sql"
	"sync"
)

// Prepared statements, cached by query text.
//
// The SQLite driver compiles a statement on every call that is not made
// through a prepared one, and an insert into a table with triggers (the
// messages' full-text index) compiles its triggers too: that was a fifth of
// a durable step's CPU. A write statement cannot be prepared on the single
// writer connection while a transaction holds it (the prepare would wait
// for the connection the transaction never releases), so a query seen
// inside a transaction is prepared after that transaction commits, and the
// transactions after it run it through Tx.StmtContext, which reuses the
// connection's compiled statement. Reads are prepared on the reader pool
// at first use.

// maxStmts bounds each cache: the store's statements are fixed text, so
// the bound only guards against a query built per call.
const maxStmts = 256

type stmtCache struct {
	off   bool // PostgreSQL: pgx caches prepared statements per connection itself
	mu    sync.Mutex
	ready map[string]*sql.Stmt
	want  map[string]bool // seen in a transaction, to prepare after it
}

// get returns query's prepared statement, or nil; a miss marks it wanted.
func (c *stmtCache) get(query string) *sql.Stmt {
	if c.off {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.ready[query]; st != nil {
		return st
	}
	if len(c.ready)+len(c.want) < maxStmts {
		if c.want == nil {
			c.want = map[string]bool{}
		}
		c.want[query] = true
	}
	return nil
}

// prepareWanted prepares the wanted statements on db. It must not be
// called while the caller holds one of db's connections.
func (c *stmtCache) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	var qs []string
	for q := range c.want {
		qs = append(qs, q)
	}
	clear(c.want)
	c.mu.Unlock()
	for _, q := range qs {
		st, err := db.PrepareContext(ctx, q) //nolint:sqlclosecheck // cached: close() closes it
		if err != nil {
			continue // the next transaction runs it unprepared and asks again
		}
		c.mu.Lock()
		if c.ready == nil {
			c.ready = map[string]*sql.Stmt{}
		}
		if old := c.ready[q]; old != nil {
			_ = old.Close()
		}
		c.ready[q] = st
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.ready {
		_ = st.Close()
	}
	clear(c.ready)
	clear(c.want)
}

// exec runs a write statement inside tx, prepared when it has been seen
// before.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx = s.detach(ctx, tx)
	if st := s.wstmts.get(query); st != nil { //nolint:sqlclosecheck // cached: Store.Close closes it
		ts := tx.StmtContext(ctx, st)
		defer ts.Close() // only the transaction's handle; the compiled statement stays
		return ts.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// execLater is exec for a write whose result its caller does not read. On
// PostgreSQL, inside a groupTx transaction, the connection holds it and
// sends it ahead of the transaction's next statement, or in the pipeline
// that commits when nothing follows (pgConn): a write at the end of a
// transaction costs no round trip of its own. Its error then surfaces
// from that later round trip, and the transaction rolls back as it would
// have. Elsewhere it is exec.
func (s *Store) execLater(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	if s.pg {
		ctx = context.WithValue(ctx, pgLaterKey{}, true)
	}
	_, err := s.exec(ctx, tx, query, args...)
	return err
}

// scanRow is exec for a statement that returns one row (RETURNING),
// scanned into dest.
func (s *Store) scanRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	ctx = s.detach(ctx, tx)
	if st := s.wstmts.get(query); st != nil { //nolint:sqlclosecheck // cached: Store.Close closes it
		ts := tx.StmtContext(ctx, st)
		defer ts.Close()
		return ts.QueryRowContext(ctx, args...).Scan(dest...)
	}
	return tx.QueryRowContext(ctx, query, args...).Scan(dest...)
}

// readRow runs a one-row read on the reader pool through a statement
// prepared at its first use.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmt(ctx, query); st != nil { //nolint:sqlclosecheck // cached: Store.Close closes it
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// readStmt is the reader pool's prepared statement for query, preparing
// the wanted ones first when it has none yet; nil while query is not
// prepared, for the caller to run it unprepared.
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	st := s.rstmts.get(query) //nolint:sqlclosecheck // cached: Store.Close closes it
	if st == nil {
		s.rstmts.prepareWanted(ctx, s.r)
		st = s.rstmts.get(query) //nolint:sqlclosecheck // cached: Store.Close closes it
	}
	return st
}

// txRow is a one-row read inside tx through the writer's prepared
// statement when there is one, prepared after the transaction as exec's
// statements are: a run's start and end read the run's row inside their
// transaction, and compiling that wide SELECT each time was a per-run cost.
func (s *Store) txRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.wstmts.get(query); st != nil { //nolint:sqlclosecheck // cached: Store.Close closes it
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...) //nolint:sqlclosecheck // the transaction's handle closes with it
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txReader reads inside one transaction through txRow.
type txReader struct {
	s  *Store
	tx *sql.Tx
}

func (r txReader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return r.s.txRow(ctx, r.tx, query, args...)
}

// readRows is readRow for a read of many rows.
func (s *Store) readRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmt(ctx, query); st != nil { //nolint:sqlclosecheck // cached: Store.Close closes it
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}
