package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// On PostgreSQL the claim locks the candidate runs FOR UPDATE SKIP LOCKED,
// so workers claiming at the same moment pass over each other's rows
// instead of queueing behind them, and it does not take the store's write
// lock (it writes no event). On SQLite the immediate transaction is the
// whole serialization.

// ErrSessionHeld means another worker's lease on the session is live.
var ErrSessionHeld = errors.New("session leased by another worker")

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
// already holds; it takes or renews those sessions' leases until now+ttl in
// the same transaction. A run is returned as stored; its Start is the
// caller's.
func (s *Store) ClaimRuns(ctx context.Context, holder string, ttl time.Duration, now time.Time, max int) ([]Run, error) {
	if holder == "" {
		return nil, errors.New("claim runs: empty holder")
	}
	if ttl <= 0 || max <= 0 {
		return nil, fmt.Errorf("claim runs: ttl %s and max %d must be positive", ttl, max)
	}
	q := "SELECT " + runCols + ` FROM runs r
		WHERE r.status IN ('running','queued')
		AND r.seq = (SELECT MIN(e.seq) FROM runs e WHERE e.session_id = r.session_id AND e.status IN ('running','queued'))
		AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = r.session_id AND l.holder <> ? AND l.expires_at > ?)
		ORDER BY r.status = 'queued', r.seq LIMIT ?`
	if s.pg {
		q += " FOR UPDATE OF r SKIP LOCKED"
	}
	var out []Run
	err := s.rowTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, holder, now.UnixMilli(), max)
		if err != nil {
			return err
		}
		defer rows.Close() // for the early return; the checked Close below frees the cursor before the upserts
		var cands []Run
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			cands = append(cands, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range cands {
			ok, err := s.takeSession(ctx, tx, r.SessionID, holder, ttl, now)
			if err != nil {
				return err
			}
			if ok {
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

// takeSession takes or renews sessionID's lease for holder unless another
// holder's is live, and reports whether holder has it now.
func (s *Store) takeSession(ctx context.Context, tx *sql.Tx, sessionID, holder string, ttl time.Duration, now time.Time) (bool, error) {
	// The WHERE on the upsert is the rule: overwrite only our own or an
	// expired lease. acquired_at moves only when the holder changes.
	res, err := s.exec(ctx, tx, `INSERT INTO session_leases (session_id, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at,
			acquired_at = CASE WHEN session_leases.holder = excluded.holder THEN session_leases.acquired_at ELSE excluded.acquired_at END,
			holder = excluded.holder
		WHERE session_leases.holder = excluded.holder OR session_leases.expires_at <= ?`,
		sessionID, holder, now.UnixMilli(), now.Add(ttl).UnixMilli(), now.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AcquireSession takes or renews one session's lease for holder until
// now+ttl; a live lease of another holder gives ErrSessionHeld.
func (s *Store) AcquireSession(ctx context.Context, sessionID, holder string, ttl time.Duration, now time.Time) error {
	if holder == "" || ttl <= 0 {
		return fmt.Errorf("acquire session %s: holder %q and ttl %s must be set", sessionID, holder, ttl)
	}
	err := s.rowTx(ctx, func(tx *sql.Tx) error {
		ok, err := s.takeSession(ctx, tx, sessionID, holder, ttl, now)
		if err == nil && !ok {
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
func (s *Store) RenewSessionLeases(ctx context.Context, holder string, ttl time.Duration, now time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, "UPDATE session_leases SET expires_at = ? WHERE holder = ?", now.Add(ttl).UnixMilli(), holder)
	if err != nil {
		return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("renew session leases of %q: %w", holder, err)
	}
	return n, nil
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
	if _, err := s.w.ExecContext(ctx, "DELETE FROM session_leases WHERE session_id = ? AND holder = ?", sessionID, holder); err != nil {
		return fmt.Errorf("release session %s for %q: %w", sessionID, holder, err)
	}
	if err := s.notifyRuns(ctx, s.w); err != nil {
		return fmt.Errorf("release session %s for %q: %w", sessionID, holder, err)
	}
	return nil
}

// SessionLeases lists the stored leases by session id, live or expired.
func (s *Store) SessionLeases(ctx context.Context) ([]SessionLease, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT session_id, holder, acquired_at, expires_at FROM session_leases ORDER BY session_id")
	if err != nil {
		return nil, fmt.Errorf("list session leases: %w", err)
	}
	defer rows.Close()
	var out []SessionLease
	for rows.Next() {
		var l SessionLease
		var acq, exp int64
		if err := rows.Scan(&l.SessionID, &l.Holder, &acq, &exp); err != nil {
			return nil, fmt.Errorf("list session leases: %w", err)
		}
		l.AcquiredAt, l.ExpiresAt = time.UnixMilli(acq).UTC(), time.UnixMilli(exp).UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}
