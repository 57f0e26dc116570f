package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// TestRunListenerWakesOnQueueAndRelease: a listener on the database wakes
// when another store queues a run (at the insert's commit) and when a
// session lease is given up, and not before a queued run commits.
func TestRunListenerWakesOnQueueAndRelease(t *testing.T) {
	store.PostgresOnly(t, "LISTEN/NOTIFY is PostgreSQL's; one SQLite process has nothing to wake")
	ctx := context.Background()
	s, dsn := open(t)
	l := store.NewRunListener(dsn, nil)
	if err := l.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(ctx) })
	wait := func(what string) {
		t.Helper()
		select {
		case <-l.C():
		case <-time.After(20 * time.Second):
			t.Fatalf("no wake-up after %s", what)
		}
	}
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	wait("a run was queued")
	if err := s.AcquireSession(ctx, "s1", "w1", time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSession(ctx, "s1", "w1"); err != nil {
		t.Fatal(err)
	}
	wait("a session was released")
	select {
	case <-l.C():
		t.Fatal("a wake-up with nothing queued or released")
	default:
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRunListenerHandsOnCancels: a cancel requested through one store
// reaches a listener on the database as the run's id, at the request's
// commit; a request for a run that is already terminal sends nothing.
func TestRunListenerHandsOnCancels(t *testing.T) {
	store.PostgresOnly(t, "LISTEN/NOTIFY is PostgreSQL's; on SQLite the one daemon cancels its own runs")
	ctx := context.Background()
	s, dsn := open(t)
	other := openAgain(t, dsn)
	got := make(chan string, 8)
	l := store.NewRunListener(dsn, nil)
	l.OnCancel(func(id string) { got <- id })
	if err := l.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(ctx) })
	next := func() string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(20 * time.Second):
			t.Fatal("no cancel notification")
			return ""
		}
	}
	newRun(t, s, store.NewRun{ID: "r1", SessionID: "s1"})
	newRun(t, s, store.NewRun{ID: "r2", SessionID: "s2"})
	if _, _, err := s.Start(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if err := other.RequestCancel(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if id := next(); id != "r1" {
		t.Fatalf("cancel notification for %q, want r1", id)
	}
	if _, err := s.Finish(ctx, "r1", store.StatusCancelled, nil, "cancelled"); err != nil {
		t.Fatal(err)
	}
	// r1 is terminal now: asking again changes nothing and tells no one,
	// so the next notification is r2's.
	if err := other.RequestCancel(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := other.RequestCancel(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if id := next(); id != "r2" {
		t.Fatalf("cancel notification for %q, want r2 (a terminal run's request must send nothing)", id)
	}
}

// TestRunListenerRefusesAnUnreachableDatabase: Open fails with the
// database named without its password.
func TestRunListenerRefusesAnUnreachableDatabase(t *testing.T) {
	l := store.NewRunListener("postgres://delta:hunter2@127.0.0.1:1/delta?connect_timeout=2", nil)
	err := l.Open(context.Background())
	if err == nil {
		t.Fatal("listener opened on a closed port")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error shows the password: %v", err)
	}
}

// TestBindWorkspace: the first worker records its workspace; a second one
// with the same path starts, one with another path is refused with both
// paths named.
func TestBindWorkspace(t *testing.T) {
	ctx := context.Background()
	s, dsn := open(t)
	if err := s.BindWorkspace(ctx, "/srv/delta/ws"); err != nil {
		t.Fatal(err)
	}
	other := openAgain(t, dsn)
	if err := other.BindWorkspace(ctx, "/srv/delta/ws"); err != nil {
		t.Fatalf("same workspace refused: %v", err)
	}
	err := other.BindWorkspace(ctx, "/home/me/ws")
	if !errors.Is(err, store.ErrWorkspaceMismatch) {
		t.Fatalf("other workspace: err %v, want ErrWorkspaceMismatch", err)
	}
	for _, p := range []string{"/srv/delta/ws", "/home/me/ws"} {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not name %s", err, p)
		}
	}
}
