package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
)

// RecallWindow is how many of a session's newest messages recall searches.
// The bound keeps a search an index probe on a session of any length.
const RecallWindow = 5000

// RecallHit is one message recall found.
type RecallHit struct {
	ID         int64 // message id, increasing through the session
	RunID      string
	Role       string
	Name       string // the tool's name, on a tool result
	ToolCallID string // on a tool result
	Content    string
	ToolCalls  []model.ToolCall // on an assistant message that called tools
	Phrase     bool             // the whole query stands in it as a phrase
	Time       time.Time
}

// RecallQuery is one recall search.
type RecallQuery struct {
	SessionID string
	Text      string
	Limit     int    // 0 = 5
	RunID     string // the asking run: its own request is left out (the model has it in view)
}

// Recall searches the newest RecallWindow messages of one session for the
// words of q.Text and returns at most q.Limit messages, best first.
//
// Any word of the query qualifies a message, a longer word also as a prefix
// ("deploy" finds "deployment"); function words are dropped; case and Latin diacritics are
// folded; rarer words weigh more (BM25). Messages holding the query's words
// as one phrase come before all others. Another session's messages are
// never returned. A query with no searchable word returns nothing.
func (s *Store) Recall(ctx context.Context, q RecallQuery) ([]RecallHit, error) {
	sessionID, limit := q.SessionID, q.Limit
	if limit <= 0 {
		limit = 5
	}
	words := recallWords(q.Text)
	if len(words) == 0 {
		return nil, nil
	}
	if s.pg {
		return s.recallPG(ctx, q, words, limit)
	}
	if err := s.catchUpRecall(ctx); err != nil {
		return nil, err
	}
	floor, ceiling, err := s.recallWindow(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	var hits []RecallHit
	seen := map[int64]bool{}
	if len(words) > 1 {
		phrase := `body : "` + strings.Join(words, " ") + `"`
		if hits, err = s.recallMatch(ctx, q, phrase, floor, ceiling, limit, hits, seen, true); err != nil {
			return nil, err
		}
	}
	terms := contentWords(words)
	if len(terms) == 0 && len(words) == 1 {
		terms = words // a lone function word is searched as it is
	}
	if len(terms) > 1 {
		if terms, err = s.dropCommonTerms(ctx, terms); err != nil {
			return nil, err
		}
	}
	if len(hits) < limit && len(terms) > 0 {
		parts := make([]string, len(terms))
		for i, w := range terms {
			parts[i] = `"` + w + `"`
			if prefixable(w) {
				parts[i] += "*"
			}
		}
		if hits, err = s.recallMatch(ctx, q, "body : ("+strings.Join(parts, " OR ")+")", floor, ceiling, limit, hits, seen, false); err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// Common-word pruning: a query word found in at least commonDocs messages
// and in commonRatio times as many as the query's rarest word is left out
// of the any-word search. Its BM25 weight is next to nothing, while reading
// its posting list is most of the probe's cost.
const (
	commonDocs  = 2000
	commonRatio = 20
)

// dropCommonTerms returns terms without the ones too common to help. At
// least the rarest term always stays.
func (s *Store) dropCommonTerms(ctx context.Context, terms []string) ([]string, error) {
	if s.pg {
		docs, err := s.termDocsPG(ctx, terms)
		if err != nil {
			return nil, err
		}
		return keepRare(terms, docs), nil
	}
	docs := make([]int64, len(terms))
	rarest := int64(-1)
	for i, w := range terms {
		q, args := `SELECT COALESCE(sum(doc), 0) FROM messages_fts_vocab WHERE term = ?`, []any{w}
		if prefixable(w) {
			q, args = `SELECT COALESCE(sum(doc), 0) FROM messages_fts_vocab WHERE term >= ? AND term < ?`, []any{w, w + "\U0010FFFF"}
		}
		if err := s.r.QueryRowContext(ctx, q, args...).Scan(&docs[i]); err != nil {
			return nil, fmt.Errorf("recall: word frequency: %w", err)
		}
		if docs[i] > 0 && (rarest < 0 || docs[i] < rarest) {
			rarest = docs[i]
		}
	}
	if rarest < 0 {
		return terms, nil // no word is indexed: the search finds nothing either way
	}
	return keepRare(terms, docs), nil
}

// keepRare is the pruning rule over terms and how many messages hold each.
func keepRare(terms []string, docs []int64) []string {
	rarest := int64(-1)
	for _, d := range docs {
		if d > 0 && (rarest < 0 || d < rarest) {
			rarest = d
		}
	}
	if rarest < 0 {
		return terms
	}
	var kept []string
	for i, w := range terms {
		if docs[i] < commonDocs || docs[i] < commonRatio*rarest {
			kept = append(kept, w)
		}
	}
	return kept
}

// recallWindow is the range of message ids holding the session's newest
// RecallWindow messages (both probes of the session index).
func (s *Store) recallWindow(ctx context.Context, sessionID string) (floor, ceiling int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT id FROM messages WHERE session_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2), 0),
		COALESCE((SELECT id FROM messages WHERE session_id = ?1 ORDER BY id DESC LIMIT 1), 0)`,
		sessionID, RecallWindow-1).Scan(&floor, &ceiling)
	if err != nil {
		return 0, 0, fmt.Errorf("recall in %s: window: %w", sessionID, err)
	}
	return floor, ceiling, nil
}

// recallMatch appends to hits, up to limit in all, the messages of the
// session's window that match the FTS5 expression, skipping those already seen.
func (s *Store) recallMatch(ctx context.Context, q RecallQuery, match string, floor, ceiling int64, limit int, hits []RecallHit, seen map[int64]bool, phrase bool) ([]RecallHit, error) {
	// The session token and the rowid range go to FTS5 itself, so the probe
	// reads only this session's window, and the ranking runs inside FTS5 on
	// rowids alone; only the best few are joined to their messages. The
	// session_id test is exact where the token is not (ids differing only
	// in '_' or '-'), which is why a few more than needed are ranked.
	sessionID := q.SessionID
	match = `sess : "` + sessionToken(sessionID) + `" AND ` + match
	rows, err := s.r.QueryContext(ctx, `WITH ranked AS (
			SELECT rowid AS id, bm25(messages_fts, 0.0, 1.0) AS score FROM messages_fts
			WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?
			ORDER BY score LIMIT ?)
		SELECT m.id, m.run_id, m.role, COALESCE(m.name,''), COALESCE(m.tool_call_id,''),
			m.content, COALESCE(m.tool_calls,''), m.created_at
		FROM ranked CROSS JOIN messages m ON m.id = ranked.id
		WHERE m.session_id = ? AND NOT (m.role = 'user' AND m.run_id = ?)
		ORDER BY ranked.score, m.id DESC`, match, floor, ceiling, 2*limit+len(seen), sessionID, q.RunID)
	if err != nil {
		return hits, fmt.Errorf("recall in %s: %w", sessionID, err)
	}
	return appendRecallHits(rows, sessionID, limit, hits, seen, phrase)
}

// appendRecallHits appends to hits, up to limit in all, the messages rows
// holds (id, run, role, name, tool call id, content, tool calls, created
// at: the columns both backends' probes select), skipping and then marking
// those in seen, each flagged phrase; it closes rows.
func appendRecallHits(rows *sql.Rows, sessionID string, limit int, hits []RecallHit, seen map[int64]bool, phrase bool) ([]RecallHit, error) {
	defer rows.Close()
	for len(hits) < limit && rows.Next() {
		var h RecallHit
		var calls string
		var ms int64
		if err := rows.Scan(&h.ID, &h.RunID, &h.Role, &h.Name, &h.ToolCallID, &h.Content, &calls, &ms); err != nil {
			return hits, fmt.Errorf("recall in %s: %w", sessionID, err)
		}
		if seen[h.ID] {
			continue
		}
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &h.ToolCalls); err != nil {
				return hits, fmt.Errorf("recall in %s: tool calls of message %d: %w", sessionID, h.ID, err)
			}
		}
		h.Phrase = phrase
		h.Time = time.UnixMilli(ms).UTC()
		seen[h.ID] = true
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// sessionToken is the session id as the index's sess column holds it. A
// double quote cannot occur in an id the engine makes; dropping any keeps
// the FTS5 string well formed.
func sessionToken(id string) string {
	return strings.NewReplacer("_", "", "-", "", `"`, "").Replace(id)
}

// prefixable reports whether a query word also matches the words it
// begins: one of four characters or more that is not a number ("deploy"
// finds "deployment"; "ord" and "4821" match only themselves, or they would
// match "order" and "48210").
func prefixable(w string) bool {
	if utf8.RuneCountInString(w) < 4 {
		return false
	}
	return strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsDigit(r) })
}

// recallWords splits a query into lowercase words of letters and digits, at
// most 32 of them. Quoting each word keeps FTS5's query syntax out of the
// user's hands.
func recallWords(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) > 32 {
		words = words[:32]
	}
	return words
}

// contentWords drops function words. A query of function words only is
// searched as a phrase alone: any one of them matches nearly everything.
func contentWords(words []string) []string {
	var out []string
	for _, w := range words {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// stopWords are English function words: they match nearly every message and
// would only dilute the ranking.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by did do does for from had has have he her his how
		i if in into is it its me my no not of on or our she so that the their them then there these they this
		to was we were what when where which who whom why will with would you your about after before can could
		should any all also than too very just been being am s t`) {
		m[w] = true
	}
	return m
}()

// ElidedMarker opens the placeholder argument bounding writes in place of a
// large value of a successful call's stored arguments.
const ElidedMarker = "[delta:elided "

// BoundedCall is a call of the session whose stored arguments were shrunk
// by argument bounding; the run journal still holds them whole.
type BoundedCall struct {
	RunSeq int64 // the run's sequence number, how recall names it
	RunID  string
	Call   model.ToolCall // as stored: the placeholders in place
}

// BoundedCalls lists the session's bounded calls, newest first, at most limit.
func (s *Store) BoundedCalls(ctx context.Context, sessionID string, limit int) ([]BoundedCall, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := s.r.QueryContext(ctx, `SELECT r.seq, m.run_id, m.tool_calls
		FROM messages m JOIN runs r ON r.id = m.run_id
		WHERE m.session_id = ? AND m.role = 'assistant' AND instr(m.tool_calls, ?) > 0
		ORDER BY m.id DESC`, sessionID, ElidedMarker)
	if err != nil {
		return nil, fmt.Errorf("list bounded calls of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []BoundedCall
	for rows.Next() && len(out) < limit {
		var seq int64
		var runID, raw string
		if err := rows.Scan(&seq, &runID, &raw); err != nil {
			return nil, fmt.Errorf("list bounded calls of %s: %w", sessionID, err)
		}
		var calls []model.ToolCall
		if err := json.Unmarshal([]byte(raw), &calls); err != nil {
			return nil, fmt.Errorf("list bounded calls of %s: run %d: %w", sessionID, seq, err)
		}
		for _, c := range calls {
			if strings.Contains(string(c.Arguments), ElidedMarker) && len(out) < limit {
				out = append(out, BoundedCall{RunSeq: seq, RunID: runID, Call: c})
			}
		}
	}
	return out, rows.Err()
}

// JournalCall returns the tool name and the whole arguments the run journal
// kept for one call of run runSeq, which must belong to the session. A call
// of another session, or one retention has pruned, is ErrNotFound.
func (s *Store) JournalCall(ctx context.Context, sessionID string, runSeq int64, callID string) (name string, args json.RawMessage, err error) {
	var raw string
	err = s.r.QueryRowContext(ctx, `SELECT j.name, j.args FROM tool_journal j JOIN runs r ON r.id = j.run_id
		WHERE r.seq = ? AND r.session_id = ? AND j.call_id = ?`, runSeq, sessionID, callID).Scan(&name, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, ErrNotFound
	}
	if err != nil {
		return "", nil, fmt.Errorf("read journal call %s of run %d: %w", callID, runSeq, err)
	}
	return name, json.RawMessage(raw), nil
}
