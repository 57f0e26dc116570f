-- The single-writer lease: at most one row. A daemon holds it while it
-- renews it; another holder may take it only once expires_at has passed.
CREATE TABLE writer_lease (
  id          BIGINT PRIMARY KEY CHECK (id = 1),
  holder      TEXT NOT NULL,
  expires_at  BIGINT NOT NULL -- unix milliseconds
);
