-- The todo tool's per-session working plan: one row per session, the whole
-- plan as a JSON array, replaced whole on every call.
CREATE TABLE todo_plans (
  session_id  TEXT PRIMARY KEY,
  items       TEXT NOT NULL,
  updated_at  BIGINT NOT NULL
);
