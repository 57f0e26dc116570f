package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// Intent is a tool call journalled before it runs.
type Intent struct {
	CallID   string
	Name     string
	Args     json.RawMessage
	ReadOnly bool
}

// JournalEntry is one call's journal state.
type JournalEntry struct {
	Intent
	Done    bool
	Result  string
	IsError bool
}

// Step is one successful model call's checkpoint: the assistant message, the
// intents of every tool call it asked for, and its usage, added to the run's
// totals (the step's own usage is in its events).
type Step struct {
	RunID     string
	SessionID string
	Message   model.Message // role assistant
	Intents   []Intent
	Usage     model.Usage
	Model     string
	Events    []event.Event // written in the same transaction; IDs are filled in
	// Call, when set, is the captured model call this step checkpoints
	// (DELTA_CAPTURE_CALLS): it commits with the step or not at all.
	Call *Call
	// Results are tool results the engine held for this checkpoint (the
	// previous turn's read-only calls, which a crash may run again): each
	// is written exactly as CommitResults writes it, before the step's
	// message, so the conversation keeps its order. A call already done
	// keeps its first result and its held result is dropped.
	Results []ToolResult
}

// CommitStep writes a step atomically, its held Results first, and returns
// the events written with IDs: the results' events, then Events.
//
// A step is few statements, whatever it holds: the journal rows of the held
// results, then one INSERT of every message (the results' tool messages,
// then the step's), one of every intent, the run's counters and one INSERT
// of every event (events.go). Each statement run costs the writer a round
// through database/sql and the driver, and the rows of one INSERT land on
// the same pages anyway.
func (s *Store) CommitStep(ctx context.Context, st Step) ([]event.Event, error) {
	return s.CommitSteps(ctx, []Step{st})
}

// CommitSteps writes consecutive steps of one run in one transaction, each
// as CommitStep writes it and in order, all or none, and returns their
// events in order. A run that commits in the background gathers the steps
// that came while its previous commit ran (engine, ahead.go): one
// transaction for them costs the WAL each changed page once, not once a
// step.
func (s *Store) CommitSteps(ctx context.Context, steps []Step) ([]event.Event, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	runID := steps[0].RunID
	for _, st := range steps[1:] {
		if st.RunID != runID {
			return nil, fmt.Errorf("checkpoint steps of run %s: a step of run %s among them", runID, st.RunID)
		}
	}
	written := make([][]bool, len(steps))
	var err error
	if s.pg {
		// The run's row is locked and read as the transaction opens, in
		// its first round trip: the steps' writes then all travel with
		// the commit, two round trips in all.
		err = s.groupRunTx(ctx, runID, func(tx *sql.Tx, r Run) error {
			for i, st := range steps {
				var err error
				if written[i], err = s.commitStep(ctx, tx, st, &r); err != nil {
					return err
				}
				r.Steps++
			}
			return nil
		})
	} else {
		err = s.groupTx(ctx, func(tx *sql.Tx) error {
			for i, st := range steps {
				var err error
				if written[i], err = s.commitStep(ctx, tx, st, nil); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		if len(steps) > 1 {
			return nil, fmt.Errorf("checkpoint %d steps of run %s: %w", len(steps), runID, err)
		}
		return nil, fmt.Errorf("checkpoint step of run %s: %w", runID, err)
	}
	var evs []event.Event
	for i, st := range steps {
		evs = append(evs, writtenEvents(st.Results, written[i])...)
		evs = append(evs, st.Events...)
	}
	return evs, nil
}

// commitStep is CommitStep's writes in tx; it reports which held results
// were written. locked is the run's row as tx locked it, if it did: the
// step's count then comes from it and the counters' update is a write
// nothing waits for; without it the update counts the step and returns it.
func (s *Store) commitStep(ctx context.Context, tx *sql.Tx, st Step, locked *Run) ([]bool, error) {
	if locked != nil && locked.Status != StatusRunning {
		return nil, fmt.Errorf("run %s is not running: %w", st.RunID, ErrAlreadyFinal)
	}
	msgs, evs, written, err := s.finishCalls(ctx, tx, st.Results)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, storedMessage{SessionID: st.SessionID, RunID: st.RunID, Message: st.Message})
	if err := s.insertMessages(ctx, tx, msgs); err != nil {
		return nil, err
	}
	if err := s.insertIntents(ctx, tx, st.RunID, st.Intents); err != nil {
		return nil, err
	}
	u := st.Usage
	counters := []any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, st.Model, st.RunID}
	var step int
	if locked != nil {
		step = locked.Steps + 1
		err = s.execLater(ctx, tx, stepCounters+` WHERE id = ?`, counters...)
	} else {
		err = s.scanRow(ctx, tx, stepCounters+` WHERE id = ? AND status = 'running' RETURNING steps`, counters, &step)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("run %s is not running: %w", st.RunID, ErrAlreadyFinal)
		}
	}
	if err != nil {
		return nil, err
	}
	if st.Call != nil {
		if err := s.insertCall(ctx, tx, st.RunID, step, st.Call); err != nil {
			return nil, err
		}
	}
	return written, s.insertEventLists(ctx, tx, append(evs, st.Events)...)
}

// stepCounters counts a step and its usage on the run's row.
const stepCounters = `UPDATE runs SET steps = steps + 1, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
		cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ?, model = ?`

// insertIntents journals the intents of one step's calls, in one INSERT.
func (s *Store) insertIntents(ctx context.Context, tx *sql.Tx, runID string, intents []Intent) error {
	for len(intents) > 0 {
		chunk := intents[:min(len(intents), rowsPerInsert)]
		intents = intents[len(chunk):]
		args := make([]any, 0, 6*len(chunk))
		at := now()
		for _, in := range chunk {
			args = append(args, runID, in.CallID, in.Name, string(in.Args), in.ReadOnly, at)
		}
		if _, err := s.exec(ctx, tx, intentInserts[len(chunk)], args...); err != nil {
			return fmt.Errorf("journal intents of call %s…: %w", chunk[0].CallID, err)
		}
	}
	return nil
}

var intentInserts = rowInserts(`INSERT INTO tool_journal (run_id, call_id, name, args, read_only, status, created_at) VALUES `, `(?, ?, ?, ?, ?, 'intent', ?)`)

// ToolResult is one finished tool call.
type ToolResult struct {
	RunID     string
	SessionID string
	CallID    string
	Name      string
	Text      string
	IsError   bool
	// BoundArgs, when set, replaces the call's arguments on the assistant
	// message that asked for it (DELTA_TOOL_ARG_MAX_BYTES). The journal keeps
	// the arguments as the model wrote them.
	BoundArgs json.RawMessage
	Events    []event.Event
}

// CommitToolResult records a call's result in the journal, rewrites the
// call's stored arguments when BoundArgs is set, and appends the tool
// message to the conversation, all in one transaction. A call already done
// is left as it is (ErrAlreadyFinal): its first result stands.
func (s *Store) CommitToolResult(ctx context.Context, tr ToolResult) ([]event.Event, error) {
	err := s.groupTx(ctx, func(tx *sql.Tx) error {
		if err := s.finishCall(ctx, tx, tr); err != nil {
			return err
		}
		m := storedMessage{SessionID: tr.SessionID, RunID: tr.RunID, Message: toolMessage(tr)}
		if err := s.insertMessages(ctx, tx, []storedMessage{m}); err != nil {
			return err
		}
		return s.insertEvents(ctx, tx, tr.Events)
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint result of call %s: %w", tr.CallID, err)
	}
	return tr.Events, nil
}

// CommitResults writes several tool results as CommitToolResult writes
// each, then events, in one transaction, and returns the events written
// with IDs. A call already done keeps its first result: its entry and its
// events are skipped, and the others still commit.
func (s *Store) CommitResults(ctx context.Context, results []ToolResult, events []event.Event) ([]event.Event, error) {
	var written []bool
	err := s.groupTx(ctx, func(tx *sql.Tx) error {
		msgs, evs, w, err := s.finishCalls(ctx, tx, results)
		if err != nil {
			return err
		}
		written = w
		if err := s.insertMessages(ctx, tx, msgs); err != nil {
			return err
		}
		return s.insertEventLists(ctx, tx, append(evs, events)...)
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d results: %w", len(results), err)
	}
	return append(writtenEvents(results, written), events...), nil
}

// finishCalls marks the calls of results done in the journal, in order,
// and returns the tool messages of those it finished, their events' lists
// (to be written after them) and which it finished. A call already done is
// skipped: its first result stands, its message and events are not
// written again. The events get their ids in place when they are written,
// on PostgreSQL by the commit (postgres.go): writtenEvents collects them
// after the transaction.
func (s *Store) finishCalls(ctx context.Context, tx *sql.Tx, results []ToolResult) ([]storedMessage, [][]event.Event, []bool, error) {
	var msgs []storedMessage
	var evs [][]event.Event
	written := make([]bool, len(results))
	for i, tr := range results {
		err := s.finishCall(ctx, tx, tr)
		if errors.Is(err, ErrAlreadyFinal) {
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("result of call %s: %w", tr.CallID, err)
		}
		msgs = append(msgs, storedMessage{SessionID: tr.SessionID, RunID: tr.RunID, Message: toolMessage(tr)})
		evs = append(evs, tr.Events)
		written[i] = true
	}
	return msgs, evs, written, nil
}

// writtenEvents is the events of the results finishCalls finished, in
// order.
func writtenEvents(results []ToolResult, written []bool) []event.Event {
	var out []event.Event
	for i, tr := range results {
		if i < len(written) && written[i] {
			out = append(out, tr.Events...)
		}
	}
	return out
}

// toolMessage is the conversation's message of tr.
func toolMessage(tr ToolResult) model.Message {
	return model.Message{Role: model.RoleTool, Content: tr.Text, ToolCallID: tr.CallID, Name: tr.Name}
}

// finishCall records tr's result on its journal entry, which must still be
// an intent (ErrAlreadyFinal otherwise), and rewrites the call's stored
// arguments when BoundArgs is set.
func (s *Store) finishCall(ctx context.Context, tx *sql.Tx, tr ToolResult) error {
	res, err := s.exec(ctx, tx, `UPDATE tool_journal SET status = 'done', result = ?, is_error = ?, finished_at = ?
		WHERE run_id = ? AND call_id = ? AND status = 'intent'`, tr.Text, tr.IsError, now(), tr.RunID, tr.CallID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("call %s: %w", tr.CallID, ErrAlreadyFinal)
	}
	if len(tr.BoundArgs) > 0 {
		return s.rewriteCallArgs(ctx, tx, tr)
	}
	return nil
}

// rewriteCallArgs replaces one call's arguments on the assistant message of
// the run that holds it, leaving its other calls as they are. A call with no
// such message (none exists in practice: the intent and the message commit
// together) is left alone rather than losing the result.
func (s *Store) rewriteCallArgs(ctx context.Context, tx *sql.Tx, tr ToolResult) error {
	if !json.Valid(tr.BoundArgs) {
		return fmt.Errorf("bound arguments of call %s are not JSON", tr.CallID)
	}
	id, _ := json.Marshal(tr.CallID)
	needle := `"id":` + string(id) + `,` // as json.Marshal writes a model.ToolCall
	// Newest first: the call is almost always on the run's latest message.
	q := `SELECT id, tool_calls FROM messages
		WHERE session_id = ? AND run_id = ? AND role = 'assistant' AND instr(tool_calls, ?) > 0 ORDER BY id DESC`
	if s.pg {
		// Two results of one message's calls rewrite it one after the
		// other: neither loses the other's arguments.
		q += " FOR UPDATE"
	}
	rows, err := tx.QueryContext(ctx, q, tr.SessionID, tr.RunID, needle)
	if err != nil {
		return fmt.Errorf("find call %s: %w", tr.CallID, err)
	}
	defer rows.Close() // for the early returns; the checked Close below frees the cursor before the update
	var msgID int64
	var calls []model.ToolCall
	found := false
	for rows.Next() && !found {
		var raw string
		if err := rows.Scan(&msgID, &raw); err != nil {
			return fmt.Errorf("find call %s: %w", tr.CallID, err)
		}
		calls = nil
		if err := json.Unmarshal([]byte(raw), &calls); err != nil {
			return fmt.Errorf("find call %s: message %d: %w", tr.CallID, msgID, err)
		}
		for i := range calls {
			if calls[i].ID == tr.CallID {
				calls[i].Arguments = tr.BoundArgs
				found = true
				break
			}
		}
	}
	// A cursor that stopped on an error (not at the end) must not read as
	// "the call is not there": that would keep the unbounded arguments.
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find call %s: %w", tr.CallID, err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("find call %s: %w", tr.CallID, err)
	}
	if !found {
		return nil
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return fmt.Errorf("bound arguments of call %s: %w", tr.CallID, err)
	}
	if _, err := s.exec(ctx, tx, `UPDATE messages SET tool_calls = ? WHERE id = ?`, string(b), msgID); err != nil {
		return fmt.Errorf("bound arguments of call %s: %w", tr.CallID, err)
	}
	return nil
}

// Journal returns the tool journal of a run by call id.
func (s *Store) Journal(ctx context.Context, runID string) (map[string]JournalEntry, error) {
	rows, err := s.readRows(ctx, `SELECT call_id, name, args, read_only, status, COALESCE(result,''), is_error
		FROM tool_journal WHERE run_id = ?`, runID)
	if err != nil {
		return nil, fmt.Errorf("read journal of %s: %w", runID, err)
	}
	defer rows.Close()
	out := make(map[string]JournalEntry)
	for rows.Next() {
		var e JournalEntry
		var args, status string
		if err := rows.Scan(&e.CallID, &e.Name, &args, &e.ReadOnly, &status, &e.Result, &e.IsError); err != nil {
			return nil, err
		}
		e.Args = json.RawMessage(args)
		e.Done = status == "done"
		out[e.CallID] = e
	}
	return out, rows.Err()
}

// Messages returns a session's active conversation in order: the messages
// no compaction has replaced with its summary (LatestCompaction).
//
// A compaction marks the oldest active messages inactive, so the inactive
// messages of a session are always a prefix of it: the active ones are
// those past the newest inactive one (inactiveUpTo), read as a range of
// messages_session. No index over every message's active flag is kept: an
// index every insert must update costs each step's commit a page.
func (s *Store) Messages(ctx context.Context, sessionID string) ([]model.Message, error) {
	rows, err := s.readRows(ctx, `SELECT role, content, COALESCE(tool_calls,''), COALESCE(tool_call_id,''), COALESCE(name,''), COALESCE(extra,'')
		FROM messages WHERE session_id = ?1 AND id > `+inactiveUpTo+` AND active = 1 ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read messages of %s: %w", sessionID, err)
	}
	return scanAll(rows, "read messages of "+sessionID, func(rows scanner) (model.Message, error) {
		var m model.Message
		var role, calls, extra string
		if err := rows.Scan(&role, &m.Content, &calls, &m.ToolCallID, &m.Name, &extra); err != nil {
			return m, err
		}
		if extra != "" {
			m.Extra = json.RawMessage(extra)
		}
		m.Role = model.Role(role)
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return m, fmt.Errorf("tool calls: %w", err)
			}
		}
		return m, nil
	})
}

// inactiveUpTo is the id of the newest inactive message of the session
// ?1, or 0: one probe of the index of inactive messages (messages_inactive).
const inactiveUpTo = `COALESCE((SELECT max(id) FROM messages WHERE session_id = ?1 AND active = 0), 0)`

// storedMessage is one message to insert with the session and run it
// belongs to.
type storedMessage struct {
	SessionID, RunID string
	model.Message
}

// insertMessages appends msgs to their sessions in order, in one INSERT
// (per rowsPerInsert of them).
func (s *Store) insertMessages(ctx context.Context, tx *sql.Tx, msgs []storedMessage) error {
	at := now()
	for len(msgs) > 0 {
		chunk := msgs[:min(len(msgs), rowsPerInsert)]
		msgs = msgs[len(chunk):]
		args := make([]any, 0, 9*len(chunk))
		for _, sm := range chunk {
			m := sm.Message
			var calls, callID, name, extra any
			if len(m.Extra) > 0 {
				extra = string(m.Extra)
			}
			if len(m.ToolCalls) > 0 {
				b, err := json.Marshal(m.ToolCalls)
				if err != nil {
					return err
				}
				calls = string(b)
			}
			if m.ToolCallID != "" {
				callID = m.ToolCallID
			}
			if m.Name != "" {
				name = m.Name
			}
			if m.Role != model.RoleUser && m.Role != model.RoleAssistant && m.Role != model.RoleTool {
				return errors.New("insert message: role " + string(m.Role) + " is not stored")
			}
			args = append(args, sm.SessionID, sm.RunID, string(m.Role), m.Content, calls, callID, name, extra, at)
		}
		if _, err := s.exec(ctx, tx, messageInserts[len(chunk)], args...); err != nil {
			return err
		}
		s.recallPending.Add(int64(len(chunk)))
	}
	return nil
}

var messageInserts = rowInserts(`INSERT INTO messages (session_id, run_id, role, content, tool_calls, tool_call_id, name, extra, created_at) VALUES `,
	`(?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// rowsPerInsert bounds the rows of one multi-row INSERT: each count up to
// it is a statement text of its own, prepared once.
const rowsPerInsert = 16

// rowInserts returns, at index n (1 to rowsPerInsert), the INSERT that
// begins with head (ending in VALUES) and gives n rows of the form row.
func rowInserts(head, row string) []string {
	out := make([]string, rowsPerInsert+1)
	var b strings.Builder
	b.WriteString(head)
	for n := 1; n <= rowsPerInsert; n++ {
		if n > 1 {
			b.WriteString(", ")
		}
		b.WriteString(row)
		out[n] = b.String()
	}
	return out
}

// FinalReply reports whether the newest message of a session is an
// assistant reply of runID that asks for no tool calls: a final answer
// already checkpointed, which a resumed run finishes from instead of
// calling the model again.
func (s *Store) FinalReply(ctx context.Context, sessionID, runID string) (text string, ok bool, err error) {
	var run, role, calls string
	err = s.r.QueryRowContext(ctx, `SELECT run_id, role, content, COALESCE(tool_calls,'') FROM messages
		WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID).Scan(&run, &role, &text, &calls)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read final reply of run %s: %w", runID, err)
	}
	if run != runID || role != string(model.RoleAssistant) || (calls != "" && calls != "null" && calls != "[]") {
		return "", false, nil
	}
	return text, true, nil
}
