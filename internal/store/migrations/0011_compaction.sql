-- Compaction: older messages of a session leave the active window but are
-- never deleted or rewritten (recall still searches them). active = 0 marks
-- a message a compaction replaced with its summary.
ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
CREATE INDEX messages_active ON messages(session_id, active, id);

-- One row per compaction; the newest row of a session is the summary in
-- force. anchors is a JSON array of the identifiers the summary carries, which
-- the next compaction's audit starts from. tail_rows is how many active messages
-- the compaction kept verbatim and recap_chars the size each tool result
-- among them was cut to (0 = none cut), so a restart rebuilds the same
-- window.
CREATE TABLE compactions (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id  TEXT NOT NULL REFERENCES sessions(id),
  run_id      TEXT NOT NULL REFERENCES runs(id),
  summary     TEXT NOT NULL,
  anchors     TEXT NOT NULL DEFAULT '[]',
  covered     INTEGER NOT NULL,           -- messages marked inactive by this compaction
  tail_rows   INTEGER NOT NULL,
  recap_chars INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL
);
CREATE INDEX compactions_session ON compactions(session_id, id);
