package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deltaharness/delta/internal/collector/pgtest"
)

// The store's tests run twice in one test binary: first every test on
// SQLite (a file in t.TempDir()), then every test again on PostgreSQL (a
// fresh database of one throwaway cluster, started once here). A test
// opens its store through TestingDSN and so runs on the pass's backend; a
// test about SQLite itself (PRAGMA, the file, WAL) calls SQLiteOnly. The
// PostgreSQL pass is left out only when the server binaries are missing.

// testPG is the PostgreSQL pass's cluster; nil during the SQLite pass.
var testPG *pgtest.Cluster

// pgTemplate is a database migrated once, which TestingDSN copies: CREATE
// DATABASE … TEMPLATE is much faster than running the migrations per test.
const pgTemplate = "delta_template"

var testDBSeq atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	if fuzzing() {
		// A fuzz run (the coordinator and each of its workers) is one
		// pass: a second m.Run would start fuzzing again with no
		// coordinator to talk to, and hang.
		os.Exit(code)
	}
	c, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoPostgres) {
		fmt.Println("store: PostgreSQL pass left out:", err)
		os.Exit(code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "store: start PostgreSQL:", err)
		os.Exit(1)
	}
	if err := migrateTemplate(c); err != nil {
		c.Stop()
		fmt.Fprintln(os.Stderr, "store: PostgreSQL template:", err)
		os.Exit(1)
	}
	testPG = c
	fmt.Println("store: the same tests on PostgreSQL")
	pgCode := m.Run()
	c.Stop()
	os.Exit(max(code, pgCode))
}

// fuzzing reports whether the test binary runs a fuzz target (-test.fuzz)
// or is one of a fuzz run's workers.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

func migrateTemplate(c *pgtest.Cluster) error {
	ctx := context.Background()
	url, err := c.NewDatabase(ctx, pgTemplate)
	if err != nil {
		return err
	}
	s, err := Open(ctx, url)
	if err != nil {
		return err
	}
	return s.Close()
}

// TestingBackend names the pass's backend: "sqlite" or "postgres".
func TestingBackend() string {
	if testPG != nil {
		return "postgres"
	}
	return "sqlite"
}

// TestingDSN is where a test's fresh store lives, for Open: a new file in
// t.TempDir() on SQLite, a new database (a copy of the migrated template)
// on PostgreSQL. Opening it twice opens the same store.
func TestingDSN(t testing.TB) string {
	t.Helper()
	if testPG == nil {
		return filepath.Join(t.TempDir(), "delta.db")
	}
	return testDatabase(t, pgTemplate)
}

// TestingEmptyDSN is TestingDSN without the schema: on PostgreSQL an empty
// database, which Open migrates from the first migration.
func TestingEmptyDSN(t testing.TB) string {
	t.Helper()
	if testPG == nil {
		return filepath.Join(t.TempDir(), "delta.db")
	}
	return testDatabase(t, "template0")
}

func testDatabase(t testing.TB, template string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testPG.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t%d", testDBSeq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	return testPG.URL(name)
}

// PostgresOnly skips a test in the SQLite pass; why says what about
// PostgreSQL it is testing.
func PostgresOnly(t testing.TB, why string) {
	t.Helper()
	if testPG == nil {
		t.Skip("PostgreSQL only: " + why)
	}
}

// SQLiteOnly skips a test in the PostgreSQL pass; why says what about
// SQLite it is testing.
func SQLiteOnly(t testing.TB, why string) {
	t.Helper()
	if testPG != nil {
		t.Skip("SQLite only: " + why)
	}
}

// RunMessagesPlan is SQLite's plan for RunMessages's read, one step a
// line ("" on PostgreSQL).
func RunMessagesPlan(t testing.TB, s *Store) string {
	t.Helper()
	if s.pg {
		return ""
	}
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+runMessages, "r", "r")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
