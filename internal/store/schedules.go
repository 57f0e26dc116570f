package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"
)

// The scheduler's database is its own file with its own numbered
// migrations: `delta scheduler` keeps schedules for a daemon it reaches over
// HTTP and never opens that daemon's database, so the two schemas never
// share a version counter.
//
//go:embed schedmigrations/*.sql
var schedMigrationFS embed.FS

// ErrStale is an IntendFiring whose schedule was cancelled or advanced by
// someone else since it was read as due.
var ErrStale = errors.New("schedule changed since it was read")

// Firing states.
const (
	FiringIntended = "intended" // recorded, the task not yet acknowledged by the daemon
	FiringDone     = "done"     // the daemon acknowledged the task (TaskID)
	FiringFailed   = "failed"   // the daemon refused the task for good (LastError)
)

// Schedules is an open scheduler database.
type Schedules struct {
	w, r   *sql.DB
	closeW func() error // gives the shared writer up (openFile)
	path   string
}

// ScheduleRow is one stored schedule. Times are UTC; a zero time is absent.
type ScheduleRow struct {
	ID, Owner, Agent                   string
	Kind, At, Cron, Timezone           string
	EverySeconds                       int64
	Input, PreviousResponseID, Session string
	Status                             string
	NextFireAt, LastFireAt             time.Time
	Firings                            int
	CreatedAt, CancelledAt             time.Time
}

// FiringRow is one firing of a schedule for one slot.
type FiringRow struct {
	ScheduleID    string
	Slot          time.Time
	Key           string
	State         string
	Skipped       int // earlier slots in the catch-up window this firing stands for
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	TaskID        string
	IntendedAt    time.Time
	DoneAt        time.Time
}

// OpenSchedules opens (creating if needed) the scheduler database at path
// and migrates it.
func OpenSchedules(ctx context.Context, path string) (*Schedules, error) {
	w, r, closeW, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s := &Schedules{w: w, r: r, closeW: closeW, path: path}
	ms, err := migrationsIn(schedMigrationFS, "schedmigrations")
	if err == nil {
		err = migrateDB(ctx, w, path, ms)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Schedules) Close() error { return errors.Join(s.closeW(), s.r.Close()) }

func millisOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

const scheduleCols = `id, owner, agent, kind, at, every_seconds, cron, timezone, input, previous_response_id, session_id,
	status, next_fire_at, last_fire_at, firings, created_at, cancelled_at`

func scanSchedule(sc scanner) (ScheduleRow, error) {
	var r ScheduleRow
	var next, last, created, cancelled sql.NullInt64
	err := sc.Scan(&r.ID, &r.Owner, &r.Agent, &r.Kind, &r.At, &r.EverySeconds, &r.Cron, &r.Timezone, &r.Input,
		&r.PreviousResponseID, &r.Session, &r.Status, &next, &last, &r.Firings, &created, &cancelled)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	r.NextFireAt, r.LastFireAt, r.CreatedAt, r.CancelledAt = fromMS(next), fromMS(last), fromMS(created), fromMS(cancelled)
	return r, err
}

// CreateSchedule stores a new schedule.
func (s *Schedules) CreateSchedule(ctx context.Context, r ScheduleRow) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO schedules (`+scheduleCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Owner, r.Agent, r.Kind, r.At, r.EverySeconds, r.Cron, r.Timezone, r.Input, r.PreviousResponseID, r.Session,
		r.Status, millisOrNull(r.NextFireAt), millisOrNull(r.LastFireAt), r.Firings, r.CreatedAt.UnixMilli(), millisOrNull(r.CancelledAt))
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", r.ID, err)
	}
	return nil
}

// OwnedSchedule reads one schedule of owner and agent; another owner's is
// ErrNotFound.
func (s *Schedules) OwnedSchedule(ctx context.Context, id, owner, agent string) (ScheduleRow, error) {
	r, err := scanSchedule(s.r.QueryRowContext(ctx, "SELECT "+scheduleCols+" FROM schedules WHERE id = ? AND owner = ? AND agent = ?", id, owner, agent))
	if err != nil {
		return r, fmt.Errorf("read schedule %s: %w", id, err)
	}
	return r, nil
}

// ScheduleByID reads one schedule whatever its owner: the scheduler's own
// firing loop re-sends an owed firing with the owner recorded here.
func (s *Schedules) ScheduleByID(ctx context.Context, id string) (ScheduleRow, error) {
	r, err := scanSchedule(s.r.QueryRowContext(ctx, "SELECT "+scheduleCols+" FROM schedules WHERE id = ?", id))
	if err != nil {
		return r, fmt.Errorf("read schedule %s: %w", id, err)
	}
	return r, nil
}

// OwnedSchedules lists owner and agent's schedules, oldest first.
func (s *Schedules) OwnedSchedules(ctx context.Context, owner, agent string) ([]ScheduleRow, error) {
	return s.list(ctx, "SELECT "+scheduleCols+" FROM schedules WHERE owner = ? AND agent = ? ORDER BY created_at, id", owner, agent)
}

// DueSchedules lists up to limit active schedules due at or before now,
// earliest first (by next_fire_at, then id), after the row whose
// next_fire_at and id are after (the last row of the previous page; the
// zero DueCursor starts at the first). A caller that leaves some due
// schedules due (the scheduler holds one whose previous firing is still in
// progress) pages on, so those never hide the ones behind them.
func (s *Schedules) DueSchedules(ctx context.Context, now time.Time, after DueCursor, limit int) ([]ScheduleRow, error) {
	return s.list(ctx, "SELECT "+scheduleCols+` FROM schedules WHERE status = 'active' AND next_fire_at <= ?
		AND (next_fire_at > ? OR (next_fire_at = ? AND id > ?))
		ORDER BY next_fire_at, id LIMIT ?`, now.UnixMilli(), after.NextFireAt.UnixMilli(), after.NextFireAt.UnixMilli(), after.ID, limit)
}

// DueCursor is where a page of DueSchedules ends: the next_fire_at and id
// of its last row.
type DueCursor struct {
	NextFireAt time.Time
	ID         string
}

func (s *Schedules) list(ctx context.Context, q string, args ...any) ([]ScheduleRow, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return scanAll(rows, "list schedules", scanSchedule)
}

// CancelSchedule cancels owner and agent's schedule: it fires no more. A
// schedule already done or cancelled is returned unchanged; another owner's
// is ErrNotFound. A firing already recorded still completes (it may have
// reached the daemon).
func (s *Schedules) CancelSchedule(ctx context.Context, id, owner, agent string, at time.Time) (ScheduleRow, error) {
	var out ScheduleRow
	err := txOn(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE schedules SET status = 'cancelled', next_fire_at = NULL, cancelled_at = ?
			WHERE id = ? AND owner = ? AND agent = ? AND status = 'active'`, at.UnixMilli(), id, owner, agent); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.QueryRowContext(ctx, "SELECT "+scheduleCols+" FROM schedules WHERE id = ? AND owner = ? AND agent = ?", id, owner, agent))
		return err
	})
	if err != nil {
		return out, fmt.Errorf("cancel schedule %s: %w", id, err)
	}
	return out, nil
}

// IntendFiring records that schedule f.ScheduleID fires for f.Slot, in the
// transaction that advances the schedule past it: next is its following
// firing, or zero when it has none (a one-time schedule, which becomes
// done). due is the next_fire_at the caller read; when the row no longer
// has it (cancelled, or advanced by another tick) nothing is written and
// the error is ErrStale. Once this returns nil the firing is owed: it is
// posted until the daemon acknowledges or refuses it.
func (s *Schedules) IntendFiring(ctx context.Context, f FiringRow, due, next time.Time) error {
	err := txOn(ctx, s.w, func(tx *sql.Tx) error {
		status := "active"
		if next.IsZero() {
			status = "done"
		}
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_fire_at = ?, last_fire_at = ?, firings = firings + 1, status = ?
			WHERE id = ? AND status = 'active' AND next_fire_at = ?`, millisOrNull(next), f.Slot.UnixMilli(), status, f.ScheduleID, due.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, ErrStale)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO firings (schedule_id, slot, key, state, skipped, next_attempt_at, intended_at)
			VALUES (?, ?, ?, 'intended', ?, ?, ?)`, f.ScheduleID, f.Slot.UnixMilli(), f.Key, f.Skipped, f.IntendedAt.UnixMilli(), f.IntendedAt.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("record firing %s: %w", f.Key, err)
	}
	return nil
}

const firingCols = `schedule_id, slot, key, state, skipped, attempts, next_attempt_at, last_error, task_id, intended_at, done_at`

func scanFiring(sc scanner) (FiringRow, error) {
	var f FiringRow
	var slot, nextAttempt, intended, done sql.NullInt64
	err := sc.Scan(&f.ScheduleID, &slot, &f.Key, &f.State, &f.Skipped, &f.Attempts, &nextAttempt, &f.LastError, &f.TaskID, &intended, &done)
	f.Slot, f.NextAttemptAt, f.IntendedAt, f.DoneAt = fromMS(slot), fromMS(nextAttempt), fromMS(intended), fromMS(done)
	return f, err
}

func (s *Schedules) firings(ctx context.Context, q string, args ...any) ([]FiringRow, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list firings: %w", err)
	}
	return scanAll(rows, "list firings", scanFiring)
}

// PendingFirings lists the firings recorded but not yet acknowledged whose
// next attempt is due at now, oldest first.
func (s *Schedules) PendingFirings(ctx context.Context, now time.Time) ([]FiringRow, error) {
	return s.firings(ctx, "SELECT "+firingCols+` FROM firings WHERE state = 'intended' AND next_attempt_at <= ?
		ORDER BY intended_at, schedule_id, slot`, now.UnixMilli())
}

// LastFiring is the schedule's firing for its latest slot; ErrNotFound
// when it has never fired.
func (s *Schedules) LastFiring(ctx context.Context, scheduleID string) (FiringRow, error) {
	fs, err := s.firings(ctx, "SELECT "+firingCols+" FROM firings WHERE schedule_id = ? ORDER BY slot DESC LIMIT 1", scheduleID)
	if err != nil {
		return FiringRow{}, err
	}
	if len(fs) == 0 {
		return FiringRow{}, fmt.Errorf("last firing of %s: %w", scheduleID, ErrNotFound)
	}
	return fs[0], nil
}

// Firings lists one schedule's firings, in slot order.
func (s *Schedules) Firings(ctx context.Context, scheduleID string) ([]FiringRow, error) {
	return s.firings(ctx, "SELECT "+firingCols+" FROM firings WHERE schedule_id = ? ORDER BY slot", scheduleID)
}

// FiringDone records the daemon's acknowledgement of a firing: the task it
// started (or, re-sent, the task it had already started).
func (s *Schedules) FiringDone(ctx context.Context, key, taskID string, at time.Time) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE firings SET state = 'done', task_id = ?, done_at = ?, attempts = attempts + 1, last_error = ''
		WHERE key = ?`, taskID, at.UnixMilli(), key); err != nil {
		return fmt.Errorf("record firing %s done: %w", key, err)
	}
	return nil
}

// FiringRetry records a failed attempt that will be tried again at retryAt;
// a zero retryAt gives up (the firing becomes failed).
func (s *Schedules) FiringRetry(ctx context.Context, key, reason string, retryAt, at time.Time) error {
	q := `UPDATE firings SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE key = ? AND state = 'intended'`
	args := []any{reason, retryAt.UnixMilli(), key}
	if retryAt.IsZero() {
		q = `UPDATE firings SET attempts = attempts + 1, last_error = ?, state = 'failed', done_at = ? WHERE key = ? AND state = 'intended'`
		args = []any{reason, at.UnixMilli(), key}
	}
	if _, err := s.w.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("record firing %s attempt: %w", key, err)
	}
	return nil
}
