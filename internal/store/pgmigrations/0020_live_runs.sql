-- The live runs (queued or running) by session, for a worker's claim
-- (claimRunsPG): it asks, for each live run, whether it is its session's
-- earliest live one. Over runs_session and runs_status that meant, per
-- candidate, a bitmap of every live run in the database; this index holds
-- only the live rows, so each candidate's question is one index probe and
-- the claim reads nothing of the finished runs.
CREATE INDEX IF NOT EXISTS runs_live ON runs (session_id, seq) WHERE status IN ('running', 'queued');
