// Package collector is the reference telemetry collector: it receives the
// exporter's NDJSON records over HTTP and lands them, once each, in a
// PostgreSQL agent_events table that dashboards query with plain SQL.
//
// Its SQL is PostgreSQL, not the daemon's SQLite store, which is why it is
// the one package besides internal/store that talks to a database.
package collector

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MaxBody caps one ingest request; a larger body is answered 413 so an
// authenticated client cannot make the collector buffer without bound.
const MaxBody = 8 << 20

// IngestPath is where the exporter posts.
const IngestPath = "/telemetry/ingest"

// Schema is the agent_events landing table, created on start when absent.
// event_id is the exporter's <daemon id>:<row id>: the primary key is the
// deduplication at-least-once delivery needs.
const Schema = `CREATE TABLE IF NOT EXISTS agent_events (
  event_id    text PRIMARY KEY,
  event_name  text NOT NULL,
  event_time  timestamptz NOT NULL,
  user_id     text,
  agent_id    text,
  session_id  text,
  run_id      text,
  task_id     text,
  turn        integer NOT NULL DEFAULT 0,
  attributes  jsonb NOT NULL DEFAULT '{}',
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS agent_events_name_time ON agent_events (event_name, event_time);
CREATE INDEX IF NOT EXISTS agent_events_agent_time ON agent_events (agent_id, event_time);
CREATE INDEX IF NOT EXISTS agent_events_run ON agent_events (run_id);`

// insert lands a batch in one statement; a record whose event_id is
// already there (a re-sent batch, or twice in this one) is skipped.
const insert = `INSERT INTO agent_events (event_id, event_name, event_time, user_id, agent_id, session_id, run_id, task_id, turn, attributes)
SELECT id, name, to_timestamp(ms / 1000.0), nullif(u, ''), nullif(a, ''), nullif(s, ''), nullif(r, ''), nullif(t, ''), turn, attrs::jsonb
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[])
  AS x(id, name, ms, u, a, s, r, t, turn, attrs)
ON CONFLICT (event_id) DO NOTHING`

// Collector lands records in PostgreSQL.
type Collector struct {
	pool   *pgxpool.Pool
	token  string
	logger *slog.Logger

	accepted, duplicates, malformed atomic.Int64
}

// Open connects to the database and creates the schema when absent.
func Open(ctx context.Context, databaseURL, token string, logger *slog.Logger) (*Collector, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if _, err := pool.Exec(ctx, Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("create agent_events: %w", err)
	}
	return &Collector{pool: pool, token: token, logger: logger}, nil
}

// Close releases the database connections.
func (c *Collector) Close() { c.pool.Close() }

// Counts are the ingest totals since start.
type Counts struct {
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
	Malformed  int64 `json:"malformed"`
}

// Counts reports the totals since start.
func (c *Collector) Counts() Counts {
	return Counts{c.accepted.Load(), c.duplicates.Load(), c.malformed.Load()}
}

// Handler serves POST /telemetry/ingest (bearer auth when a token is set)
// and GET /healthz.
func (c *Collector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+IngestPath, c.ingest)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.Counts())
	})
	return mux
}

// wire is one record as the exporter sends it.
type wire struct {
	ID         string          `json:"event.id"`
	Name       string          `json:"event.name"`
	TimeUnixMS int64           `json:"event.time_unix_ms"`
	UserID     string          `json:"user.id"`
	AgentID    string          `json:"agent.id"`
	SessionID  string          `json:"session.id"`
	RunID      string          `json:"run.id"`
	TaskID     string          `json:"task.id"`
	Turn       int32           `json:"turn"`
	Attributes json.RawMessage `json:"attributes"`
}

func (c *Collector) ingest(w http.ResponseWriter, r *http.Request) {
	if c.token != "" && !bearerOK(r.Header.Get("Authorization"), c.token) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a valid bearer token is required"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": fmt.Sprintf("body over %d bytes", MaxBody)})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read body"})
		return
	}
	var ids, names, users, agents, sessions, runs, tasks, attrs []string
	var times []int64
	var turns []int32
	malformed := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBody)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec wire
		if json.Unmarshal(line, &rec) != nil || rec.ID == "" || rec.Name == "" || rec.TimeUnixMS <= 0 || !isObject(rec.Attributes) {
			malformed++
			continue
		}
		if a := bytes.TrimSpace(rec.Attributes); len(a) == 0 || string(a) == "null" {
			rec.Attributes = json.RawMessage("{}")
		}
		ids, names, times = append(ids, rec.ID), append(names, rec.Name), append(times, rec.TimeUnixMS)
		users, agents, sessions = append(users, rec.UserID), append(agents, rec.AgentID), append(sessions, rec.SessionID)
		runs, tasks, turns = append(runs, rec.RunID), append(tasks, rec.TaskID), append(turns, rec.Turn)
		// jsonb refuses the NUL escape; one such string must not fail the
		// whole batch into an endless retry.
		attrs = append(attrs, strings.ReplaceAll(strings.ToValidUTF8(string(rec.Attributes), "\uFFFD"), `\u0000`, `\ufffd`))
	}
	c.malformed.Add(int64(malformed))
	var inserted int64
	if len(ids) > 0 {
		tag, err := c.pool.Exec(r.Context(), insert, ids, names, times, users, agents, sessions, runs, tasks, turns, attrs)
		if err != nil {
			// A storage failure is the one case the exporter must retry.
			c.logger.Error("ingest", "err", err, "records", len(ids))
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "storage failure"})
			return
		}
		inserted = tag.RowsAffected()
	}
	dup := int64(len(ids)) - inserted
	c.accepted.Add(inserted)
	c.duplicates.Add(dup)
	if malformed > 0 {
		c.logger.Warn("ingest: malformed lines skipped", "malformed", malformed)
	}
	writeJSON(w, http.StatusOK, Counts{Accepted: inserted, Duplicates: dup, Malformed: int64(malformed)})
}

// isObject: absent, null or a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null" || b[0] == '{'
}

func bearerOK(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && constantTimeEqual(got, token)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
