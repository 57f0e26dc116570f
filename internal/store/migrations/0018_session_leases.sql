-- Per-session leases for several workers on one database: a worker runs a
-- session's runs only while it holds the session's row, which it renews
-- (heartbeat) before expires_at; once that has passed, another worker may
-- take the session over. A session without a row is free.
CREATE TABLE IF NOT EXISTS session_leases (
  session_id  TEXT PRIMARY KEY,
  holder      TEXT NOT NULL,
  acquired_at INTEGER NOT NULL, -- unix milliseconds, when holder took it
  expires_at  INTEGER NOT NULL  -- unix milliseconds
);
CREATE INDEX IF NOT EXISTS session_leases_holder ON session_leases (holder);
