-- SQLite's 0012 adds an fts5vocab table over its index. PostgreSQL has no
-- such table: recall counts a word's messages through the GIN index
-- (recall_pg.go), so this step only keeps the migration numbers equal.
SELECT 1;
