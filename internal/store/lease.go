package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrLeaseHeld means a different holder owns the writer lease and it has not
// expired: this process must not write.
var ErrLeaseHeld = errors.New("writer lease held by another process")

// Lease is the single-writer lease as stored.
type Lease struct {
	Holder    string
	ExpiresAt time.Time
}

// AcquireLease takes or renews the writer lease for holder until now+ttl.
// It succeeds when the lease is free, expired, or already held by holder —
// so a restarted process with the same holder ID reacquires at once after a
// crash, and renewing is the same call. A different holder whose lease is
// still live gets an error wrapping ErrLeaseHeld that names it.
func (s *Store) AcquireLease(ctx context.Context, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	if holder == "" {
		return Lease{}, errors.New("acquire writer lease: empty holder")
	}
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("acquire writer lease: ttl %s must be positive", ttl)
	}
	want := Lease{Holder: holder, ExpiresAt: now.Add(ttl)}
	var cur Lease
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The WHERE on the upsert is the whole rule: overwrite only our own
		// or an expired row. The write transaction is immediate, so two
		// processes cannot both see the row free.
		res, err := s.exec(ctx, tx, `INSERT INTO writer_lease (id, holder, expires_at) VALUES (1, ?, ?)
			ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE writer_lease.holder = excluded.holder OR writer_lease.expires_at <= ?`,
			holder, want.ExpiresAt.UnixMilli(), now.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var exp int64
		if err := tx.QueryRowContext(ctx, "SELECT holder, expires_at FROM writer_lease WHERE id = 1").Scan(&cur.Holder, &exp); err != nil {
			return err
		}
		cur.ExpiresAt = time.UnixMilli(exp)
		return ErrLeaseHeld
	})
	if errors.Is(err, ErrLeaseHeld) {
		return cur, fmt.Errorf("acquire writer lease for %q: held by %q until %s: %w",
			holder, cur.Holder, cur.ExpiresAt.UTC().Format(time.RFC3339), ErrLeaseHeld)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("acquire writer lease for %q: %w", holder, err)
	}
	return want, nil
}

// ReleaseLease gives the lease up if holder owns it, so a successor on
// another machine need not wait for the TTL after a clean shutdown.
func (s *Store) ReleaseLease(ctx context.Context, holder string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "DELETE FROM writer_lease WHERE id = 1 AND holder = ?", holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("release writer lease for %q: %w", holder, err)
	}
	return nil
}

// CurrentLease reads the lease; ErrNotFound when nobody holds one.
func (s *Store) CurrentLease(ctx context.Context) (Lease, error) {
	var l Lease
	var exp int64
	err := s.r.QueryRowContext(ctx, "SELECT holder, expires_at FROM writer_lease WHERE id = 1").Scan(&l.Holder, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, fmt.Errorf("read writer lease: %w", ErrNotFound)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("read writer lease: %w", err)
	}
	l.ExpiresAt = time.UnixMilli(exp)
	return l, nil
}
