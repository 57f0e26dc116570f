package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deltaharness/delta/internal/store"
)

func TestRecordBootReplacesThePreviousBoot(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	if _, err := s.LastBoot(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LastBoot before any boot = %v, want ErrNotFound", err)
	}
	if _, err := s.RecordBoot(ctx, "0.1.0", "abc123"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The next boot (a new binary) reopens the file and records itself.
	s2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wrote, err := s2.RecordBoot(ctx, "0.2.0", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.LastBoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.HarnessVersion != "0.2.0" || got.Build != "" || got.SchemaVersion != store.SchemaVersion() || got.SchemaVersion == 0 {
		t.Fatalf("LastBoot = %+v, want harness 0.2.0, no build, schema %d", got, store.SchemaVersion())
	}
	if !got.BootedAt.Equal(wrote.BootedAt) {
		t.Fatalf("BootedAt = %v, want %v", got.BootedAt, wrote.BootedAt)
	}
}
