package collector

// Dashboard is one starter query over agent_events. The README's collector
// section prints each of them; a test runs them against PostgreSQL.
type Dashboard struct {
	Title string
	SQL   string
}

// Dashboards are the starter queries, all on attributes the exporter sends
// without DELTA_CAPTURE_PAYLOADS.
var Dashboards = []Dashboard{
	{"Cost per agent per day", `SELECT agent_id, date_trunc('day', event_time) AS day,
       count(*) AS model_calls,
       round(sum((attributes->>'gen_ai.usage.cost_usd')::numeric), 6) AS cost_usd
FROM agent_events WHERE event_name = 'model.call'
GROUP BY 1, 2 ORDER BY 2, 1;`},
	{"Fallback rate per agent", `SELECT agent_id, count(*) AS model_calls,
       round(avg(CASE WHEN (attributes->>'fallback')::boolean THEN 1 ELSE 0 END), 4) AS fallback_rate
FROM agent_events WHERE event_name = 'model.call'
GROUP BY 1 ORDER BY 1;`},
	{"p95 latency per model", `SELECT attributes->>'gen_ai.request.model' AS model, count(*) AS calls,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY (attributes->>'latency_ms')::numeric) AS p95_latency_ms
FROM agent_events WHERE event_name = 'model.call'
GROUP BY 1 ORDER BY 1;`},
	{"Tool error rate per tool", `SELECT attributes->>'tool.name' AS tool, count(*) AS results,
       round(avg(CASE WHEN (attributes->>'is_error')::boolean THEN 1 ELSE 0 END), 4) AS error_rate
FROM agent_events WHERE event_name = 'tool.result'
GROUP BY 1 ORDER BY 1;`},
}
