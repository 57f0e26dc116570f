-- Governed local memory: lessons distilled by reflection, one row per
-- identity (namespace, agent, scope, user when private, task type) and
-- normalized content. A duplicate confirms the row and records the distinct
-- producing run in memory_provenance, which also keeps each confirmation's
-- confidence and rubric (the confidence history).
CREATE TABLE IF NOT EXISTS memories (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace    TEXT NOT NULL,
  agent_id     TEXT NOT NULL,
  scope        TEXT NOT NULL,            -- agent, user, task_type or org
  user_id      TEXT NOT NULL DEFAULT '', -- set only for scope user
  task_type    TEXT NOT NULL DEFAULT '', -- the caller-declared use case ('' none)
  kind         TEXT NOT NULL,            -- fact, preference, pitfall or procedure
  content      TEXT NOT NULL,
  norm         TEXT NOT NULL,            -- lowercased, whitespace-normalized content
  aliases      TEXT NOT NULL DEFAULT '', -- extra recall terms, space-separated
  confidence   REAL NOT NULL,            -- the highest confidence recorded
  rubric       TEXT NOT NULL,            -- task or correction (of the newest confirmation)
  untrusted    INTEGER NOT NULL DEFAULT 0, -- every producing run read untrusted tool output
  runs         INTEGER NOT NULL DEFAULT 1, -- distinct producing runs
  uses         INTEGER NOT NULL DEFAULT 0, -- times recalled
  protected    INTEGER NOT NULL DEFAULT 0, -- exempt from the per-identity cap
  created_at   INTEGER NOT NULL,
  confirmed_at INTEGER NOT NULL,
  used_at      INTEGER NOT NULL,           -- last stored, confirmed or recalled
  UNIQUE (namespace, agent_id, scope, user_id, task_type, norm)
);
-- Recall reads one identity's rows by these; used_at is left out so that
-- marking rows used never moves index entries.
CREATE INDEX IF NOT EXISTS memories_identity ON memories (namespace, scope, agent_id, user_id, task_type);
CREATE INDEX IF NOT EXISTS memories_task ON memories (namespace, scope, task_type);

CREATE TABLE IF NOT EXISTS memory_provenance (
  memory_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  run_id     TEXT NOT NULL,
  confidence REAL NOT NULL,
  rubric     TEXT NOT NULL,
  untrusted  INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (memory_id, run_id)
);

-- Reflections owed: a row is written in the transaction that finishes a run
-- successfully with reflection on, and deleted in the transaction that
-- records the reflection's outcome, so a crash between the two is drained
-- after restart and the reflection happens exactly once.
CREATE TABLE IF NOT EXISTS reflection_outbox (
  run_id     TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0
);
