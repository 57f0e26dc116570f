package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deltaharness/delta/internal/collector/pgtest"
	"github.com/deltaharness/delta/internal/event"
)

// TestPGWritesReturnOnDisk: on a server that commits durably, a write
// commits without waiting for the disk while it holds its locks and waits
// for the disk afterwards, so when it returns its commit has been flushed;
// and an events read returns only events on disk, even one whose writer
// never waited. The cluster's WAL writer is made lazy (it flushes a partly
// filled WAL page only every 10 s), so a commit that nobody waits for stays
// unflushed while the test looks.
func TestPGWritesReturnOnDisk(t *testing.T) {
	PostgresOnly(t, "when a commit reaches the disk")
	c, err := pgtest.StartDurableWith("wal_writer_delay=10s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	url, err := c.NewDatabase(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	probe, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close(context.Background()) })
	lsn := func(fn string) int64 {
		t.Helper()
		var n int64
		if err := probe.QueryRow(ctx, "SELECT ("+fn+"() - '0/0')::bigint").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The wait needs no privilege: a worker may connect as a plain role.
	if _, err := probe.Exec(ctx, "CREATE ROLE plain LOGIN"); err != nil {
		t.Fatal(err)
	}
	plain, err := pgx.Connect(ctx, strings.Replace(url, "postgres@", "plain@", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Exec(ctx, pgAwaitDurable); err != nil {
		t.Errorf("the wait for the disk as a role that is not a superuser: %v", err)
	}
	plain.Close(ctx)

	writes := []struct {
		name  string
		write func() error
	}{
		{"a run write (its events, the event lock, the commit in one pipeline)", func() error {
			return st.AddEvents(ctx, []event.Event{{Name: "test.durable", Time: time.Now()}})
		}},
		{"a write alone under the exclusive write lock", func() error {
			_, err := st.RecordBoot(ctx, "v-test", "b-test")
			return err
		}},
	}
	// Several rounds: the lazy WAL writer may flush the first commit it is
	// woken for, not the ones within 10 s of that flush.
	for round := range 4 {
		for _, w := range writes {
			before := lsn("pg_current_wal_insert_lsn")
			if err := w.write(); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			if flushed := lsn("pg_current_wal_flush_lsn"); flushed <= before {
				t.Errorf("round %d, %s: returned with the WAL flushed to %d, not past %d where its commit began",
					round, w.name, flushed, before)
			}
		}
	}

	// A commit that does not wait for the disk, as another worker's is
	// until its own wait ends: a read shows it only once it is on disk.
	last, err := st.Events(ctx, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		tx, err := probe.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit TO off"); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "INSERT INTO events (name, created_at) VALUES ('test.unawaited', 0) RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		committed := lsn("pg_current_wal_insert_lsn")
		evs, err := st.Events(ctx, EventFilter{Since: last[len(last)-1].ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 || evs[len(evs)-1].ID != id {
			t.Fatalf("round %d: read %v, want the event %d committed before it", round, evs, id)
		}
		last = evs
		if flushed := lsn("pg_current_wal_flush_lsn"); flushed < committed {
			t.Errorf("round %d: an events read returned event %d with the WAL flushed to %d, before its commit at %d",
				round, id, flushed, committed)
		}
	}
}
