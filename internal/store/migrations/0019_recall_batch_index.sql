-- recall's index is written in batches instead of one message at a time.
-- Every FTS5 write flushes as a segment of its own when its transaction (or
-- a group commit's savepoint) ends, and a segment costs several pages
-- (leaf, segment index, structure record, sizes, and the merges it makes
-- due): most of a step's checkpoint was the index. Now a message is stored
-- unindexed and the store indexes everything past recall_index.upto in one
-- statement: inside a write once enough messages wait, and before any
-- search (recall.go), so a search still sees every message committed.
--
-- upto is the highest message id the index holds (ids only grow:
-- AUTOINCREMENT). Rows above it are not in the index yet, so a rewrite or a
-- delete touches the index only below it; the batch indexes the rest as
-- they then stand.
CREATE TABLE IF NOT EXISTS recall_index (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  upto INTEGER NOT NULL
);
INSERT OR REPLACE INTO recall_index (id, upto) VALUES (1, COALESCE((SELECT max(id) FROM messages), 0));

DROP TRIGGER IF EXISTS messages_fts_insert;
DROP TRIGGER IF EXISTS messages_fts_delete;
DROP TRIGGER IF EXISTS messages_fts_update;

-- A message stored below upto (only an explicit id can be) is indexed at
-- once: no batch would reach it.
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.id <= (SELECT upto FROM recall_index) BEGIN
  INSERT INTO messages_fts (rowid, sess, body) SELECT id, sess, body FROM messages_recall_text WHERE id = new.id;
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
WHEN old.id <= (SELECT upto FROM recall_index) BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_calls ON messages
WHEN old.id <= (SELECT upto FROM recall_index) BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
  INSERT INTO messages_fts (rowid, sess, body) SELECT id, sess, body FROM messages_recall_text WHERE id = new.id;
END;
