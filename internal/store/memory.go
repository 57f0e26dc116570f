package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// The memories table is governed local memory: the lessons reflection
// distilled, keyed by identity and normalized content. The rules that
// decide what may be written (confidence floor, size, scope) live with the
// caller; the store keeps the rows, their provenance, the per-identity cap
// and the reflection outbox, each change in one transaction.

// Memory scopes.
const (
	MemoryScopeAgent    = "agent"
	MemoryScopeUser     = "user"
	MemoryScopeTaskType = "task_type"
	MemoryScopeOrg      = "org"
)

// RubricCorrection is the rubric of a lesson learned from a trusted
// human-review disposition; other lessons carry RubricTask.
const (
	RubricTask       = "task"
	RubricCorrection = "correction"
)

// MemoryCap is how many evictable rows one identity keeps: past it the
// least confident, longest unused rows are dropped.
const MemoryCap = 200

// MemoryKey is one identity memory rows belong to. UserID is set only for
// the user scope.
type MemoryKey struct {
	Namespace string
	AgentID   string
	Scope     string
	UserID    string
	TaskType  string
}

// Memory is one governed memory row.
type Memory struct {
	ID int64
	MemoryKey
	Kind       string
	Content    string
	Aliases    string
	Confidence float64
	Rubric     string
	Untrusted  bool // every producing run had read untrusted tool output
	Runs       int  // distinct producing runs
	Uses       int  // times recalled
	Protected  bool
	Created    time.Time
	Confirmed  time.Time
	Used       time.Time
}

// Held reports whether the row waits for a second distinct run before it
// counts: it came only from runs that read untrusted tool output, so one
// run's poisoned input cannot make it a recalled or promotable lesson.
func (m Memory) Held() bool { return m.Untrusted && m.Runs < 2 }

// MemoryWrite is one artifact to store: a new row, or a confirmation of the
// row with the same identity and normalized content.
type MemoryWrite struct {
	Key        MemoryKey
	Kind       string
	Content    string
	Norm       string
	Aliases    string
	Confidence float64
	Rubric     string
	Untrusted  bool
	RunID      string
	At         time.Time
}

// MemoryPut is what a write did.
type MemoryPut struct {
	Memory  Memory
	Created bool // a new row
	NewRun  bool // the run was not yet among the row's producers
	Evicted int  // rows dropped by the per-identity cap
}

// Provenance is one producing run of a memory row.
type Provenance struct {
	RunID      string
	Confidence float64
	Rubric     string
	Untrusted  bool
	Created    time.Time
}

const memoryCols = `id, namespace, agent_id, scope, user_id, task_type, kind, content, aliases, confidence, rubric,
	untrusted, runs, uses, protected, created_at, confirmed_at, used_at`

func scanMemory(sc scanner) (Memory, error) {
	var m Memory
	var created, confirmed, used int64
	err := sc.Scan(&m.ID, &m.Namespace, &m.AgentID, &m.Scope, &m.UserID, &m.TaskType, &m.Kind, &m.Content, &m.Aliases,
		&m.Confidence, &m.Rubric, &m.Untrusted, &m.Runs, &m.Uses, &m.Protected, &created, &confirmed, &used)
	m.Created, m.Confirmed, m.Used = time.UnixMilli(created).UTC(), time.UnixMilli(confirmed).UTC(), time.UnixMilli(used).UTC()
	return m, err
}

// PutMemory stores w in one transaction.
func (s *Store) PutMemory(ctx context.Context, w MemoryWrite) (MemoryPut, error) {
	var put MemoryPut
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		put, err = s.putMemory(ctx, tx, w)
		return err
	})
	if err != nil {
		return MemoryPut{}, fmt.Errorf("put memory: %w", err)
	}
	return put, nil
}

func (s *Store) putMemory(ctx context.Context, tx *sql.Tx, w MemoryWrite) (MemoryPut, error) {
	k := w.Key
	at := w.At.UnixMilli()
	var put MemoryPut
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM memories WHERE namespace = ? AND agent_id = ? AND scope = ? AND user_id = ?
		AND task_type = ? AND norm = ?`, k.Namespace, k.AgentID, k.Scope, k.UserID, k.TaskType, w.Norm).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res, err := s.exec(ctx, tx, `INSERT INTO memories (namespace, agent_id, scope, user_id, task_type, kind, content, norm,
			aliases, confidence, rubric, untrusted, runs, uses, created_at, confirmed_at, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?)`,
			k.Namespace, k.AgentID, k.Scope, k.UserID, k.TaskType, w.Kind, w.Content, w.Norm, w.Aliases, w.Confidence,
			w.Rubric, w.Untrusted, at, at, at)
		if err != nil {
			return put, err
		}
		if id, err = res.LastInsertId(); err != nil {
			return put, err
		}
		put.Created, put.NewRun = true, true
		if _, err := s.exec(ctx, tx, `INSERT INTO memory_provenance (memory_id, run_id, confidence, rubric, untrusted, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, id, w.RunID, w.Confidence, w.Rubric, w.Untrusted, at); err != nil {
			return put, err
		}
	case err != nil:
		return put, err
	default:
		res, err := s.exec(ctx, tx, `INSERT OR IGNORE INTO memory_provenance (memory_id, run_id, confidence, rubric, untrusted, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, id, w.RunID, w.Confidence, w.Rubric, w.Untrusted, at)
		if err != nil {
			return put, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			put.NewRun = true
			// untrusted * ? is AND of two 0/1 flags, in SQL both backends speak.
			// The rubric is the confirming run's unless the row's is the
			// correction rubric: a lesson a human review produced stays
			// one when a plain run repeats it (its confidence, kept at the
			// larger, still carries the correction's floor, and a
			// promotion's brief names it post-review); each run's own
			// rubric is in the provenance.
			if _, err := s.exec(ctx, tx, `UPDATE memories SET runs = runs + 1, confidence = MAX(confidence, ?),
				rubric = CASE WHEN rubric = ? THEN rubric ELSE ? END,
				untrusted = untrusted * ?, confirmed_at = ?, used_at = MAX(used_at, ?) WHERE id = ?`,
				w.Confidence, RubricCorrection, w.Rubric, w.Untrusted, at, at, id); err != nil {
				return put, err
			}
		}
	}
	// The cap: the identity's evictable rows past MemoryCap, least confident
	// and longest unused first, never the row just written.
	res, err := s.exec(ctx, tx, `DELETE FROM memories WHERE id IN (
		SELECT id FROM memories WHERE namespace = ? AND agent_id = ? AND scope = ? AND user_id = ? AND task_type = ?
			AND protected = 0 AND id != ?
		ORDER BY confidence DESC, used_at DESC, id DESC LIMIT -1 OFFSET ?)`,
		k.Namespace, k.AgentID, k.Scope, k.UserID, k.TaskType, id, MemoryCap-1)
	if err != nil {
		return put, err
	}
	n, _ := res.RowsAffected()
	put.Evicted = int(n)
	put.Memory, err = scanMemory(tx.QueryRowContext(ctx, "SELECT "+memoryCols+" FROM memories WHERE id = ?", id))
	return put, err
}

// MemoryView is who is recalling: the rows visible to one run.
type MemoryView struct {
	Namespace string
	AgentID   string
	UserID    string    // "" for a userless run
	TaskType  string    // "" when the run declares none
	Since     time.Time // rows unused since before it are not recalled
}

// VisibleMemories returns the rows a run with identity v may recall: the
// agent's rows, the current user's private rows, and the rows of the run's
// task type, each the agent's own (and legacy rows with no agent). A
// task type is shared across the agent's threads and users, not across the
// agents of a namespace: local memory is scoped by the agent ID, so agent
// B does not recall what agent A learned about a job. Another user's rows,
// another agent's rows and org rows are never among them, nor rows unused
// since v.Since, nor held rows. Only
// what recall ranks and shows is read: ID, Scope, Kind, Content, Aliases,
// Confidence, Untrusted, Runs, Uses and Confirmed (the rest stay zero).
func (s *Store) VisibleMemories(ctx context.Context, v MemoryView) ([]Memory, error) {
	since := v.Since.UnixMilli()
	variant := 0
	args := []any{v.Namespace, v.AgentID, since}
	if v.UserID != "" {
		variant |= 1
		args = append(args, v.Namespace, v.AgentID, v.UserID, since)
	}
	if v.TaskType != "" {
		variant |= 2
		args = append(args, v.Namespace, v.AgentID, v.TaskType, since)
	}
	q := recallQueries[variant]
	st := s.rstmts.get(q) //nolint:sqlclosecheck // cached: Store.Close closes it
	if st == nil {
		s.rstmts.prepareWanted(ctx, s.r)
		st = s.rstmts.get(q) //nolint:sqlclosecheck // cached: Store.Close closes it
	}
	var rows *sql.Rows
	var err error
	if st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = s.r.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("visible memories: %w", err)
	}
	defer rows.Close()
	out := make([]Memory, 0, 64)
	for rows.Next() {
		var m Memory
		var uses, confirmed, packed int64
		if err := rows.Scan(&m.ID, &m.Kind, &m.Content, &m.Aliases, &m.Confidence, &uses, &confirmed, &packed); err != nil {
			return nil, fmt.Errorf("visible memories: %w", err)
		}
		m.Scope = [3]string{MemoryScopeAgent, MemoryScopeUser, MemoryScopeTaskType}[packed&3]
		m.Untrusted = packed&4 != 0
		m.Runs = int(packed >> 3)
		m.Uses = int(uses)
		m.Confirmed = time.UnixMilli(confirmed).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("visible memories: %w", err)
	}
	return out, nil
}

// recallQueries are VisibleMemories' queries by variant: bit 0 adds the
// user's rows, bit 1 the task type's. They run through prepared statements
// (recall runs at every session open, and compiling the three-branch query
// each time cost about as much as running it). Each sqlite column read
// costs a few driver calls per row, so the small fields travel packed in
// one integer: runs*8 + untrusted*4 + the branch (0 agent, 1 user, 2 task
// type), which names the scope.
var recallQueries = func() (qs [4]string) {
	cols := func(branch int) string {
		return fmt.Sprintf("SELECT id, kind, content, aliases, confidence, uses, confirmed_at, runs*8 + untrusted*4 + %d FROM memories", branch)
	}
	const live = ` AND used_at >= ? AND NOT (untrusted = 1 AND runs < 2)`
	for variant := range qs {
		q := cols(0) + " WHERE namespace = ? AND scope = 'agent' AND agent_id IN (?, '')" + live
		if variant&1 != 0 {
			q += " UNION ALL " + cols(1) + " WHERE namespace = ? AND scope = 'user' AND agent_id IN (?, '') AND user_id = ?" + live
		}
		if variant&2 != 0 {
			q += " UNION ALL " + cols(2) + " WHERE namespace = ? AND scope = 'task_type' AND agent_id IN (?, '') AND task_type = ?" + live
		}
		qs[variant] = q
	}
	return qs
}()

func collectMemories(rows *sql.Rows) ([]Memory, error) {
	return scanAll(rows, "read memories", scanMemory)
}

// UseMemories records that the rows were recalled at at: their use count
// and last use, which keep them inside the recall horizon.
func (s *Store) UseMemories(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{at.UnixMilli()}
	for _, id := range ids {
		args = append(args, id)
	}
	q := "UPDATE memories SET uses = uses + 1, used_at = MAX(used_at, ?) WHERE id IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	if _, err := s.w.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("use memories: %w", err)
	}
	return nil
}

// Memories lists every row, oldest first (inspection and tests).
func (s *Store) Memories(ctx context.Context) ([]Memory, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+memoryCols+" FROM memories ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	return collectMemories(rows)
}

// MemoryProvenance lists a row's producing runs, oldest first: which runs,
// with which confidence and rubric.
func (s *Store) MemoryProvenance(ctx context.Context, id int64) ([]Provenance, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT run_id, confidence, rubric, untrusted, created_at FROM memory_provenance
		WHERE memory_id = ? ORDER BY created_at, rowid`, id)
	if err != nil {
		return nil, fmt.Errorf("memory provenance: %w", err)
	}
	return scanAll(rows, "memory provenance", func(rows scanner) (Provenance, error) {
		var p Provenance
		var at int64
		err := rows.Scan(&p.RunID, &p.Confidence, &p.Rubric, &p.Untrusted, &at)
		p.Created = time.UnixMilli(at).UTC()
		return p, err
	})
}

// RecordHydration stores a run's hydration event and, when untrusted (the
// prompt got what the product's tools answered), marks the run as having
// read untrusted input (reason "hydration"), in one transaction.
func (s *Store) RecordHydration(ctx context.Context, e event.Event, untrusted bool) (event.Event, error) {
	evs := []event.Event{e}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		run, err := getRun(ctx, tx, e.RunID)
		if err != nil {
			return err
		}
		if evs[0].SessionID == "" {
			evs[0].SessionID = run.SessionID
		}
		spine(run, evs)
		if untrusted {
			if _, err := s.exec(ctx, tx, `INSERT OR IGNORE INTO run_untrusted_input (run_id, reason, created_at) VALUES (?, 'hydration', ?)`,
				e.RunID, e.Time.UnixMilli()); err != nil {
				return err
			}
		}
		return s.insertEvents(ctx, tx, evs)
	})
	if err != nil {
		return event.Event{}, fmt.Errorf("record hydration of run %s: %w", e.RunID, err)
	}
	return evs[0], nil
}

// MarkUntrustedInput records that a run's prompt carried text from outside
// the operator's control before any tool call of its own, such as the skill
// registry's capability block (an MCP server's answer); reason names the
// source. Marking a run twice keeps the first mark.
func (s *Store) MarkUntrustedInput(ctx context.Context, runID, reason string, at time.Time) error {
	if _, err := s.w.ExecContext(ctx, `INSERT OR IGNORE INTO run_untrusted_input (run_id, reason, created_at) VALUES (?, ?, ?)`,
		runID, reason, at.UnixMilli()); err != nil {
		return fmt.Errorf("mark run %s as having read untrusted input: %w", runID, err)
	}
	return nil
}

// RunUntrustedInput names what made a run's prompt carry untrusted input
// before its own tool calls (RecordHydration's "hydration",
// MarkUntrustedInput's reason: the first one recorded), "" when nothing did.
func (s *Store) RunUntrustedInput(ctx context.Context, runID string) (string, error) {
	var reason string
	err := s.r.QueryRowContext(ctx, "SELECT reason FROM run_untrusted_input WHERE run_id = ?", runID).Scan(&reason)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("run %s read untrusted: %w", runID, err)
	}
	return reason, nil
}

// SessionReads is what a run's prompt may have carried from its session:
// the tools that it and the earlier runs of its session called (their
// results stay in the history, or in a compaction note made from it), and
// the untrusted-input marks of those runs (RecordHydration,
// MarkUntrustedInput), whose answers stay in the history too.
type SessionReads struct {
	Tools []string // distinct tool names, in the order first called
	Marks []string // the marks' reasons, oldest run first
}

// SessionReads reads them for runID: its own calls and marks, and those of
// the runs of its session queued before it.
func (s *Store) SessionReads(ctx context.Context, runID string) (SessionReads, error) {
	var out SessionReads
	var sessionID string
	var seq int64
	if err := s.r.QueryRowContext(ctx, "SELECT session_id, seq FROM runs WHERE id = ?", runID).Scan(&sessionID, &seq); err != nil {
		return out, fmt.Errorf("session reads of run %s: %w", runID, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT m.tool_calls FROM messages m JOIN runs r ON r.id = m.run_id
		WHERE m.session_id = ? AND r.seq <= ? AND m.tool_calls IS NOT NULL AND m.tool_calls != '' ORDER BY m.id`, sessionID, seq)
	if err != nil {
		return out, fmt.Errorf("session reads of run %s: %w", runID, err)
	}
	calls, err := scanAll(rows, "session reads of run "+runID, func(rows scanner) (string, error) {
		var c string
		return c, rows.Scan(&c)
	})
	if err != nil {
		return out, err
	}
	for _, c := range calls {
		var tcs []model.ToolCall
		if err := json.Unmarshal([]byte(c), &tcs); err != nil {
			return out, fmt.Errorf("session reads of run %s: tool calls: %w", runID, err)
		}
		for _, tc := range tcs {
			if !slices.Contains(out.Tools, tc.Name) {
				out.Tools = append(out.Tools, tc.Name)
			}
		}
	}
	rows, err = s.r.QueryContext(ctx, `SELECT u.reason FROM run_untrusted_input u JOIN runs r ON r.id = u.run_id
		WHERE r.session_id = ? AND r.seq <= ? ORDER BY r.seq`, sessionID, seq)
	if err != nil {
		return out, fmt.Errorf("session reads of run %s: %w", runID, err)
	}
	out.Marks, err = scanAll(rows, "session reads of run "+runID, func(rows scanner) (string, error) {
		var r string
		return r, rows.Scan(&r)
	})
	return out, err
}

// MemoryCounts reports the number of memory rows, held rows among them, and
// reflections owed (the outbox).
func (s *Store) MemoryCounts(ctx context.Context) (rows, held, owed int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM memories),
		(SELECT COUNT(*) FROM memories WHERE untrusted = 1 AND runs < 2), (SELECT COUNT(*) FROM reflection_outbox)`).Scan(&rows, &held, &owed)
	if err != nil {
		err = fmt.Errorf("memory counts: %w", err)
	}
	return
}

// ReflectionsOwed lists the runs whose reflection is still owed, oldest
// first.
func (s *Store) ReflectionsOwed(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT run_id FROM reflection_outbox ORDER BY created_at, rowid")
	if err != nil {
		return nil, fmt.Errorf("reflections owed: %w", err)
	}
	return scanAll(rows, "reflections owed", scanString)
}

// Reflection is the outcome of one owed reflection.
type Reflection struct {
	RunID  string
	Usage  model.Usage  // the reflection call's, added to the run's totals
	Write  *MemoryWrite // nil when nothing is stored
	Events []event.Event
	// Stage decides, from the write and the row it left, whether the
	// lesson now recurs enough to be promoted and where to (nil = no
	// promotion). A stage whose key is staged already changes nothing.
	Stage func(MemoryWrite, MemoryPut) *PromotionStage
}

// ErrNotOwed means the run's reflection was already recorded (or never owed).
var ErrNotOwed = errors.New("reflection not owed")

// CompleteReflection records r in one transaction: the usage added to the
// finished run's row, the memory write (and its memory.stored or
// memory.confirmed event after r.Events), the promotion r.Stage decides on
// (and its promotion.staged event), and the outbox row deleted. A
// reflection recorded already gives ErrNotOwed and changes nothing, so a
// reflection redone after a crash is recorded once.
func (s *Store) CompleteReflection(ctx context.Context, r Reflection) (*MemoryPut, []event.Event, error) {
	var put *MemoryPut
	var evs []event.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, "DELETE FROM reflection_outbox WHERE run_id = ?", r.RunID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrNotOwed
		}
		run, err := getRun(ctx, tx, r.RunID)
		if err != nil {
			return err
		}
		u := r.Usage
		if _, err := s.exec(ctx, tx, `UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ?
			WHERE id = ?`, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, r.RunID); err != nil {
			return err
		}
		evs = append(evs, r.Events...)
		if r.Write != nil {
			p, err := s.putMemory(ctx, tx, *r.Write)
			if err != nil {
				return err
			}
			put = &p
			name := event.MemoryConfirmed
			if p.Created {
				name = event.MemoryStored
			}
			if p.Created || p.NewRun {
				evs = append(evs, event.New(r.RunID, run.SessionID, name, map[string]any{
					event.KeyMemoryID: p.Memory.ID, event.KeyScope: p.Memory.Scope, event.KeyKind: p.Memory.Kind,
					event.KeyConfidence: p.Memory.Confidence, event.KeyRuns: p.Memory.Runs, event.KeyHeld: p.Memory.Held(),
				}))
			}
			if r.Stage != nil {
				if st := r.Stage(*r.Write, p); st != nil {
					e, err := s.stagePromotion(ctx, tx, p.Memory, r.RunID, *st, r.Write.At)
					if err != nil {
						return err
					}
					if e != nil {
						evs = append(evs, *e)
					}
				}
			}
		}
		for i := range evs {
			if evs[i].SessionID == "" {
				evs[i].SessionID = run.SessionID
			}
		}
		spine(run, evs)
		return s.insertEvents(ctx, tx, evs)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("complete reflection of run %s: %w", r.RunID, err)
	}
	return put, evs, nil
}

// MemoryRecord is one row with its provenance.
type MemoryRecord struct {
	Memory
	Provenance []Provenance
}

// MemoryRecords lists every row with its provenance, newest confirmation
// first, at most limit rows (the inspection list).
func (s *Store) MemoryRecords(ctx context.Context, limit int) ([]MemoryRecord, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+memoryCols+" FROM memories ORDER BY confirmed_at DESC, id DESC LIMIT ?", limit)
	if err != nil {
		return nil, fmt.Errorf("memory records: %w", err)
	}
	ms, err := collectMemories(rows)
	if err != nil {
		return nil, err
	}
	out := make([]MemoryRecord, 0, len(ms))
	for _, m := range ms {
		prov, err := s.MemoryProvenance(ctx, m.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, MemoryRecord{Memory: m, Provenance: prov})
	}
	return out, nil
}
