package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
)

// TestCheckpointerCopiesCommitsIntoTheFile: commits far below the writer's
// own checkpoint threshold reach the database file itself (read from a
// copy of the file alone, without its WAL) once the checkpointer has run,
// and stay only in the WAL without it.
func TestCheckpointerCopiesCommitsIntoTheFile(t *testing.T) {
	if testPG != nil {
		t.Skip("the WAL is SQLite's")
	}
	const commits = 40
	write := func(t *testing.T, stop bool) string {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "delta.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if s.ckpt == nil {
			t.Fatal("a SQLite file store has no checkpointer")
		}
		if stop {
			s.stopCheckpointer()
		}
		if _, _, _, err := s.CreateRun(ctx, NewRun{ID: "resp_ck", SessionID: "sess_ck", Request: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		// The schema and the run into the file first, so that the events
		// are all that can be missing from it.
		if _, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		for range commits {
			if err := s.AddEvents(ctx, []event.Event{event.New("resp_ck", "sess_ck", "test.copied", nil)}); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	// inFile counts the events in a copy of the database file alone.
	inFile := func(t *testing.T, path string) (int, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		cp := filepath.Join(t.TempDir(), "copy.db")
		if err := os.WriteFile(cp, b, 0o600); err != nil {
			return 0, err
		}
		db, err := sql.Open("sqlite", "file:"+cp)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		var n int
		err = db.QueryRow(`SELECT count(*) FROM events WHERE name = 'test.copied'`).Scan(&n)
		return n, err
	}

	t.Run("checkpointer", func(t *testing.T) {
		path := write(t, false)
		// The checkpointer runs shortly after the commits; a copy taken
		// while it writes may be torn, and is taken again.
		var n int
		var err error
		for range 500 {
			if n, err = inFile(t, path); err == nil && n == commits {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("database file holds %d of %d committed events (last read: %v)", n, commits, err)
	})
	t.Run("without", func(t *testing.T) {
		path := write(t, true)
		n, err := inFile(t, path)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("database file holds %d events with no checkpointer: the writer checkpointed below its threshold", n)
		}
	})
}
