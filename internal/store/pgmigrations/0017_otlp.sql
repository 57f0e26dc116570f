-- The OTLP trace exporter's cursor, beside the NDJSON exporter's telemetry
-- row: traced is the highest events.id of a run.finished whose run the OTLP
-- receiver acknowledged as a trace. The two lanes move independently (either
-- can be off or behind).
CREATE TABLE IF NOT EXISTS trace_outbox (
  id     BIGINT PRIMARY KEY CHECK (id = 1),
  traced BIGINT NOT NULL DEFAULT 0
);
