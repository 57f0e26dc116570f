-- DELTA.md revisions: the content a write of the self-file replaced (by the
-- remember tool or an operator's restore), newest 20 kept. A row is the
-- prior file, not the new one: the current file is on disk. The first write
-- and a write of unchanged content add no row.
CREATE TABLE IF NOT EXISTS self_revisions (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  content     TEXT NOT NULL,
  version     TEXT NOT NULL,        -- version of content (bundle.SelfVersion)
  replaced_by TEXT NOT NULL,        -- version of the file written over it
  source      TEXT NOT NULL,        -- remember, restore or operator (a save through the inspection API)
  run_id      TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL
);
