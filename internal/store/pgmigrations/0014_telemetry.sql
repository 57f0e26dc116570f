-- The telemetry exporter's durable state, one row. daemon_id is this
-- database's identity on the wire (event ids are <daemon_id>:<events.id>), so
-- it survives restarts and moves with the file. exported is the highest
-- events.id a collector acknowledged with a 2xx: rows above it are the outbox.
-- dropped counts unexported rows the outbox cap deleted before they left.
CREATE TABLE IF NOT EXISTS telemetry (
  id         BIGINT PRIMARY KEY CHECK (id = 1),
  daemon_id  TEXT NOT NULL,
  exported   BIGINT NOT NULL DEFAULT 0,
  dropped    BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL
);
