-- Sessions are chains of runs; a run is one response id.
CREATE TABLE sessions (
  id          TEXT PRIMARY KEY,
  owner       TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL
);

CREATE TABLE runs (
  seq              INTEGER PRIMARY KEY AUTOINCREMENT,
  id               TEXT NOT NULL UNIQUE,
  session_id       TEXT NOT NULL REFERENCES sessions(id),
  owner            TEXT NOT NULL DEFAULT '',
  status           TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','cancelled')),
  request          TEXT NOT NULL,             -- the accepted request, JSON
  previous_id      TEXT,
  idempotency_key  TEXT,
  input_appended   INTEGER NOT NULL DEFAULT 0, -- the request's user message is in the session history
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0, -- execution attempts (1 + resumes)
  steps            INTEGER NOT NULL DEFAULT 0,
  input_tokens     INTEGER NOT NULL DEFAULT 0,
  output_tokens    INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd         REAL NOT NULL DEFAULT 0,
  model            TEXT NOT NULL DEFAULT '',
  error            TEXT NOT NULL DEFAULT '',
  result           TEXT,                      -- Responses-shaped object, JSON, once terminal
  created_at       INTEGER NOT NULL,          -- unix milliseconds
  started_at       INTEGER,
  finished_at      INTEGER
);
CREATE INDEX runs_status ON runs(status, seq);
CREATE INDEX runs_session ON runs(session_id, seq);
CREATE UNIQUE INDEX runs_idempotency ON runs(owner, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE messages (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id   TEXT NOT NULL REFERENCES sessions(id),
  run_id       TEXT NOT NULL REFERENCES runs(id),
  role         TEXT NOT NULL CHECK (role IN ('user','assistant','tool')),
  content      TEXT NOT NULL DEFAULT '',
  tool_calls   TEXT,   -- JSON array, assistant only
  tool_call_id TEXT,   -- tool only
  name         TEXT,   -- tool only
  created_at   INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);

-- The tool journal: an intent is written with the assistant message that asked
-- for the call, the result with the tool message that answers it.
CREATE TABLE tool_journal (
  run_id      TEXT NOT NULL REFERENCES runs(id),
  call_id     TEXT NOT NULL,
  name        TEXT NOT NULL,
  args        TEXT NOT NULL,
  read_only   INTEGER NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('intent','done')),
  result      TEXT,
  is_error    INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL,
  finished_at INTEGER,
  PRIMARY KEY (run_id, call_id)
);

CREATE TABLE usage (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id             TEXT NOT NULL REFERENCES runs(id),
  step               INTEGER NOT NULL,
  model              TEXT NOT NULL,
  input_tokens       INTEGER NOT NULL,
  output_tokens      INTEGER NOT NULL,
  cache_read_tokens  INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  cost_usd           REAL NOT NULL,
  created_at         INTEGER NOT NULL
);

CREATE TABLE events (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id     TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  name       TEXT NOT NULL,
  data       TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX events_run ON events(run_id, id);

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
