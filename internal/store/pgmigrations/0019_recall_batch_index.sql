-- SQLite's 0019 writes its FTS5 index in batches. PostgreSQL's recall reads
-- a GIN index over the messages themselves (recall_pg.go), kept by the
-- table's own writes, so this step only keeps the migration numbers equal.
SELECT 1;
