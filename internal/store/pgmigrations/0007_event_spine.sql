-- The correlation spine on every event: the run's owner (x-delta-user), the
-- caller's metadata.task_id, and the turn of the run the event belongs to
-- (0 outside a turn). Events written before this migration have none.
ALTER TABLE events ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN turn BIGINT NOT NULL DEFAULT 0;
