package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// Run statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusDone      = "done"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// ErrUnknownPrevious means previous_response_id names no run the caller
// owns: none at all, or one of another owner (the two are not told apart).
var ErrUnknownPrevious = errors.New("unknown previous_response_id")

// Terminal reports whether status ends a run.
func Terminal(status string) bool {
	return status == StatusDone || status == StatusFailed || status == StatusCancelled
}

// Run is one response id: a request and its execution.
type Run struct {
	Seq             int64
	ID              string
	SessionID       string
	Owner           string
	Status          string
	Request         json.RawMessage
	PreviousID      string
	IdempotencyKey  string
	InputAppended   bool
	CancelRequested bool
	Attempts        int
	Steps           int
	Usage           model.Usage
	Model           string
	Error           string
	Result          json.RawMessage
	CreatedAt       time.Time
	StartedAt       time.Time // zero until started
	FinishedAt      time.Time // zero until terminal
}

// TaskID is the caller's metadata.task_id from the stored request (a
// string, or a number written as one), "" when there is none. Events carry
// it as part of their correlation spine.
func (r Run) TaskID() string { return taskOf(r.Request) }

func taskOf(request json.RawMessage) string {
	var req struct {
		Metadata struct {
			TaskID any `json:"task_id"`
		} `json:"metadata"`
	}
	if json.Unmarshal(request, &req) != nil {
		return ""
	}
	switch v := req.Metadata.TaskID.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// NewRun is what CreateRun needs.
type NewRun struct {
	ID                  string
	SessionID           string // used when a new session is created
	Owner               string
	Request             json.RawMessage
	PreviousID          string
	IdempotencyKey      string
	IdempotencyTerminal bool // re-POSTing the key re-attaches to the run even once it is terminal
}

const runCols = `seq, id, session_id, owner, status, request, COALESCE(previous_id,''), COALESCE(idempotency_key,''),
	input_appended, cancel_requested, attempts, steps, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
	cost_usd, model, error, result, created_at, started_at, finished_at`

// pgRunCols is runCols for a row pgx scans itself (a pipeline's): the
// flags read as booleans, which database/sql converts from integers and
// pgx does not.
var pgRunCols = strings.Replace(runCols, "input_appended, cancel_requested,", "input_appended <> 0, cancel_requested <> 0,", 1)

type scanner interface{ Scan(dest ...any) error }

// rowScan is a write statement returning one row (RETURNING), run inside
// tx through scanRow when it is scanned.
type rowScan struct {
	s     *Store
	ctx   context.Context
	tx    *sql.Tx
	query string
	args  []any
}

func (r rowScan) Scan(dest ...any) error { return r.s.scanRow(r.ctx, r.tx, r.query, r.args, dest...) }

func scanRun(sc scanner) (Run, error) {
	var r Run
	var req string
	var result sql.NullString
	var created int64
	var started, finished sql.NullInt64
	err := sc.Scan(&r.Seq, &r.ID, &r.SessionID, &r.Owner, &r.Status, &req, &r.PreviousID, &r.IdempotencyKey,
		&r.InputAppended, &r.CancelRequested, &r.Attempts, &r.Steps, &r.Usage.InputTokens, &r.Usage.OutputTokens,
		&r.Usage.CacheReadTokens, &r.Usage.CacheWriteTokens, &r.Usage.CostUSD, &r.Model, &r.Error, &result,
		&created, &started, &finished)
	if err != nil {
		return Run{}, err
	}
	r.Request = json.RawMessage(req)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.CreatedAt = time.UnixMilli(created).UTC()
	if started.Valid {
		r.StartedAt = time.UnixMilli(started.Int64).UTC()
	}
	if finished.Valid {
		r.FinishedAt = time.UnixMilli(finished.Int64).UTC()
	}
	return r, nil
}

func getRun(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

// lockRun is getRun inside a write transaction that decides from the
// run's state: on PostgreSQL the row stays locked (FOR NO KEY UPDATE) to
// the end of tx, so two transactions on one run (a Start and a cancel's
// Finish, two workers around a takeover) decide one after the other. On
// SQLite the transaction is the only writer already.
func (s *Store) lockRun(ctx context.Context, tx *sql.Tx, id string) (Run, error) {
	if !s.pg {
		return getRun(ctx, txReader{s, tx}, id)
	}
	r, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE id = ? FOR NO KEY UPDATE", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

// Run reads one run.
func (s *Store) Run(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.readRow(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

// CreateRun durably queues a run and its run.queued event. It returns the
// existing run (created=false) when the owner's idempotency key is already
// bound to a live run, or to a terminal one and IdempotencyTerminal is set.
func (s *Store) CreateRun(ctx context.Context, nr NewRun) (run Run, created bool, ev event.Event, err error) {
	err = s.groupTx(ctx, func(tx *sql.Tx) error {
		if nr.IdempotencyKey != "" {
			if s.pg {
				// Two requests with one key decide one after the other:
				// the second finds the first's run.
				if _, err := s.exec(ctx, tx, "SELECT pg_advisory_xact_lock(hashtext('delta.idempotency'), hashtext(?))", nr.Owner+"\n"+nr.IdempotencyKey); err != nil {
					return err
				}
			}
			existing, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE owner = ? AND idempotency_key = ?", nr.Owner, nr.IdempotencyKey))
			switch {
			case err == nil && (!Terminal(existing.Status) || nr.IdempotencyTerminal):
				run = existing
				return nil
			case err == nil:
				// A terminal run frees its key: this dispatch runs fresh.
				if _, err := s.exec(ctx, tx, "UPDATE runs SET idempotency_key = NULL WHERE seq = ?", existing.Seq); err != nil {
					return err
				}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		sessionID := nr.SessionID
		if nr.PreviousID != "" {
			prev, err := getRun(ctx, tx, nr.PreviousID)
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%s: %w", nr.PreviousID, ErrUnknownPrevious)
			}
			if err != nil {
				return err
			}
			var owner string
			if err := tx.QueryRowContext(ctx, "SELECT owner FROM sessions WHERE id = ?", prev.SessionID).Scan(&owner); err != nil {
				return err
			}
			if owner != nr.Owner {
				// Another owner's run is answered exactly as an id that names
				// no run, with the same error, so a caller cannot learn that
				// the id exists.
				return fmt.Errorf("%s: %w", nr.PreviousID, ErrUnknownPrevious)
			}
			sessionID = prev.SessionID
		} else {
			if _, err := s.exec(ctx, tx, "INSERT INTO sessions (id, owner, created_at) VALUES (?, ?, ?)", sessionID, nr.Owner, now()); err != nil {
				return err
			}
		}
		var key any
		if nr.IdempotencyKey != "" {
			key = nr.IdempotencyKey
		}
		var prevID any
		if nr.PreviousID != "" {
			prevID = nr.PreviousID
		}
		// RETURNING the row as stored: no second statement to read it back.
		var err error
		run, err = scanRun(rowScan{s, ctx, tx, `INSERT INTO runs (id, session_id, owner, status, request, previous_id, idempotency_key, created_at)
			VALUES (?, ?, ?, 'queued', ?, ?, ?, ?) RETURNING ` + runCols, []any{nr.ID, sessionID, nr.Owner, string(nr.Request), prevID, key, now()}})
		if err != nil {
			return err
		}
		created = true
		ev = event.New(nr.ID, sessionID, event.RunQueued, nil)
		ev.Owner, ev.TaskID = nr.Owner, taskOf(nr.Request)
		if !s.deferNotifyRuns(tx) {
			if err := s.notifyRuns(ctx, tx); err != nil {
				return err
			}
		}
		// The event last (on PostgreSQL the commit's pipeline writes it
		// anyway, postgres.go).
		return s.insertEvent(ctx, tx, &ev)
	})
	if err != nil {
		return Run{}, false, event.Event{}, fmt.Errorf("create run: %w", err)
	}
	return run, created, ev, nil
}

// Start marks a run as executing. For a queued run it appends input (the
// request's user messages) to the session history in the same transaction
// and emits run.started; for a run left running by a crash it emits
// run.resumed — or, when ResumeRuns already marked it in this process, only
// reads it and returns that run.resumed. A terminal run gives ErrAlreadyFinal.
func (s *Store) Start(ctx context.Context, id string, input []model.Message) (Run, event.Event, error) {
	if m, ok := s.takeResume(id); ok {
		// ResumeRuns already wrote this attempt's run.resumed: a read is
		// enough, unless the run moved on since (then start it as usual).
		r, err := getRun(ctx, s.r, id)
		if err == nil && r.Status == StatusRunning && r.Attempts == m.attempt {
			return r, m.ev, nil
		}
	}
	var run Run
	var ev event.Event
	err := s.groupTx(ctx, func(tx *sql.Tx) error {
		// One statement takes the run, locking its row, and tells which
		// start this is: only a start counts an attempt and appends the
		// input, in the same transaction, and a resume (ResumeRuns) counts
		// one only for a run already running, so the first attempt is
		// exactly the start of a queued run whose input is not yet in
		// the history. A run no longer live is not updated.
		var err error
		run, err = scanRun(rowScan{s, ctx, tx, `UPDATE runs SET status = 'running', input_appended = 1, attempts = attempts + 1,
			started_at = COALESCE(started_at, ?) WHERE id = ? AND status IN ('queued','running') RETURNING ` + runCols, []any{now(), id}})
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := getRun(ctx, txReader{s, tx}, id); err != nil {
				return err // not found
			}
			return ErrAlreadyFinal
		}
		if err != nil {
			return err
		}
		if run.Attempts == 1 {
			ev = event.New(id, run.SessionID, event.RunStarted, nil)
			msgs := make([]storedMessage, len(input))
			for i, m := range input {
				msgs[i] = storedMessage{SessionID: run.SessionID, RunID: id, Message: m}
			}
			if err := s.insertMessages(ctx, tx, msgs); err != nil {
				return err
			}
		} else {
			ev = event.New(id, run.SessionID, event.RunResumed, map[string]int{event.KeyAttempt: run.Attempts})
		}
		ev.Owner, ev.TaskID = run.Owner, run.TaskID()
		return s.insertEvent(ctx, tx, &ev) // last, as in CreateRun
	})
	if err != nil {
		return Run{}, event.Event{}, fmt.Errorf("start run %s: %w", id, err)
	}
	return run, ev, nil
}

// resumeMark is one run ResumeRuns marked: the attempt it counted and the
// run.resumed event it wrote.
type resumeMark struct {
	attempt int
	ev      event.Event
}

// ResumeRuns marks runs left running by an earlier process as resumed, all
// in one transaction: each gets its attempt counted and its run.resumed
// event, exactly as Start would write them one transaction at a time. The
// next Start of each run in this process returns that resume without
// writing again. Runs no longer running are skipped. It returns the events
// written, in the order of ids.
//
// After a crash every in-flight run resumes at once; one transaction instead
// of one per run keeps the single writer free for the runs' own work.
func (s *Store) ResumeRuns(ctx context.Context, ids []string) ([]event.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	marks := make(map[string]resumeMark, len(ids))
	var evs []event.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			var sessionID, owner, request string
			var attempt int
			err := tx.QueryRowContext(ctx, `UPDATE runs SET attempts = attempts + 1 WHERE id = ? AND status = 'running'
				RETURNING session_id, owner, request, attempts`, id).Scan(&sessionID, &owner, &request, &attempt)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			ev := event.New(id, sessionID, event.RunResumed, map[string]int{event.KeyAttempt: attempt})
			ev.Owner, ev.TaskID = owner, taskOf(json.RawMessage(request))
			if err := s.insertEvent(ctx, tx, &ev); err != nil {
				return err
			}
			marks[id] = resumeMark{attempt: attempt, ev: ev}
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resume %d runs: %w", len(ids), err)
	}
	s.resumeMu.Lock()
	if s.resumes == nil {
		s.resumes = make(map[string]resumeMark, len(marks))
	}
	for id, m := range marks {
		s.resumes[id] = m
	}
	s.resumeMu.Unlock()
	return evs, nil
}

// takeResume removes and returns the mark ResumeRuns left for id.
func (s *Store) takeResume(id string) (resumeMark, bool) {
	s.resumeMu.Lock()
	defer s.resumeMu.Unlock()
	m, ok := s.resumes[id]
	if ok {
		delete(s.resumes, id)
	}
	return m, ok
}

// Finish moves a live run to a terminal status with its result and writes
// the one run.finished event in the same transaction, after extra (the
// events that report why it ended: budget.exhausted, error), whose IDs are
// filled in place. Every one gets the run's owner and task, and run.finished
// the run's last turn. A run already terminal gives ErrAlreadyFinal and no
// event at all.
func (s *Store) Finish(ctx context.Context, id, status string, result json.RawMessage, errText string, extra ...event.Event) (event.Event, error) {
	_, ev, err := s.finish(ctx, id, nil, status, fixedResult(result), errText, false, extra)
	return ev, err
}

// FinishReflecting is Finish for a run whose reflection is on: when status
// is done, the same transaction also writes the run's reflection outbox row,
// so the reflection owed survives a crash right after the terminal write.
func (s *Store) FinishReflecting(ctx context.Context, id, status string, result json.RawMessage, errText string, extra ...event.Event) (event.Event, error) {
	_, ev, err := s.finish(ctx, id, nil, status, fixedResult(result), errText, status == StatusDone, extra)
	return ev, err
}

// fixedResult is a result builder that answers result whatever the run.
func fixedResult(result json.RawMessage) func(Run) json.RawMessage {
	return func(Run) json.RawMessage { return result }
}

// FinishStep commits a run's last step (its final reply, as CommitStep
// writes it) and the run's terminal write (as Finish, or FinishReflecting
// when reflect is set) in one transaction: the reply is never stored
// without the end of its run, and the run pays one commit for both. The
// result is built from the run as the transaction holds it, the step
// counted (its steps, usage and model), so the caller reads no run to
// build it. It returns the step's events, as CommitStep does, and
// run.finished.
func (s *Store) FinishStep(ctx context.Context, st Step, status string, result func(Run) json.RawMessage, errText string, reflect bool, extra ...event.Event) ([]event.Event, event.Event, error) {
	return s.finish(ctx, st.RunID, &st, status, result, errText, reflect && status == StatusDone, extra)
}

func (s *Store) finish(ctx context.Context, id string, st *Step, status string, result func(Run) json.RawMessage, errText string, reflect bool, extra []event.Event) ([]event.Event, event.Event, error) {
	if !Terminal(status) {
		return nil, event.Event{}, fmt.Errorf("finish run %s: status %q is not terminal", id, status)
	}
	var fin []event.Event
	var written []bool
	err := s.groupRunTx(ctx, id, func(tx *sql.Tx, r Run) error {
		if Terminal(r.Status) {
			return ErrAlreadyFinal
		}
		if st != nil {
			var err error
			if written, err = s.commitStep(ctx, tx, *st, &r); err != nil {
				return err
			}
			r.Steps++
			r.Usage = r.Usage.Add(st.Usage)
			r.Model = st.Model
		}
		var res any
		if b := result(r); b != nil {
			res = string(b)
		}
		// Nothing reads its result (the row is locked above): on
		// PostgreSQL it travels with the commit's pipeline.
		if err := s.execLater(ctx, tx, `UPDATE runs SET status = ?, result = ?, error = ?, finished_at = ? WHERE id = ?`,
			status, res, errText, now(), id); err != nil {
			return err
		}
		data := map[string]any{event.KeyStatus: status}
		if errText != "" {
			data[event.KeyError] = errText
		}
		ev := event.New(id, r.SessionID, event.RunFinished, data)
		ev.Turn = r.Steps
		spine(r, extra)
		ev.Owner, ev.TaskID = r.Owner, r.TaskID()
		if reflect {
			if err := s.execLater(ctx, tx, "INSERT OR IGNORE INTO reflection_outbox (run_id, created_at) VALUES (?, ?)", id, now()); err != nil {
				return err
			}
		}
		// The events last, as in CreateRun, in one INSERT on SQLite; ev
		// gets its id in fin (on PostgreSQL at the commit).
		fin = []event.Event{ev}
		return s.insertEventLists(ctx, tx, extra, fin)
	})
	if err != nil {
		return nil, event.Event{}, fmt.Errorf("finish run %s: %w", id, err)
	}
	var stepEvents []event.Event
	if st != nil {
		stepEvents = append(writtenEvents(st.Results, written), st.Events...)
	}
	return stepEvents, fin[0], nil
}

// requestCancel marks a live run cancel-requested.
const requestCancel = "UPDATE runs SET cancel_requested = 1 WHERE id = ? AND status IN ('queued','running')"

// requestCancelPG is requestCancel that, in the same statement, notifies
// cancelChannel with the run's id (delivered at its commit), so the worker
// executing the run on the same database interrupts it (RunListener).
const requestCancelPG = "WITH c AS (" + requestCancel + " RETURNING id) SELECT pg_notify('" + cancelChannel + "', id) FROM c"

// RequestCancel records a cancel request for a live run. On PostgreSQL it
// also tells every worker listening, in the same statement.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	q := requestCancel
	if s.pg {
		q = requestCancelPG
	}
	_, err := s.w.ExecContext(ctx, q, id)
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", id, err)
	}
	return nil
}

// scanRuns reads every row of runCols and closes rows.
func scanRuns(rows *sql.Rows) ([]Run, error) {
	return scanAll(rows, "read runs", scanRun)
}

// RunsByStatus lists runs with status in queue order.
func (s *Store) RunsByStatus(ctx context.Context, status string) ([]Run, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+runCols+" FROM runs WHERE status = ? ORDER BY seq", status)
	if err != nil {
		return nil, fmt.Errorf("list %s runs: %w", status, err)
	}
	return scanRuns(rows)
}

// LiveRuns lists running then queued runs, each in queue order, read in one
// statement so a run moving from queued to running is never missed.
func (s *Store) LiveRuns(ctx context.Context) ([]Run, error) {
	rows, err := s.readRows(ctx, "SELECT "+runCols+` FROM runs WHERE status IN ('running','queued')
		ORDER BY status = 'queued', seq`)
	if err != nil {
		return nil, fmt.Errorf("list live runs: %w", err)
	}
	return scanRuns(rows)
}

// RunHead is what a dispatcher needs of a live run to pick it: not its
// request, whose decoding at every wake-up would cost each finishing run
// the bodies of all the others in flight.
type RunHead struct {
	ID, SessionID, Status string
	// Request is the accepted request when the dispatcher read it anyway
	// (a claim returns whole runs), so the run's execution need not read
	// the run again before starting it; empty from LiveHeads.
	Request json.RawMessage
}

// LiveHeads is LiveRuns reading only each run's head.
func (s *Store) LiveHeads(ctx context.Context) ([]RunHead, error) {
	rows, err := s.readRows(ctx, `SELECT id, session_id, status FROM runs WHERE status IN ('running','queued')
		ORDER BY status = 'queued', seq`)
	if err != nil {
		return nil, fmt.Errorf("list live runs: %w", err)
	}
	return scanAll(rows, "list live runs", func(rows scanner) (RunHead, error) {
		var h RunHead
		err := rows.Scan(&h.ID, &h.SessionID, &h.Status)
		return h, err
	})
}

// Counts returns how many runs are running and queued.
func (s *Store) Counts(ctx context.Context) (running, queued int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END), 0), COALESCE(SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END), 0) FROM runs WHERE status IN ('running','queued')`).Scan(&running, &queued)
	if err != nil {
		return 0, 0, fmt.Errorf("count runs: %w", err)
	}
	return running, queued, nil
}

// SessionOwner returns the owner of a session.
func (s *Store) SessionOwner(ctx context.Context, sessionID string) (string, error) {
	var owner string
	err := s.r.QueryRowContext(ctx, "SELECT owner FROM sessions WHERE id = ?", sessionID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	return owner, err
}

func now() int64 { return time.Now().UnixMilli() }

// FirstRun returns run id when it is its session's first run, the one
// that opened it, in one read; ok is false for a later run of the session
// and for a run that does not exist.
func (s *Store) FirstRun(ctx context.Context, id string) (r Run, ok bool, err error) {
	r, err = scanRun(s.readRow(ctx, "SELECT "+runCols+` FROM runs me WHERE id = ?
		AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_id = me.session_id AND r.seq < me.seq)`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("first run of session, %s: %w", id, err)
	}
	return r, true, nil
}
