package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/deltaharness/delta/internal/event"
)

// The promotion outbox holds recurring lessons owed to the product's shared
// stores. Which lessons qualify and where they go is decided by the caller
// (package memory); the store stages a row in the transaction that records
// the memory that made the lesson recur, and records each attempt's outcome
// in one transaction with its event, so the outbox and the events never
// disagree after a crash.

// Promotion targets.
const (
	PromotionCurated    = "curated"    // facts, preferences, pitfalls: the curated write tool
	PromotionCapability = "capability" // procedures: the skill registry
)

// Promotion states. Staged and claimed rows are due; sent and failed are
// final.
const (
	PromotionStaged  = "staged"
	PromotionClaimed = "claimed" // an attempt started; in doubt after a crash
	PromotionSent    = "sent"
	PromotionFailed  = "failed" // terminal: every attempt failed
)

// PromotionStage is a lesson to stage: the caller's decision, made from the
// memory row as the reflection's transaction left it.
type PromotionStage struct {
	Key     string // the idempotency key; a key staged before is not staged again
	Target  string // PromotionCurated or PromotionCapability
	Adapter string // the bound tool or tool family
}

// Promotion is one outbox row.
type Promotion struct {
	ID         int64
	Key        string
	MemoryID   int64 // 0 once the memory row was evicted
	Target     string
	Adapter    string
	Namespace  string
	AgentID    string
	Scope      string
	TaskType   string
	Kind       string
	Content    string
	Confidence float64
	Rubric     string
	Runs       int
	RunID      string
	State      string
	Attempts   int
	LastError  string
	Result     string
	Created    time.Time
	Updated    time.Time
}

const promotionCols = `id, key, COALESCE(memory_id, 0), target, adapter, namespace, agent_id, scope, task_type, kind, content,
	confidence, rubric, runs, run_id, state, attempts, last_error, result, created_at, updated_at`

func scanPromotion(sc scanner) (Promotion, error) {
	var p Promotion
	var created, updated int64
	err := sc.Scan(&p.ID, &p.Key, &p.MemoryID, &p.Target, &p.Adapter, &p.Namespace, &p.AgentID, &p.Scope, &p.TaskType,
		&p.Kind, &p.Content, &p.Confidence, &p.Rubric, &p.Runs, &p.RunID, &p.State, &p.Attempts, &p.LastError, &p.Result,
		&created, &updated)
	p.Created, p.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return p, err
}

// stagePromotion inserts the row for st unless its key is staged already,
// protects the memory row from the per-identity cap while it is owed, and
// returns the promotion.staged event (nil when nothing was staged).
func (s *Store) stagePromotion(ctx context.Context, tx *sql.Tx, m Memory, runID string, st PromotionStage, at time.Time) (*event.Event, error) {
	res, err := s.exec(ctx, tx, `INSERT OR IGNORE INTO promotion_outbox (key, memory_id, target, adapter, namespace, agent_id,
		scope, task_type, kind, content, confidence, rubric, runs, run_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.Key, m.ID, st.Target, st.Adapter, m.Namespace, m.AgentID, m.Scope, m.TaskType, m.Kind, m.Content, m.Confidence,
		m.Rubric, m.Runs, runID, at.UnixMilli(), at.UnixMilli())
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, nil
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	if _, err := s.exec(ctx, tx, "UPDATE memories SET protected = 1 WHERE id = ?", m.ID); err != nil {
		return nil, err
	}
	e := event.New(runID, "", event.PromotionStaged, map[string]any{
		event.KeyPromotionID: id, event.KeyMemoryID: m.ID, "target": st.Target, "adapter": st.Adapter,
		event.KeyKind: m.Kind, event.KeyRuns: m.Runs,
	})
	return &e, nil
}

// PromotionsDue lists the staged and claimed rows, oldest first. A claimed
// row is one whose attempt a crash or shutdown interrupted: it is due again.
func (s *Store) PromotionsDue(ctx context.Context) ([]Promotion, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+promotionCols+" FROM promotion_outbox WHERE state IN (?, ?) ORDER BY id",
		PromotionStaged, PromotionClaimed)
	if err != nil {
		return nil, fmt.Errorf("promotions due: %w", err)
	}
	return collectPromotions(rows)
}

// Promotions lists every row, oldest first (inspection and tests).
func (s *Store) Promotions(ctx context.Context) ([]Promotion, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+promotionCols+" FROM promotion_outbox ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list promotions: %w", err)
	}
	return collectPromotions(rows)
}

func collectPromotions(rows *sql.Rows) ([]Promotion, error) {
	return scanAll(rows, "read promotions", scanPromotion)
}

// ErrNotDue means the promotion is sent or failed already.
var ErrNotDue = errors.New("promotion not due")

// ClaimPromotion counts one attempt at promotion id and marks it claimed,
// committed before the remote call, so an attempt a crash interrupted still
// counts toward the limit. A row that is not due gives ErrNotDue.
func (s *Store) ClaimPromotion(ctx context.Context, id int64, at time.Time) (Promotion, error) {
	var p Promotion
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE promotion_outbox SET state = ?, attempts = attempts + 1, updated_at = ?
			WHERE id = ? AND state IN (?, ?)`, PromotionClaimed, at.UnixMilli(), id, PromotionStaged, PromotionClaimed)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrNotDue
		}
		p, err = scanPromotion(tx.QueryRowContext(ctx, "SELECT "+promotionCols+" FROM promotion_outbox WHERE id = ?", id))
		return err
	})
	if err != nil {
		return Promotion{}, fmt.Errorf("claim promotion %d: %w", id, err)
	}
	return p, nil
}

// PromotionOutcome is what one attempt came to.
type PromotionOutcome struct {
	ID          int64
	Err         string // "" when the tool accepted the promotion
	Result      string // the tool's answer, bounded by the caller
	MaxAttempts int    // a failure at this many attempts is terminal
	At          time.Time
}

// FinishPromotion records an attempt's outcome in one transaction with its
// event: sent, staged again for a later drain, or failed for good once the
// attempts reach MaxAttempts. A final row releases its memory row's cap
// protection. A row that is not claimed gives ErrNotDue and changes nothing.
func (s *Store) FinishPromotion(ctx context.Context, o PromotionOutcome) (event.Event, error) {
	var e event.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		p, err := scanPromotion(tx.QueryRowContext(ctx, "SELECT "+promotionCols+" FROM promotion_outbox WHERE id = ?", o.ID))
		if err != nil {
			return err
		}
		if p.State != PromotionClaimed {
			return ErrNotDue
		}
		state, name := PromotionSent, event.PromotionSent
		data := map[string]any{event.KeyPromotionID: p.ID, "target": p.Target, "adapter": p.Adapter, "attempts": p.Attempts}
		switch {
		case o.Err == "":
		case p.Attempts >= o.MaxAttempts:
			state, name, data[event.KeyError] = PromotionFailed, event.PromotionTerminal, o.Err
		default:
			state, name, data[event.KeyError] = PromotionStaged, event.PromotionFailed, o.Err
		}
		if _, err := s.exec(ctx, tx, `UPDATE promotion_outbox SET state = ?, last_error = ?, result = ?, updated_at = ? WHERE id = ?`,
			state, o.Err, o.Result, o.At.UnixMilli(), p.ID); err != nil {
			return err
		}
		if state != PromotionStaged && p.MemoryID != 0 {
			if _, err := s.exec(ctx, tx, "UPDATE memories SET protected = 0 WHERE id = ?", p.MemoryID); err != nil {
				return err
			}
		}
		e = event.New(p.RunID, "", name, data)
		evs := []event.Event{e}
		if run, err := getRun(ctx, tx, p.RunID); err == nil {
			evs[0].SessionID = run.SessionID
			spine(run, evs)
		}
		if err := s.insertEvents(ctx, tx, evs); err != nil {
			return err
		}
		e = evs[0]
		return nil
	})
	if err != nil {
		return event.Event{}, fmt.Errorf("finish promotion %d: %w", o.ID, err)
	}
	return e, nil
}

// PromotionCounts reports the outbox rows by state.
func (s *Store) PromotionCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{PromotionStaged: 0, PromotionClaimed: 0, PromotionSent: 0, PromotionFailed: 0}
	rows, err := s.r.QueryContext(ctx, "SELECT state, COUNT(*) FROM promotion_outbox GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("promotion counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("promotion counts: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}
