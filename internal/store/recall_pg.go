package store

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// Recall on PostgreSQL: the same rules as Recall over a tsvector column of
// messages (pgmigrations/0008_recall.sql), with these differences:
//
//   - Ranking. FTS5's BM25 is not available. A message's score is the sum
//     of the inverse document frequencies of the query words it holds (so
//     rarer words weigh more, as with BM25), plus ts_rank with length
//     normalization (term frequency over the log of the message's length,
//     below 1, so it only orders messages holding the same words). BM25's
//     term-frequency saturation has no counterpart.
//   - Word frequencies for the common-word rule are counted through the
//     GIN index, up to commonDocs×commonRatio messages (beyond that the
//     rule's outcome no longer changes in practice), instead of read from
//     an fts5vocab table.
//   - Words. ASCII punctuation splits words as unicode61 does; other
//     punctuation is left to PostgreSQL's parser, which treats non-ASCII
//     characters as letters in the C locale ("don’t" stays one word).

// recallPG is Recall on PostgreSQL; words is the query split by recallWords.
func (s *Store) recallPG(ctx context.Context, q RecallQuery, words []string, limit int) ([]RecallHit, error) {
	floor, ceiling, err := s.recallWindow(ctx, q.SessionID)
	if err != nil {
		return nil, err
	}
	var hits []RecallHit
	seen := map[int64]bool{}
	if len(words) > 1 {
		phrase := strings.Join(words, " <-> ")
		if hits, err = s.recallMatchPG(ctx, q, []string{phrase}, nil, floor, ceiling, limit, hits, seen, true); err != nil {
			return nil, err
		}
	}
	terms := contentWords(words)
	if len(terms) == 0 && len(words) == 1 {
		terms = words // a lone function word is searched as it is
	}
	var docs []int64
	if len(terms) > 1 {
		if docs, err = s.termDocsPG(ctx, terms); err != nil {
			return nil, err
		}
		kept := keepRare(terms, docs)
		var keptDocs []int64
		for i, w := range terms {
			for _, k := range kept {
				if k == w {
					keptDocs = append(keptDocs, docs[i])
					break
				}
			}
		}
		terms, docs = kept, keptDocs
	}
	if len(hits) < limit && len(terms) > 0 {
		parts := make([]string, len(terms))
		for i, w := range terms {
			parts[i] = pgTerm(w)
		}
		var weights []float64
		if len(docs) == len(terms) {
			n := float64(ceiling) // message ids count the messages stored, near enough
			for _, d := range docs {
				weights = append(weights, math.Log(1+(n-float64(d)+0.5)/(float64(d)+0.5)))
			}
		}
		if hits, err = s.recallMatchPG(ctx, q, parts, weights, floor, ceiling, limit, hits, seen, false); err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// pgTerm is one query word as a tsquery operand: a prefix match when the
// word is prefixable. recallWords leaves only letters and digits, so the
// word cannot carry tsquery syntax.
func pgTerm(w string) string {
	if prefixable(w) {
		return w + ":*"
	}
	return w
}

// termDocsPG counts the messages holding each term (its prefixes too when
// prefixable), at most commonDocs×commonRatio each.
func (s *Store) termDocsPG(ctx context.Context, terms []string) ([]int64, error) {
	docs := make([]int64, len(terms))
	for i, w := range terms {
		err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM messages
			WHERE recall @@ to_tsquery('delta_recall', ?) LIMIT ?) AS m`, pgTerm(w), commonDocs*commonRatio).Scan(&docs[i])
		if err != nil {
			return nil, fmt.Errorf("recall: word frequency: %w", err)
		}
	}
	return docs, nil
}

// recallMatchPG appends to hits, up to limit in all, the messages of the
// session's window that match any of the tsquery operands in parts (each
// weighted by weights when given), skipping those already seen.
func (s *Store) recallMatchPG(ctx context.Context, q RecallQuery, parts []string, weights []float64, floor, ceiling int64, limit int, hits []RecallHit, seen map[int64]bool, phrase bool) ([]RecallHit, error) {
	args := []any{strings.Join(parts, " | ")}
	score := "ts_rank(m.recall, query.q, 1)"
	for i, w := range weights {
		args = append(args, w, parts[i])
		score += " + ?::float8 * (m.recall @@ to_tsquery('delta_recall', ?))::int"
	}
	args = append(args, q.SessionID, floor, ceiling, q.RunID, 2*limit+len(seen))
	rows, err := s.r.QueryContext(ctx, `SELECT m.id, m.run_id, m.role, COALESCE(m.name,''), COALESCE(m.tool_call_id,''),
			m.content, COALESCE(m.tool_calls,''), m.created_at
		FROM (SELECT to_tsquery('delta_recall', ?) AS q) AS query
		CROSS JOIN LATERAL (SELECT m.*, `+score+` AS score FROM messages m
			WHERE m.session_id = ? AND m.id BETWEEN ? AND ? AND m.recall @@ query.q
			AND NOT (m.role = 'user' AND m.run_id = ?)) AS m
		ORDER BY m.score DESC, m.id DESC LIMIT ?`, args...)
	if err != nil {
		return hits, fmt.Errorf("recall in %s: %w", q.SessionID, err)
	}
	return appendRecallHits(rows, q.SessionID, limit, hits, seen, phrase)
}
