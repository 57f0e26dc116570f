package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Work distribution for several workers sharing one database: ClaimRuns
// hands a worker the next run of each session it may run, and the session
// lease (table session_leases) keeps a session with one worker at a time.
// A worker renews its leases (RenewSessionLeases) well inside the TTL,
// checks HoldsSession at each checkpoint of a run and stops the run when
// it no longer holds the session; after the TTL another worker's ClaimRuns
// takes a dead worker's sessions over and resumes their runs.
//
// On PostgreSQL the claim locks the candidate runs FOR NO KEY UPDATE SKIP
// LOCKED, so workers claiming at the same moment pass over each other's
// rows instead of queueing behind them, and it does not take the store's
// write lock (it writes no event). A run's write transactions verify the
// lease inside the transaction (WithSessionLease). On SQLite the immediate
// transaction is the whole serialization.

// ErrSessionHeld means another worker's lease on the session is live.
var ErrSessionHeld = errors.New("session leased by another worker")

// ErrSessionLeaseLost refuses a write transaction made under
// WithSessionLease once the worker no longer holds that session's lease:
// nothing of the transaction is written, and the run making it must stop
// there (the worker holding the session now resumes it).
var ErrSessionLeaseLost = errors.New("session lease lost")

// leaseGuard is the lease a context's write transactions must still hold.
type leaseGuard struct {
	sessionID, holder string
	// liveUntil is the latest expiry (unix ms) a transaction under the
	// guard found the lease to have, held by holder (LeaseLiveUntil).
	liveUntil *atomic.Int64
}

type leaseGuardKey struct{}

// WithSessionLease returns ctx whose write transactions verify, inside the
// transaction and before any of their writes, that holder's lease on
// sessionID is live; when it is not they fail with ErrSessionLeaseLost.
// On PostgreSQL the verifying read locks the lease row FOR SHARE: a worker
// taking the session over (ClaimRuns, AcquireSession) waits for that
// transaction to end, so no write of the old holder lands after a takeover.
// A lease that expires while the transaction runs is still held by it, for
// the same reason. On SQLite the transaction is the only writer.
func WithSessionLease(ctx context.Context, sessionID, holder string) context.Context {
	return context.WithValue(ctx, leaseGuardKey{}, leaseGuard{sessionID: sessionID, holder: holder, liveUntil: new(atomic.Int64)})
}

// LeaseLiveUntil is the expiry that the latest write transaction made
// under ctx's lease guard (WithSessionLease) found the lease to have, held
// by the guard's holder; ok is false when ctx has no guard or none of its
// transactions has verified the lease yet. Until that time no other worker
// can take the session over (a takeover needs the lease expired, and only
// its holder renews or releases it), so a run that checks its lease before
// a model call need not ask the database again while it is well ahead.
func LeaseLiveUntil(ctx context.Context) (time.Time, bool) {
	g, ok := ctx.Value(leaseGuardKey{}).(leaseGuard)
	if !ok || g.liveUntil == nil {
		return time.Time{}, false
	}
	ms := g.liveUntil.Load()
	if ms == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// guarded is fn preceded by ctx's lease guard; fn itself when ctx has none.
func (s *Store) guarded(ctx context.Context, fn func(*sql.Tx) error) func(*sql.Tx) error {
	if _, ok := ctx.Value(leaseGuardKey{}).(leaseGuard); !ok {
		return fn
	}
	return func(tx *sql.Tx) error {
		if err := s.checkLease(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	}
}

// checkLease verifies ctx's lease guard, if any, inside tx.
func (s *Store) checkLease(ctx context.Context, tx *sql.Tx) error {
	g, ok := ctx.Value(leaseGuardKey{}).(leaseGuard)
	if !ok {
		return nil
	}
	q := "SELECT holder, expires_at FROM session_leases WHERE session_id = ?"
	if s.pg {
		q += " FOR SHARE"
	}
	var holder string
	var exp int64
	err := tx.QueryRowContext(s.detach(ctx, tx), q, g.sessionID).Scan(&holder, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return g.verdict(false, "", 0)
	}
	if err != nil {
		return fmt.Errorf("read lease of session %s: %w", g.sessionID, err)
	}
	return g.verdict(true, holder, exp)
}

// verdict is nil when the lease read (found, with holder and expiry) is
// g's and live; ErrSessionLeaseLost otherwise.
func (g leaseGuard) verdict(found bool, holder string, exp int64) error {
	switch {
	case !found:
		return fmt.Errorf("session %s has no lease: %w", g.sessionID, ErrSessionLeaseLost)
	case holder != g.holder:
		return fmt.Errorf("session %s is leased by %q: %w", g.sessionID, holder, ErrSessionLeaseLost)
	case exp <= time.Now().UnixMilli():
		return fmt.Errorf("lease of session %s expired at %s: %w", g.sessionID, time.UnixMilli(exp).UTC().Format(time.RFC3339Nano), ErrSessionLeaseLost)
	}
	// A transaction that goes on to fail still saw the lease as it was:
	// held, until exp. Leases only lengthen while held, so the latest
	// sighting is the one to keep.
	if g.liveUntil != nil {
		for {
			old := g.liveUntil.Load()
			if exp <= old || g.liveUntil.CompareAndSwap(old, exp) {
				break
			}
		}
	}
	return nil
}

// SessionLease is one session's lease as stored.
type SessionLease struct {
	SessionID  string
	Holder     string
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// ClaimRuns returns up to max runs for holder to execute, one per session:
// each session's earliest live run (running before queued, then in queue
// order), from sessions that are free, whose lease expired, or that holder
// already holds, passing over the sessions in skip (the ones holder is
// executing: asking for their running runs again would read, and on
// PostgreSQL lock, a row per busy session on every claim). It takes the
// leases of the sessions holder did not hold (or held expired) until
// now+ttl in the same transaction, in one statement; a lease holder already holds live is passed over as it is
// (RenewSessionLeases, the heartbeat, keeps it). A run is returned as
// stored; its Start is the caller's.
//
// Leaving a held lease alone is what keeps the claim out of a lock cycle
// on PostgreSQL: a run's write transaction holds its lease row FOR SHARE
// (the lease guard) and then updates the run's row; a claim that had
// locked that run's row and then waited to renew the lease would wait for
// it while it waits for the claim.
func (s *Store) ClaimRuns(ctx context.Context, holder string, ttl time.Duration, now time.Time, max int, skip []string) ([]Run, error) {
	if holder == "" {
		return nil, errors.New("claim runs: empty holder")
	}
	if ttl <= 0 || max <= 0 {
		return nil, fmt.Errorf("claim runs: ttl %s and max %d must be positive", ttl, max)
	}
	q := "SELECT " + runCols + `, EXISTS (SELECT 1 FROM session_leases m WHERE m.session_id = r.session_id AND m.holder = ? AND m.expires_at > ?)
		FROM runs r
		WHERE r.status IN ('running','queued')
		AND r.seq = (SELECT MIN(e.seq) FROM runs e WHERE e.session_id = r.session_id AND e.status IN ('running','queued'))
		AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = r.session_id AND l.holder <> ? AND l.expires_at > ?)
		AND r.session_id NOT IN (SELECT value FROM json_each(?))
		ORDER BY r.status = 'queued', r.seq LIMIT ?`
	// One parameter however many sessions are skipped, so the statement
	// stays the same (and prepared) from claim to claim.
	if skip == nil {
		skip = []string{}
	}
	skipJSON, err := json.Marshal(skip)
	if err != nil {
		return nil, fmt.Errorf("claim runs for %q: %w", holder, err)
	}
	if s.pg {
		out, err := s.claimRunsPG(ctx, holder, ttl, now, max, string(skipJSON))
		if err != nil {
			return nil, fmt.Errorf("claim runs for %q: %w", holder, err)
		}
		return out, nil
	}
	var out []Run
	err = s.rowTx(ctx, func(tx *sql.Tx) error {
		ms := now.UnixMilli()
		rows, err := tx.QueryContext(ctx, q, holder, ms, holder, ms, string(skipJSON), max)
		if err != nil {
			return err
		}
		defer rows.Close() // for the early return; the checked Close below frees the cursor before the upsert
		var cands []Run
		var held []bool
		for rows.Next() {
			var mine bool
			r, err := scanRun(extraScan{rows, []any{&mine}})
			if err != nil {
				return err
			}
			cands = append(cands, r)
			held = append(held, mine)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var take []string
		for i, r := range cands {
			if !held[i] {
				take = append(take, r.SessionID)
			}
		}
		taken, err := s.takeSessions(ctx, tx, take, holder, ttl, now)
		if err != nil {
			return err
		}
		for i, r := range cands {
			if held[i] || taken[r.SessionID] {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs for %q: %w", holder, err)
	}
	return out, nil
}

// claimRunsPG is ClaimRuns in one statement, one round trip, that waits
// on no lock a run's write holds. The candidates are locked FOR NO KEY
// UPDATE SKIP LOCKED (NO KEY: a run's own writes check their foreign keys
// to its row, FOR KEY SHARE, which this must not hold up). A candidate's
// lease row, if it has one, is taken only if it can be locked at once
// (SKIP LOCKED again): a row held FOR SHARE by a write in progress (the
// lease guard of the worker holding it, perhaps just expired) is passed
// over this time, never waited for, since that write may itself be
// waiting for the candidate's run row this statement holds. A session
// with no lease row gets one, unless another worker's appeared meanwhile
// (ON CONFLICT DO NOTHING: no wait on a committed row).
func (s *Store) claimRunsPG(ctx context.Context, holder string, ttl time.Duration, now time.Time, max int, skipJSON string) ([]Run, error) {
	ms, exp := now.UnixMilli(), now.Add(ttl).UnixMilli()
	rows, err := s.w.QueryContext(ctx, pgClaim, holder, ms, exp, max, skipJSON)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}

// pgClaim is claimRunsPG's statement.
var pgClaim = `WITH running AS (` + pgCandidates("running", "?4") + `
		), queued AS (` + pgCandidates("queued", "?4 - (SELECT count(*) FROM running)") + `
		), cand AS (
			SELECT * FROM running UNION ALL SELECT * FROM queued
		), lockable AS (
			SELECT l.session_id AS lsession FROM session_leases l JOIN cand ON csession = l.session_id
			WHERE NOT mine
			FOR NO KEY UPDATE OF l SKIP LOCKED
		), renewed AS (
			UPDATE session_leases SET expires_at = ?3,
				acquired_at = CASE WHEN holder = ?1 THEN acquired_at ELSE ?2 END,
				holder = ?1
			FROM lockable WHERE session_id = lsession AND (holder = ?1 OR expires_at <= ?2)
			RETURNING session_id
		), fresh AS (
			INSERT INTO session_leases (session_id, holder, acquired_at, expires_at)
			SELECT csession, ?1, ?2, ?3 FROM cand
			WHERE NOT mine AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = csession)
			ORDER BY cseq
			ON CONFLICT DO NOTHING
			RETURNING session_id
		)
		SELECT ` + runCols + ` FROM runs JOIN cand ON cseq = seq
		WHERE mine OR csession IN (SELECT session_id FROM renewed) OR csession IN (SELECT session_id FROM fresh)
		ORDER BY status = 'queued', seq`

// pgCandidates is claimRunsPG's choice of up to limit runs of one status
// (running ones come before queued ones), in queue order: each its
// session's earliest live run (runs_live answers that in one probe), of
// a session no other holder's live lease covers, locked FOR NO KEY UPDATE
// SKIP LOCKED. One status at a time, the scan follows runs_status in seq
// order and stops at the limit: a claim reads about as many runs as it
// takes, not every queued run (sorting them all by status first was the
// claim's main cost with a backlog).
func pgCandidates(status, limit string) string {
	return `
			SELECT r.seq AS cseq, r.session_id AS csession,
				EXISTS (SELECT 1 FROM session_leases m WHERE m.session_id = r.session_id AND m.holder = ?1 AND m.expires_at > ?2) AS mine
			FROM runs r
			WHERE r.status = '` + status + `'
			AND r.seq = (SELECT MIN(e.seq) FROM runs e WHERE e.session_id = r.session_id AND e.status IN ('running','queued'))
			AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = r.session_id AND l.holder <> ?1 AND l.expires_at > ?2)
			AND r.session_id NOT IN (SELECT jsonb_array_elements_text(?5::jsonb))
			ORDER BY r.seq LIMIT ` + limit + `
			FOR NO KEY UPDATE OF r SKIP LOCKED`
}

// extraScan scans a row of scanRun's columns followed by extra ones.
type extraScan struct {
	sc    scanner
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.sc.Scan(append(dest, e.extra...)...) }

// takeSessions takes or renews the leases of sessionIDs (distinct) for
// holder in one statement, except those another holder's live lease
// covers, and returns the ones holder has now.
func (s *Store) takeSessions(ctx context.Context, tx *sql.Tx, sessionIDs []string, holder string, ttl time.Duration, now time.Time) (map[string]bool, error) {
	if len(sessionIDs) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("INSERT INTO session_leases (session_id, holder, acquired_at, expires_at) VALUES ")
	args := make([]any, 0, 4*len(sessionIDs)+1)
	for i, id := range sessionIDs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?)")
		args = append(args, id, holder, now.UnixMilli(), now.Add(ttl).UnixMilli())
	}
	// The WHERE on the upsert is the rule: overwrite only our own or an
	// expired lease. acquired_at moves only when the holder changes.
	b.WriteString(` ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at,
			acquired_at = CASE WHEN session_leases.holder = excluded.holder THEN session_leases.acquired_at ELSE excluded.acquired_at END,
			holder = excluded.holder
		WHERE session_leases.holder = excluded.holder OR session_leases.expires_at <= ?
		RETURNING session_id`)
	args = append(args, now.UnixMilli())
	rows, err := tx.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	taken := make(map[string]bool, len(sessionIDs))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		taken[id] = true
	}
	return taken, rows.Err()
}

// AcquireSession takes or renews one session's lease for holder until
// now+ttl; a live lease of another holder gives ErrSessionHeld.
func (s *Store) AcquireSession(ctx context.Context, sessionID, holder string, ttl time.Duration, now time.Time) error {
	if holder == "" || ttl <= 0 {
		return fmt.Errorf("acquire session %s: holder %q and ttl %s must be set", sessionID, holder, ttl)
	}
	err := s.rowTx(ctx, func(tx *sql.Tx) error {
		taken, err := s.takeSessions(ctx, tx, []string{sessionID}, holder, ttl, now)
		if err == nil && !taken[sessionID] {
			err = ErrSessionHeld
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("acquire session %s for %q: %w", sessionID, holder, err)
	}
	return nil
}

// RenewSessionLeases is holder's heartbeat: every lease it still holds
// runs until now+ttl. It returns how many it renewed; a session another
// worker took over after the TTL is not among them.
//
// On PostgreSQL it renews first the lease rows it can lock at once (SKIP
// LOCKED), in one statement, then each row held by a run's write in
// progress (its lease guard reads the row FOR SHARE) in a statement of its
// own. One statement over all the rows would lock them one after another
// and, stopped at a row a write holds, keep every row it had renewed locked
// meanwhile: each run write of those sessions would then queue behind the
// heartbeat, which waits for a write of its own, and so on.
func (s *Store) RenewSessionLeases(ctx context.Context, holder string, ttl time.Duration, now time.Time) (int64, error) {
	exp := now.Add(ttl).UnixMilli()
	if !s.pg {
		res, err := s.w.ExecContext(ctx, "UPDATE session_leases SET expires_at = ? WHERE holder = ?", exp, holder)
		if err != nil {
			return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
		}
		return n, nil
	}
	res, err := s.w.ExecContext(ctx, `UPDATE session_leases l SET expires_at = ? FROM (
			SELECT session_id FROM session_leases WHERE holder = ? AND expires_at <> ? FOR NO KEY UPDATE SKIP LOCKED
		) free WHERE l.session_id = free.session_id AND l.holder = ?`, exp, holder, exp, holder)
	if err != nil {
		return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
	}
	// What is left: the rows locked a moment ago (and any this holder took
	// since, already renewed by their claim if their expiry is exp).
	busy, err := s.unrenewed(ctx, holder, exp)
	if err != nil {
		return n, fmt.Errorf("renew session leases of %q: %w", holder, err)
	}
	for _, id := range busy {
		res, err := s.w.ExecContext(ctx, "UPDATE session_leases SET expires_at = ? WHERE session_id = ? AND holder = ?", exp, id, holder)
		if err != nil {
			return n, fmt.Errorf("renew session lease of %s for %q: %w", id, holder, err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("renew session lease of %s for %q: %w", id, holder, err)
		}
		n += m
	}
	return n, nil
}

// unrenewed lists the sessions holder leases whose expiry is not exp.
func (s *Store) unrenewed(ctx context.Context, holder string, exp int64) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT session_id FROM session_leases WHERE holder = ? AND expires_at <> ?", holder, exp)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, "list unrenewed session leases", scanString)
}

// CancelRequestedRuns lists the running runs with a cancel request whose
// sessions holder leases: the heartbeat's backstop for a cancel
// notification the worker missed.
func (s *Store) CancelRequestedRuns(ctx context.Context, holder string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT r.id FROM runs r JOIN session_leases l ON l.session_id = r.session_id
		WHERE l.holder = ? AND r.status = 'running' AND r.cancel_requested = 1 ORDER BY r.seq`, holder)
	if err != nil {
		return nil, fmt.Errorf("list cancel requests of %q: %w", holder, err)
	}
	return scanAll(rows, fmt.Sprintf("list cancel requests of %q", holder), scanString)
}

// HoldsSession reports whether holder's lease on sessionID is live at now:
// the check a worker makes at each checkpoint of the session's run.
func (s *Store) HoldsSession(ctx context.Context, sessionID, holder string, now time.Time) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM session_leases WHERE session_id = ? AND holder = ? AND expires_at > ?",
		sessionID, holder, now.UnixMilli()).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read lease of session %s: %w", sessionID, err)
	}
	return n == 1, nil
}

// ReleaseSession gives sessionID's lease up if holder holds it, so another
// worker can take the session's next run at once.
func (s *Store) ReleaseSession(ctx context.Context, sessionID, holder string) error {
	return s.ReleaseSessions(ctx, []string{sessionID}, holder)
}

// ReleaseSessions gives up, in one statement, the leases of sessionIDs
// that holder holds, and wakes the idle workers once: a worker whose runs
// end together releases their sessions in one round trip, not one each.
func (s *Store) ReleaseSessions(ctx context.Context, sessionIDs []string, holder string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	args := make([]any, 0, len(sessionIDs)+1)
	args = append(args, holder)
	for _, id := range sessionIDs {
		args = append(args, id)
	}
	in := "?" + strings.Repeat(", ?", len(sessionIDs)-1)
	what := sessionIDs[0]
	if len(sessionIDs) > 1 {
		what = fmt.Sprintf("%s and %d more", what, len(sessionIDs)-1)
	}
	if s.pg {
		// One statement, one round trip: the release and the wake-up of
		// the workers (notifyRuns's channel). A data-modifying WITH runs
		// whether or not the query reads it.
		if _, err := s.w.ExecContext(ctx, `WITH d AS (DELETE FROM session_leases WHERE holder = ? AND session_id IN (`+in+`) RETURNING 1)
			SELECT pg_notify('`+runsChannel+`', '')`, args...); err != nil {
			return fmt.Errorf("release session %s for %q: %w", what, holder, err)
		}
		return nil
	}
	if _, err := s.w.ExecContext(ctx, "DELETE FROM session_leases WHERE holder = ? AND session_id IN ("+in+")", args...); err != nil {
		return fmt.Errorf("release session %s for %q: %w", what, holder, err)
	}
	if err := s.notifyRuns(ctx, s.w); err != nil {
		return fmt.Errorf("release session %s for %q: %w", what, holder, err)
	}
	return nil
}

// SessionLeases lists the stored leases by session id, live or expired.
func (s *Store) SessionLeases(ctx context.Context) ([]SessionLease, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT session_id, holder, acquired_at, expires_at FROM session_leases ORDER BY session_id")
	if err != nil {
		return nil, fmt.Errorf("list session leases: %w", err)
	}
	return scanAll(rows, "list session leases", func(rows scanner) (SessionLease, error) {
		var l SessionLease
		var acq, exp int64
		err := rows.Scan(&l.SessionID, &l.Holder, &acq, &exp)
		l.AcquiredAt, l.ExpiresAt = time.UnixMilli(acq).UTC(), time.UnixMilli(exp).UTC()
		return l, err
	})
}
