package engine

import (
	"context"
	"encoding/json"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// The Inspect* reads below are unscoped (every owner) and only for routes
// behind the inspection gate. Every text they return has passed through
// the read-time redaction: registered vault values, then credential
// shapes. The database keeps the original bytes.

func (s *Service) redactRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	// The markers carry no quote or backslash, so JSON stays JSON.
	return json.RawMessage(s.engine.redactRead(string(b)))
}

// InspectFirstEvent is the id of the oldest stored event of any of the
// runs, 0 when none has one.
func (s *Service) InspectFirstEvent(ctx context.Context, runIDs []string) (int64, error) {
	return s.store.FirstEventOf(ctx, runIDs)
}

// InspectRuns reads one page of runs of every owner, newest first.
func (s *Service) InspectRuns(ctx context.Context, f store.RunFilter) ([]store.RunRow, bool, error) {
	rows, more, err := s.store.ListRuns(ctx, f)
	for i := range rows {
		rows[i].Request = s.redactRaw(rows[i].Request)
		rows[i].Result = s.redactRaw(rows[i].Result)
		rows[i].Error = s.engine.redactRead(rows[i].Error)
	}
	return rows, more, err
}

// InspectSessions reads one page of sessions, most recently active first.
func (s *Service) InspectSessions(ctx context.Context, before int64, limit int) ([]store.SessionRow, bool, error) {
	return s.store.Sessions(ctx, before, limit)
}

// InspectCalls returns a run's captured model calls, redacted.
func (s *Service) InspectCalls(ctx context.Context, runID string) ([]store.Call, error) {
	calls, err := s.store.Calls(ctx, runID)
	for i := range calls {
		calls[i].Request = s.redactRaw(calls[i].Request)
		calls[i].Response = s.redactRaw(calls[i].Response)
	}
	return calls, err
}

// InspectMessages returns the messages a run added to its session, redacted.
func (s *Service) InspectMessages(ctx context.Context, runID string) ([]model.Message, error) {
	msgs, err := s.store.RunMessages(ctx, runID)
	for i := range msgs {
		msgs[i].Content = s.engine.redactRead(msgs[i].Content)
		for j := range msgs[i].ToolCalls {
			msgs[i].ToolCalls[j].Arguments = s.redactRaw(msgs[i].ToolCalls[j].Arguments)
		}
	}
	return msgs, err
}

// InspectJournal returns a run's tool journal, redacted.
func (s *Service) InspectJournal(ctx context.Context, runID string) ([]store.JournalRow, error) {
	rows, err := s.store.RunJournal(ctx, runID)
	for i := range rows {
		rows[i].Args = s.redactRaw(rows[i].Args)
		rows[i].Result = s.engine.redactRead(rows[i].Result)
	}
	return rows, err
}

// InspectEvents reads stored events of every owner matching f, redacted.
// Only for routes behind the inspection gate.
func (s *Service) InspectEvents(ctx context.Context, f store.EventFilter) ([]event.Event, error) {
	evs, err := s.store.Events(ctx, f)
	for i := range evs {
		evs[i] = s.InspectEvent(evs[i])
	}
	return evs, err
}

// InspectFollow subscribes to live events of every owner accepted by filter
// (nil = all). Only for routes behind the inspection gate; the caller passes
// each event through InspectEvent before it leaves the process.
func (s *Service) InspectFollow(buf int, filter func(event.Event) bool) *Live {
	return s.subscribe(buf, filter)
}

// InspectEvent is e with its data redacted as every inspection read is. A
// streamed text delta is redacted piece by piece, so a secret split across
// two deltas can pass; the stored events it adds up to are redacted whole.
func (s *Service) InspectEvent(e event.Event) event.Event {
	e.Data = s.redactRaw(e.Data)
	return e
}

// InspectRunEvents reads a run's stored events after since, redacted.
func (s *Service) InspectRunEvents(ctx context.Context, runID string, since int64, limit int) ([]event.Event, error) {
	evs, err := s.store.Events(ctx, store.EventFilter{RunID: runID, Since: since, Limit: limit})
	for i := range evs {
		evs[i] = s.InspectEvent(evs[i])
	}
	return evs, err
}

// Capturing reports whether model calls are being captured.
func (s *Service) Capturing() bool { return s.engine.o.CaptureCalls }

// InspectMemories lists governed memory rows with their provenance, newest
// confirmation first (at most limit), content redacted.
func (s *Service) InspectMemories(ctx context.Context, limit int) ([]store.MemoryRecord, error) {
	recs, err := s.store.MemoryRecords(ctx, limit)
	for i := range recs {
		recs[i].Content = s.engine.redactRead(recs[i].Content)
		recs[i].Aliases = s.engine.redactRead(recs[i].Aliases)
	}
	return recs, err
}
