package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the streamable HTTP event store.
const (
	// maxSessionEventBytes caps what one MCP session keeps for replay; past
	// it the oldest records go first, those of finished request streams
	// before those of the GET stream.
	maxSessionEventBytes = 4 << 20
	// maxEventBytes caps the whole store; past it the session keeping the
	// most loses its oldest records.
	maxEventBytes = 64 << 20
	// streamOverhead is what an opened stream is counted as before it holds
	// anything, so a session of many small requests is bounded too.
	streamOverhead = 64
)

// eventStore keeps what the streamable HTTP transport sent on each SSE
// stream of each MCP session, so a client whose stream dropped reconnects
// with Last-Event-ID and receives what it missed (the GET notification
// stream and the stream of a request still running alike). It is bounded:
// a stream keeps its last maxRecords records, so one read (a reconnect
// with or without Last-Event-ID) replays at most that many; a session keeps
// at most maxSessionBytes and the store maxBytes. A Last-Event-ID older
// than what is kept is refused (see refuseEventGap) rather than answered
// with a silent hole.
type eventStore struct {
	maxRecords      int
	maxSessionBytes int
	maxBytes        int
	// ownerOf names the bearer principal of a request context.
	ownerOf func(context.Context) string

	mu       sync.Mutex
	bytes    int
	sessions map[string]*sessionEvents
}

type sessionEvents struct {
	owner   string // the bearer principal that opened the session ("" unknown)
	bytes   int
	streams map[string]*eventList
	order   []string // stream ids, oldest first
}

// eventList is one stream's retained records: data[0] has stream index first.
type eventList struct {
	first int
	data  [][]byte
}

var _ mcp.EventStore = (*eventStore)(nil)

func newEventStore(maxRecords, maxSessionBytes, maxBytes int) *eventStore {
	return &eventStore{
		maxRecords:      maxRecords,
		maxSessionBytes: maxSessionBytes,
		maxBytes:        maxBytes,
		ownerOf:         bearerUser,
		sessions:        map[string]*sessionEvents{},
	}
}

// bearerUser is the principal name of an authenticated request context.
func bearerUser(ctx context.Context) string {
	if ti := auth.TokenInfoFromContext(ctx); ti != nil {
		return ti.UserID
	}
	return ""
}

// Open registers a stream. The session's first stream is opened while its
// initialize is served, so the context carries the bearer identity, which
// becomes the session's owner.
func (s *eventStore) Open(ctx context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[sessionID]
	if !ok {
		se = &sessionEvents{owner: s.ownerOf(ctx), streams: map[string]*eventList{}}
		s.sessions[sessionID] = se
	}
	if _, ok := se.streams[streamID]; !ok {
		se.streams[streamID] = &eventList{}
		se.order = append(se.order, streamID)
		se.bytes += streamOverhead
		s.bytes += streamOverhead
	}
	return nil
}

// Append records one event; a stream over maxRecords loses its oldest.
func (s *eventStore) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("event store: unknown MCP session %q", sessionID)
	}
	l, ok := se.streams[streamID]
	if !ok {
		return fmt.Errorf("event store: stream %q of MCP session %q was not opened", streamID, sessionID)
	}
	l.data = append(l.data, data)
	se.bytes += len(data)
	s.bytes += len(data)
	if len(l.data) > s.maxRecords {
		s.dropFirst(se, l)
	}
	for se.bytes > s.maxSessionBytes && s.evictOldest(se, streamID) {
	}
	for s.bytes > s.maxBytes {
		if !s.evictOldest(s.largest(), "") {
			break
		}
	}
	return nil
}

// dropFirst removes a stream's oldest record. Requires s.mu.
func (s *eventStore) dropFirst(se *sessionEvents, l *eventList) {
	n := len(l.data[0])
	l.data[0] = nil
	l.data = l.data[1:]
	l.first++
	se.bytes -= n
	s.bytes -= n
}

// evictOldest removes one record of se, keeping the record just appended
// to keep (the newest of that stream): first from the oldest request
// stream, then from the GET stream (id ""). A request stream emptied this
// way is forgotten, so a resume on it is told its records are gone. It
// reports whether it removed anything. Requires s.mu.
func (s *eventStore) evictOldest(se *sessionEvents, keep string) bool {
	if se == nil {
		return false
	}
	for pass := 0; pass < 2; pass++ {
		for i, id := range se.order {
			if (pass == 0) == (id == "") {
				continue
			}
			l := se.streams[id]
			if len(l.data) == 0 || (id == keep && len(l.data) == 1) {
				continue
			}
			s.dropFirst(se, l)
			if len(l.data) == 0 && id != "" {
				delete(se.streams, id)
				se.order = append(se.order[:i:i], se.order[i+1:]...)
				se.bytes -= streamOverhead
				s.bytes -= streamOverhead
			}
			return true
		}
	}
	return false
}

// largest is the session keeping the most bytes. Requires s.mu.
func (s *eventStore) largest() *sessionEvents {
	var big *sessionEvents
	for _, se := range s.sessions {
		if big == nil || se.bytes > big.bytes {
			big = se
		}
	}
	return big
}

// After yields the records after stream index index (-1: from the start).
// When a record after index is no longer kept it fails with
// mcp.ErrEventsPurged and yields nothing: the transport numbers replayed
// events from index+1, so a partial replay would carry wrong ids. A GET
// without Last-Event-ID therefore never gets here with a gap:
// refuseEventGap resumes it from just before the oldest record kept.
func (s *eventStore) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	var out [][]byte
	var err error
	se, ok := s.sessions[sessionID]
	switch {
	case !ok:
		err = fmt.Errorf("event store: unknown MCP session %q", sessionID)
	default:
		l, ok := se.streams[streamID]
		switch start := index + 1 - l.firstOr(0); {
		case !ok:
			err = fmt.Errorf("stream %q: %w", streamID, mcp.ErrEventsPurged)
		case start < 0:
			err = fmt.Errorf("stream %q after index %d (first kept %d): %w", streamID, index, l.first, mcp.ErrEventsPurged)
		case start < len(l.data):
			out = append(out, l.data[start:]...)
		}
	}
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range out {
			if !yield(d, nil) {
				return
			}
		}
	}
}

func (l *eventList) firstOr(def int) int {
	if l == nil {
		return def
	}
	return l.first
}

// SessionClosed forgets a session's records.
func (s *eventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[sessionID]; ok {
		s.bytes -= se.bytes
		delete(s.sessions, sessionID)
	}
	return nil
}

// gap reports, for a resume of the caller's own session, whether records
// after index on the stream are no longer kept, and the first index kept.
func (s *eventStore) gap(sessionID, owner, streamID string, index int) (firstKept int, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[sessionID]
	if !ok || se.owner != owner {
		return 0, false // the transport answers: unknown session or another principal's
	}
	l, ok := se.streams[streamID]
	if !ok {
		return -1, true
	}
	return l.first, index+1 < l.first
}

// stats returns the number of sessions and bytes kept (tests).
func (s *eventStore) stats() (sessions, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions), s.bytes
}

// parseEventID splits a Last-Event-ID the transport issued: "<stream>_<index>".
func parseEventID(id string) (stream string, index int, ok bool) {
	stream, num, found := strings.Cut(id, "_")
	if !found || strings.Contains(num, "_") {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return stream, n, true
}

// refuseEventGap prepares a GET on the caller's own MCP session. Without
// Last-Event-ID, when the GET stream has dropped records, it resumes the
// request from just before the oldest record kept, so the client receives
// the last maxRecords with their true ids (the transport would otherwise
// number them from 0). With a Last-Event-ID older than what the stream
// keeps it answers HTTP 400 with a JSON error naming the bound and the
// fix, instead of the transport's plain-text one. It reports whether it
// answered.
func refuseEventGap(w http.ResponseWriter, r *http.Request, events *eventStore) bool {
	last := r.Header.Get("Last-Event-ID")
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodGet || sid == "" {
		return false
	}
	if last == "" {
		if first, gone := events.gap(sid, events.ownerOf(r.Context()), "", -1); gone && first > 0 {
			r.Header.Set("Last-Event-ID", fmt.Sprintf("_%d", first-1))
		}
		return false
	}
	stream, index, ok := parseEventID(last)
	if !ok {
		return false // the transport answers a malformed id
	}
	first, gone := events.gap(sid, events.ownerOf(r.Context()), stream, index)
	if !gone {
		return false
	}
	msg := fmt.Sprintf("the events after Last-Event-ID %s are no longer kept (a stream keeps its last %d records", last, events.maxRecords)
	if first >= 0 {
		msg += fmt.Sprintf("; the oldest kept is %s_%d", stream, first)
	}
	msg += "): open the GET stream again without Last-Event-ID to receive those kept, and call tools/list again, since a notification may be among those lost"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "eventsPurged", "message": msg}})
	return true
}
