package crash

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// TestLease drives the single-writer lease through two Store handles on one
// file, as two machines sharing a volume would (the OS lock already refuses a
// second process on the same host).
func TestLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "delta.db")
	a, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t0 := time.UnixMilli(1_800_000_000_000)
	ttl := 30 * time.Second
	steps := []struct {
		name    string
		st      *store.Store
		holder  string
		at      time.Time
		wantErr bool
	}{
		{"free lease taken", a, "m-a", t0, false},
		{"other live holder refused", b, "m-b", t0.Add(10 * time.Second), true},
		{"self renews", a, "m-a", t0.Add(20 * time.Second), false},
		{"still refused after renewal", b, "m-b", t0.Add(40 * time.Second), true},
		{"self-held reacquired after a crash (no release)", a, "m-a", t0.Add(45 * time.Second), false},
		{"expired lease taken over", b, "m-b", t0.Add(80 * time.Second), false},
		{"old holder now refused", a, "m-a", t0.Add(81 * time.Second), true},
	}
	for _, s := range steps {
		l, err := s.st.AcquireLease(ctx, s.holder, ttl, s.at)
		if s.wantErr {
			if !errors.Is(err, store.ErrLeaseHeld) {
				t.Fatalf("%s: err = %v, want ErrLeaseHeld", s.name, err)
			}
			if !strings.Contains(err.Error(), "held by") {
				t.Fatalf("%s: error %q does not name the holder", s.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if l.Holder != s.holder || !l.ExpiresAt.Equal(s.at.Add(ttl)) {
			t.Fatalf("%s: lease %+v", s.name, l)
		}
		cur, err := a.CurrentLease(ctx)
		if err != nil || cur.Holder != s.holder {
			t.Fatalf("%s: stored lease %+v, %v", s.name, cur, err)
		}
	}
	// A clean release frees the lease at once for the other holder.
	if err := b.ReleaseLease(ctx, "m-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcquireLease(ctx, "m-a", ttl, t0.Add(82*time.Second)); err != nil {
		t.Fatalf("after release: %v", err)
	}
	for _, bad := range []struct {
		holder string
		ttl    time.Duration
	}{{"", ttl}, {"m-a", 0}} {
		if _, err := a.AcquireLease(ctx, bad.holder, bad.ttl, t0); err == nil {
			t.Fatalf("AcquireLease(%q, %s) accepted", bad.holder, bad.ttl)
		}
	}
}
