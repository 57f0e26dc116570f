package store

import (
	"context"
	"database/sql"
	"fmt"
)

// recall's index in batches (migration 0019).
//
// A message is stored unindexed; the messages past recall_index.upto are
// indexed together, in one statement, by the first write transaction that
// commits once recallGrain of them may be waiting (indexIfDue), and by any
// search before it reads the index (catchUpRecall). One FTS5 segment then
// holds a batch instead of one message: a step's checkpoint writes about
// twice fewer WAL pages, and a group commit's members no longer each flush
// a segment of their own at their savepoint. The index is derived from the
// messages, so a crash before a batch loses nothing: the next one indexes
// from the same upto.

// recallGrain is how many messages stored in this process wait, at most
// about, before a write transaction indexes them.
const recallGrain = 128

// indexPending indexes every message past upto inside tx and moves upto to
// the newest message.
func (s *Store) indexPending(ctx context.Context, tx *sql.Tx) error {
	if _, err := s.exec(ctx, tx, `INSERT INTO messages_fts (rowid, sess, body)
		SELECT id, sess, body FROM messages_recall_text WHERE id > (SELECT upto FROM recall_index)`); err != nil {
		return fmt.Errorf("index messages for recall: %w", err)
	}
	if _, err := s.exec(ctx, tx, `UPDATE recall_index SET upto = max(upto, COALESCE((SELECT max(id) FROM messages), 0))`); err != nil {
		return fmt.Errorf("index messages for recall: %w", err)
	}
	return nil
}

// indexIfDue indexes the waiting messages inside tx, a write transaction
// about to commit, once enough of them may wait. It runs in a savepoint of
// its own: a failure undoes only the indexing, which the next batch or
// search does instead, and never the transaction's own work.
func (s *Store) indexIfDue(ctx context.Context, tx *sql.Tx) {
	n := s.recallPending.Load()
	if s.pg || n < recallGrain {
		return
	}
	if _, err := s.exec(ctx, tx, "SAVEPOINT recall_index"); err != nil {
		return
	}
	if err := s.indexPending(ctx, tx); err != nil {
		_, _ = s.exec(ctx, tx, "ROLLBACK TO recall_index") // the batch is retried; the caller's work stands
	} else {
		s.recallPending.Add(-n)
	}
	_, _ = s.exec(ctx, tx, "RELEASE recall_index")
}

// catchUpRecall indexes the messages waiting, if any, so that a search
// sees every message committed before it.
func (s *Store) catchUpRecall(ctx context.Context) error {
	var waiting bool
	if err := s.readRow(ctx, `SELECT (SELECT upto FROM recall_index) < COALESCE((SELECT max(id) FROM messages), 0)`).Scan(&waiting); err != nil {
		return fmt.Errorf("recall: index state: %w", err)
	}
	if !waiting {
		return nil
	}
	n := s.recallPending.Load()
	if err := s.groupTx(ctx, func(tx *sql.Tx) error { return s.indexPending(ctx, tx) }); err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	s.recallPending.Add(-n)
	return nil
}
