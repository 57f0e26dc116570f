-- The scheduler's own database (delta scheduler), separate from any daemon's.
-- Times are Unix milliseconds.
CREATE TABLE schedules (
  id                   TEXT PRIMARY KEY,
  owner                TEXT NOT NULL,
  agent                TEXT NOT NULL,
  kind                 TEXT NOT NULL,
  at                   TEXT NOT NULL DEFAULT '',
  every_seconds        INTEGER NOT NULL DEFAULT 0,
  cron                 TEXT NOT NULL DEFAULT '',
  timezone             TEXT NOT NULL DEFAULT '',
  input                TEXT NOT NULL,
  previous_response_id TEXT NOT NULL DEFAULT '',
  session_id           TEXT NOT NULL DEFAULT '',
  status               TEXT NOT NULL,
  next_fire_at         INTEGER,
  last_fire_at         INTEGER,
  firings              INTEGER NOT NULL DEFAULT 0,
  created_at           INTEGER NOT NULL,
  cancelled_at         INTEGER
);
CREATE INDEX schedules_due ON schedules(next_fire_at) WHERE status = 'active';
CREATE INDEX schedules_owner ON schedules(owner, agent, created_at);

-- One row per firing, written (state 'intended') in the same transaction that
-- advances the schedule, before the task is posted; 'done' once the daemon
-- acknowledged it; 'failed' when the daemon refused it for good.
CREATE TABLE firings (
  schedule_id     TEXT NOT NULL REFERENCES schedules(id),
  slot            INTEGER NOT NULL,
  key             TEXT NOT NULL UNIQUE,
  state           TEXT NOT NULL,
  skipped         INTEGER NOT NULL DEFAULT 0,
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error      TEXT NOT NULL DEFAULT '',
  task_id         TEXT NOT NULL DEFAULT '',
  intended_at     INTEGER NOT NULL,
  done_at         INTEGER,
  PRIMARY KEY (schedule_id, slot)
);
CREATE INDEX firings_pending ON firings(next_attempt_at) WHERE state = 'intended';
