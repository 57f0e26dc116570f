-- PostgreSQL's 0020 indexes the live runs by session for the claims of
-- several workers (pgmigrations/0020_live_runs.sql). One SQLite database
-- has one worker, which dispatches from its own queue, so this step only
-- keeps the migration numbers equal.
SELECT 1;
