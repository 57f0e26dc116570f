-- The promotion outbox: lessons that recurred often enough to be proposed
-- to the product's shared stores (the curated write tool for facts,
-- preferences and pitfalls; the skill registry for procedures). A row is
-- staged in the transaction that records the recurring memory, claimed
-- (attempts counted) before each remote call, and marked sent, or failed
-- for good after the last attempt, in the transaction that records the
-- call's outcome. key is the idempotency key: one row per normalized
-- content, identity, kind and bound adapter, so a lesson confirmed again is
-- never staged twice.
CREATE TABLE IF NOT EXISTS promotion_outbox (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  key         TEXT NOT NULL UNIQUE,
  memory_id   INTEGER REFERENCES memories(id) ON DELETE SET NULL,
  target      TEXT NOT NULL,            -- curated or capability
  adapter     TEXT NOT NULL,            -- the bound tool (curated) or tool family (capability)
  namespace   TEXT NOT NULL,
  agent_id    TEXT NOT NULL,
  scope       TEXT NOT NULL,
  task_type   TEXT NOT NULL DEFAULT '',
  kind        TEXT NOT NULL,
  content     TEXT NOT NULL,
  confidence  REAL NOT NULL,
  rubric      TEXT NOT NULL,
  runs        INTEGER NOT NULL,         -- distinct producing runs when staged
  run_id      TEXT NOT NULL,            -- the run whose reflection staged it
  state       TEXT NOT NULL DEFAULT 'staged', -- staged, claimed, sent or failed (terminal)
  attempts    INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT NOT NULL DEFAULT '',
  result      TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS promotion_due ON promotion_outbox (state, id);
