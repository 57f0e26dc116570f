package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// TestMigrationSequencesMatch: both backends' migrations carry the same
// numbers, 1 to SchemaVersion without gaps, so one schema version means
// the same tables on either.
func TestMigrationSequencesMatch(t *testing.T) {
	numbers := func(dir string, fsys embed.FS) []int {
		t.Helper()
		ms, err := migrationsIn(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, m := range ms {
			out = append(out, m.version)
		}
		return out
	}
	lite, pg := numbers("migrations", migrationFS), numbers("pgmigrations", pgMigrationFS)
	if !slices.Equal(lite, pg) {
		t.Fatalf("migrations %v, pgmigrations %v: want the same numbers", lite, pg)
	}
	for i, v := range lite {
		if v != i+1 {
			t.Fatalf("migration numbers %v have a gap at %d", lite, i+1)
		}
	}
	if len(lite) != SchemaVersion() {
		t.Fatalf("%d migrations, SchemaVersion %d", len(lite), SchemaVersion())
	}
}

func TestPostgresMigratesAndRefusesNewerSchema(t *testing.T) {
	PostgresOnly(t, "runs in the PostgreSQL pass")
	ctx := context.Background()
	dsn := strings.Replace(TestingEmptyDSN(t), "postgres@", "postgres:hunter2secret@", 1) // trust auth ignores it
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RecordBoot(ctx, "v-test", "")
	if err != nil || b.SchemaVersion != SchemaVersion() {
		t.Fatalf("RecordBoot = %+v, %v; want schema version %d", b, err, SchemaVersion())
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ext int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'unaccent'").Scan(&ext); err != nil || ext != 1 {
		t.Fatalf("unaccent installed = %d, %v", ext, err)
	}
	if _, err := conn.Exec(ctx, "UPDATE delta_schema SET version = 999"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, dsn)
	if !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaNewer", err)
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("the error shows the URL's password: %v", err)
	}
}

// TestPostgresRecallBackfillsAndFollowsRewrites: messages stored before the
// recall migration become searchable when it runs, and rewriting a
// message's tool calls re-indexes it.
func TestPostgresRecallBackfillsAndFollowsRewrites(t *testing.T) {
	PostgresOnly(t, "runs in the PostgreSQL pass")
	ctx := context.Background()
	dsn := TestingEmptyDSN(t)
	ms, err := pgMigrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, m := range ms[:7] {
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	for _, q := range []string{
		"CREATE TABLE delta_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
		"INSERT INTO delta_schema VALUES (1, 7)",
		"INSERT INTO sessions (id, created_at) VALUES ('s_o', 1)",
		"INSERT INTO runs (id, session_id, status, request, created_at) VALUES ('resp_o', 's_o', 'running', '{}', 1)",
		"INSERT INTO messages (session_id, run_id, role, content, created_at) VALUES ('s_o', 'resp_o', 'user', 'an old row about Cöpperfield', 1)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if hits, err := s.Recall(ctx, RecallQuery{SessionID: "s_o", Text: "copperfield", Limit: 5}); err != nil || len(hits) != 1 {
		t.Fatalf("after the migration Recall = %+v, %v; want the old row", hits, err)
	}

	// A bounded call's arguments are rewritten: the index follows.
	if _, _, err := s.Start(ctx, "resp_o", nil); err != nil {
		t.Fatal(err)
	}
	calls := []model.ToolCall{{ID: "c1", Name: "write_file", Arguments: json.RawMessage(`{"content":"Marmalade\nsandwich"}`)}}
	if _, err := s.CommitStep(ctx, Step{RunID: "resp_o", SessionID: "s_o", Model: "m",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls},
		Intents: []Intent{{CallID: "c1", Name: "write_file", Args: calls[0].Arguments}}}); err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.Recall(ctx, RecallQuery{SessionID: "s_o", Text: "sandwich", Limit: 5}); len(hits) != 1 {
		t.Fatalf("Recall(sandwich) = %+v, want the call (a word after an escaped newline)", hits)
	}
	if _, err := s.CommitToolResult(ctx, ToolResult{RunID: "resp_o", SessionID: "s_o", CallID: "c1", Name: "write_file",
		Text: "ok", BoundArgs: json.RawMessage(`{"content":"[delta:elided 20 bytes]"}`)}); err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.Recall(ctx, RecallQuery{SessionID: "s_o", Text: "marmalade", Limit: 5}); len(hits) != 0 {
		t.Fatalf("Recall(marmalade) after the rewrite = %+v, want nothing", hits)
	}
	if hits, _ := s.Recall(ctx, RecallQuery{SessionID: "s_o", Text: "elided", Limit: 5}); len(hits) != 1 {
		t.Fatalf("Recall(elided) after the rewrite = %+v, want the call", hits)
	}
}

// TestPostgresEventIDsCommitInOrder: two stores on one database (two
// workers) append events at once while a reader pages them by id, as an
// event stream does. Every event appears exactly once and in id order: no
// id commits after a reader has passed it.
func TestPostgresEventIDsCommitInOrder(t *testing.T) {
	PostgresOnly(t, "runs in the PostgreSQL pass")
	ctx := context.Background()
	dsn := TestingDSN(t)
	var workers []*Store
	for range 2 {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		workers = append(workers, s)
	}
	const writers, batches = 6, 40
	var wg sync.WaitGroup
	written := make(chan int64, writers*batches*2)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := workers[i%2]
			for j := range batches {
				evs := []event.Event{event.New("r", "s", event.RunQueued, nil), event.New("r", "s", event.RunStarted, nil)}
				if err := s.AddEvents(ctx, evs); err != nil {
					t.Errorf("writer %d batch %d: %v", i, j, err)
					return
				}
				for _, e := range evs {
					written <- e.ID
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen []int64
	var since int64
	read := func() {
		evs, err := workers[0].Events(ctx, EventFilter{Since: since})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen = append(seen, e.ID)
			since = e.ID
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		read()
	}
	for prev := int64(-1); prev != since; {
		prev = since
		read()
	}
	close(written)
	var all []int64
	for id := range written {
		all = append(all, id)
	}
	slices.Sort(all)
	if !slices.Equal(seen, all) {
		t.Fatalf("the reader saw %d events, %d were written: a later commit had a smaller id", len(seen), len(all))
	}
}

func TestPGSQLRewrites(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{"SELECT ?1, ?2, ?1", "SELECT $1, $2, $1"},
		{"SELECT '?' || ? -- what?\n, \"col?\" FROM t", "SELECT '?' || $1 -- what?\n, \"col?\" FROM t"},
		{"SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"},
		{"INSERT OR IGNORE INTO reflection_outbox (run_id, created_at) VALUES (?, ?)",
			"INSERT INTO reflection_outbox (run_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING"},
		{"INSERT INTO events (name) VALUES (?)", "INSERT INTO events (name) VALUES ($1) RETURNING id"},
		{"INSERT OR IGNORE INTO promotion_outbox (key) VALUES (?)", "INSERT INTO promotion_outbox (key) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id"},
		{"UPDATE runs SET steps = steps + 1 WHERE id = ? RETURNING steps", "UPDATE runs SET steps = steps + 1 WHERE id = $1 RETURNING steps"},
		{"INSERT INTO runs (id) VALUES (?) RETURNING seq", "INSERT INTO runs (id) VALUES ($1) RETURNING seq"},
		{"DELETE FROM m WHERE id IN (SELECT id FROM m ORDER BY id LIMIT -1 OFFSET ?)", "DELETE FROM m WHERE id IN (SELECT id FROM m ORDER BY id LIMIT ALL OFFSET $1)"},
	}
	for _, c := range cases {
		if got := pgSQL(c.in).sql; got != c.want {
			t.Errorf("pgSQL(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

var dollarRe = regexp.MustCompile(`\$[0-9]+`)

// FuzzPGPlaceholders: the rewrite never panics, and outside quotes and
// comments it turns each ? into one $n, numbered in order.
func FuzzPGPlaceholders(f *testing.F) {
	for _, s := range []string{"SELECT ?", "'?'", "a ? b ?1 ?", "-- ?\n?", `"x?"`, "'unterminated ?", "?9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out := pgPlaceholders(q)
		if strings.ContainsAny(q, `'"-$`) {
			return
		}
		want := 0
		for i := 0; i < len(q); i++ {
			if q[i] == '?' {
				want++
				for i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
					i++
				}
			}
		}
		if n := len(dollarRe.FindAllString(out, -1)); n != want || strings.Contains(out, "?") {
			t.Fatalf("pgPlaceholders(%q) = %q: %d placeholders, want %d", q, out, n, want)
		}
	})
}

// TestPGPoolConfig: pool_max_conns in the URL sizes the pool and is taken
// out of the URL the connections use (the server refuses unknown
// parameters); anything but a whole number from 1 up is refused, naming
// the parameter.
func TestPGPoolConfig(t *testing.T) {
	for _, tc := range []struct {
		dsn, want string
		size      int
		err       string
	}{
		{dsn: "postgres://h/db", want: "postgres://h/db", size: pgPoolSize},
		{dsn: "postgres://h/db?sslmode=disable", want: "postgres://h/db?sslmode=disable", size: pgPoolSize},
		{dsn: "postgres://h/db?pool_max_conns=8", want: "postgres://h/db", size: 8},
		{dsn: "postgresql://u:p@h:5432/db?sslmode=disable&pool_max_conns=64", want: "postgresql://u:p@h:5432/db?sslmode=disable", size: 64},
		{dsn: "postgres://h1,h2/db?pool_max_conns=1&application_name=w1", want: "postgres://h1,h2/db?application_name=w1", size: 1},
		{dsn: "postgres://h/db?pool_max_conns=0", err: `pool_max_conns="0": want a whole number of connections from 1 to 10000`},
		{dsn: "postgres://h/db?pool_max_conns=-3", err: `pool_max_conns="-3"`},
		{dsn: "postgres://h/db?pool_max_conns=ten", err: `pool_max_conns="ten"`},
		{dsn: "postgres://h/db?pool_max_conns=2.5", err: `pool_max_conns="2.5"`},
		{dsn: "postgres://h/db?pool_max_conns=", err: `pool_max_conns=""`},
		{dsn: "postgres://h/db?pool_max_conns=99999", err: `pool_max_conns="99999"`},
		{dsn: "postgres://h/db?pool_max_conns=2&pool_max_conns=3", err: "pool_max_conns is given 2 times"},
		{dsn: "postgres://h/db?pool_max_conns=%zz", err: "parse the URL's query"},
	} {
		got, size, err := pgPoolConfig(tc.dsn)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("pgPoolConfig(%q) error = %v, want one containing %q", tc.dsn, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || size != tc.size {
			t.Errorf("pgPoolConfig(%q) = %q, %d, %v; want %q, %d", tc.dsn, got, size, err, tc.want, tc.size)
		}
	}
}

// TestPostgresPoolMaxConns: a store opened with pool_max_conns has a pool
// of that size, serves statements (the parameter never reaches the
// server) and its event tail connects on the same URL; a bad value fails
// Open with the parameter named and the password kept out.
func TestPostgresPoolMaxConns(t *testing.T) {
	PostgresOnly(t, "runs in the PostgreSQL pass")
	ctx := context.Background()
	base := TestingDSN(t)
	def, err := Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := def.w.Stats().MaxOpenConnections; got != pgPoolSize {
		t.Errorf("pool size without pool_max_conns = %d, want %d", got, pgPoolSize)
	}
	def.Close()

	dsn := base + "&pool_max_conns=3"
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open with pool_max_conns=3: %v", err)
	}
	defer s.Close()
	if got := s.w.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("pool size with pool_max_conns=3 = %d, want 3", got)
	}
	if _, _, _, err := s.CreateRun(ctx, NewRun{ID: "r1", SessionID: "s1", Owner: "o", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("CreateRun on the sized pool: %v", err)
	}
	tail := NewEventTail(s, dsn, TailOptions{})
	if err := tail.Open(ctx); err != nil {
		t.Fatalf("event tail on a URL with pool_max_conns: %v", err)
	}
	if err := tail.Close(ctx); err != nil {
		t.Fatal(err)
	}

	bad := strings.Replace(base, "postgres@", "postgres:hunter2secret@", 1) + "&pool_max_conns=lots"
	_, err = Open(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), `pool_max_conns="lots"`) {
		t.Fatalf("Open with pool_max_conns=lots = %v, want an error naming the parameter", err)
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("the error shows the URL's password: %v", err)
	}
}

// TestPostgresQueryPasswordHidden: a password given as a URL parameter
// (?password=…, as libpq and pgx take it) is hidden wherever the store names
// its database: the name the daemon logs at boot, and a refusal's error.
func TestPostgresQueryPasswordHidden(t *testing.T) {
	PostgresOnly(t, "runs in the PostgreSQL pass")
	ctx := context.Background()
	dsn := TestingEmptyDSN(t) + "&password=hunter2secret" // trust auth ignores it
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Path(), "hunter2secret") || !strings.Contains(s.Path(), "password=xxxxx") {
		t.Errorf("Path() = %q, want the password parameter hidden", s.Path())
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE delta_schema SET version = 999"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, dsn+"&sslpassword=keysecret42")
	if !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaNewer", err)
	}
	if strings.Contains(err.Error(), "hunter2secret") || strings.Contains(err.Error(), "keysecret42") {
		t.Fatalf("the error shows a password parameter: %v", err)
	}
}
