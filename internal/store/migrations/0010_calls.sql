-- Normalized model calls (DELTA_CAPTURE_CALLS): one row per successfully
-- served main-loop turn, written in the transaction of the step checkpoint
-- it belongs to. request and response are JSON documents as the engine
-- assembled them before any wire encoding; they hold full prompts and are
-- redacted only when read. Nothing prunes this table.
CREATE TABLE IF NOT EXISTS calls (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        TEXT NOT NULL REFERENCES runs(id),
  step          INTEGER NOT NULL,
  turn          INTEGER NOT NULL,
  model         TEXT NOT NULL DEFAULT '',
  provider      TEXT NOT NULL DEFAULT '',
  request       TEXT NOT NULL,
  response      TEXT NOT NULL,
  input_tokens       INTEGER NOT NULL DEFAULT 0,
  output_tokens      INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd      REAL NOT NULL DEFAULT 0,
  latency_ms    INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_run ON calls(run_id, id);
