-- Progressive tool loading: the tools search_tools activated for a run. They
-- stay resident for the rest of the run, including after a restart.
CREATE TABLE tool_activations (
  run_id        TEXT NOT NULL,
  name          TEXT NOT NULL,
  activated_at  BIGINT NOT NULL,
  PRIMARY KEY (run_id, name)
);
