package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScanAllReadsEveryRowOrNamesTheFailure(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // rows left open would hold the one connection
	const q = "SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'c'"
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scanAll(rows, "read letters", scanString)
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("scanAll = %q, %v; want a b c", got, err)
	}
	rows, err = db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	bad := errors.New("no b")
	got, err = scanAll(rows, "read letters", func(sc scanner) (string, error) {
		v, err := scanString(sc)
		if v == "b" {
			return v, bad
		}
		return v, err
	})
	if !errors.Is(err, bad) || !strings.HasPrefix(err.Error(), "read letters: ") || got != nil {
		t.Fatalf("scanAll with a failing row = %q, %v; want nil and the failure named", got, err)
	}
	// The rows were closed on the failure: the pool's one connection is free.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatalf("after a failed scanAll: %v", err)
	}
}
