-- recall: a full-text index over the conversation, so the agent can read an
-- earlier turn back after it has left the active window. Case and Latin
-- diacritics are folded ("Maria" finds "María"); prefixes of two to six
-- characters are indexed so prefix queries read one posting list. The index
-- holds only tokens (contentless): the text stays in messages, joined back
-- by rowid = id.
--
-- sess holds the session id as one token (its '_' and '-' dropped), so a
-- search ANDs the session into the index probe instead of filtering the
-- matches of every session afterwards.
CREATE VIRTUAL TABLE messages_fts USING fts5(
  sess,
  body,
  content = '',
  contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2',
  prefix = '2 3 4 5 6'
);

-- What of a message is searchable: its text and the arguments of the tools
-- it called. recall's own calls and results are left out: they only repeat
-- a query or earlier matches, and would crowd out the messages they point
-- at. Escaped newlines and tabs in arguments become spaces, so a word after
-- a line break is a word of its own.
CREATE VIEW messages_recall_text AS
SELECT id,
  replace(replace(session_id, '_', ''), '-', '') AS sess,
  CASE WHEN role = 'tool' AND name = 'recall' THEN '' ELSE content END || ' ' ||
  replace(replace(replace(
    CASE
      WHEN tool_calls IS NULL THEN ''
      WHEN json_valid(tool_calls) AND json_type(tool_calls) = 'array' THEN COALESCE((
        SELECT group_concat(json_extract(value, '$.arguments'), ' ') FROM json_each(tool_calls)
        WHERE json_extract(value, '$.name') IS NOT 'recall'), '')
      ELSE tool_calls
    END, '\n', ' '), '\t', ' '), '\r', ' ') AS body
FROM messages;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, sess, body) SELECT id, sess, body FROM messages_recall_text WHERE id = new.id;
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_calls ON messages BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
  INSERT INTO messages_fts (rowid, sess, body) SELECT id, sess, body FROM messages_recall_text WHERE id = new.id;
END;

-- Backfill once: every message already stored becomes searchable.
INSERT INTO messages_fts (rowid, sess, body) SELECT id, sess, body FROM messages_recall_text;
