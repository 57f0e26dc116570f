-- Runs whose prompt carried tool output from outside the operator's control
-- before any tool call of their own: task-start hydration from a product's
-- MCP reads. Reflection treats a lesson from such a run as untrusted (held
-- until a second distinct run produces it), as it does one from a run that
-- called web_fetch, web_search or an MCP tool. reason names the source.
CREATE TABLE IF NOT EXISTS run_untrusted_input (
  run_id     TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  reason     TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
