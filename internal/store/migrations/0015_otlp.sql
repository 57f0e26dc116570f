-- The OTLP trace exporter's cursor beside the NDJSON exporter's: traced is the
-- highest events.id of a run.finished whose run the OTLP receiver acknowledged
-- as a trace. The two lanes move independently (either can be off or behind).
ALTER TABLE telemetry ADD COLUMN traced INTEGER NOT NULL DEFAULT 0;
