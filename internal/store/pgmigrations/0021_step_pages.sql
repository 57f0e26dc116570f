-- Fewer pages per step, as migrations/0021_step_pages.sql on SQLite: a tool
-- turn's checkpoint changed, besides the rows it must write, a
-- leaf of two indexes it did not need:
--
-- messages_active (session_id, active, id) took every message inserted, to
-- find a session's active window. Compaction marks a session's oldest
-- active messages inactive, so the inactive ones are always a prefix of the
-- session: the window is the messages past the newest inactive one, a range
-- of messages_session. The newest inactive message is found in an index of
-- the inactive messages alone, which an insert (always active) never
-- touches.
--
-- usage held one row per step that nothing read: the run's row keeps the
-- totals and each model.call event the step's own usage.
DROP INDEX IF EXISTS messages_active;
CREATE INDEX IF NOT EXISTS messages_inactive ON messages(session_id, id) WHERE active = 0;
DROP TABLE IF EXISTS usage;
