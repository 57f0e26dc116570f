package workflow

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func commit(t *testing.T, r *Registry, session, page string) Binding {
	t.Helper()
	res, err := r.Reserve()
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	b, _, err := res.Commit(Binding{SessionID: session, PageID: page, WorkflowID: "w-" + page, Principal: "p"})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return b
}

func TestValidHandle(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"wf_0123456789abcdef0123456789abcdef", true},
		{"wf_0123456789ABCDEF0123456789abcdef", false}, // uppercase
		{"wf_0123456789abcdef0123456789abcde", false},  // 31 hex
		{"wf_0123456789abcdef0123456789abcdef0", false},
		{"xx_0123456789abcdef0123456789abcdef", false},
		{"wf_0123456789abcdef0123456789abcdeg", false},
		{"", false},
		{"wf_", false},
	} {
		if got := ValidHandle(tt.in); got != tt.want {
			t.Errorf("ValidHandle(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	b := commit(t, New(), "s", "p")
	if !ValidHandle(b.Handle) {
		t.Errorf("minted handle %q is not valid", b.Handle)
	}
}

func TestResolveAndUnknown(t *testing.T) {
	r := New()
	b := commit(t, r, "s1", "p1")
	got, err := r.Resolve(b.Handle)
	if err != nil || got.SessionID != "s1" || got.PageID != "p1" || got.WorkflowID != "w-p1" || got.Principal != "p" {
		t.Fatalf("Resolve = %+v, %v", got, err)
	}
	for _, h := range []string{"", "garbage", "wf_ffffffffffffffffffffffffffffffff", strings.ToUpper(b.Handle)} {
		if _, err := r.Resolve(h); !errors.Is(err, ErrUnknownHandle) {
			t.Errorf("Resolve(%q) err = %v, want ErrUnknownHandle", h, err)
		}
	}
}

func TestLRUEviction(t *testing.T) {
	r := NewSized(3, 3)
	a := commit(t, r, "sa", "pa")
	b := commit(t, r, "sb", "pb")
	c := commit(t, r, "sc", "pc")
	// Touch a, so b is the least recently used.
	if _, err := r.Resolve(a.Handle); err != nil {
		t.Fatal(err)
	}
	res, _ := r.Reserve()
	d, evicted, err := res.Commit(Binding{SessionID: "sd", PageID: "pd"})
	if err != nil {
		t.Fatal(err)
	}
	if evicted == nil || evicted.Handle != b.Handle {
		t.Fatalf("evicted %+v, want %s", evicted, b.Handle)
	}
	if _, err := r.Resolve(b.Handle); !errors.Is(err, ErrUnknownHandle) {
		t.Errorf("evicted handle still resolves: %v", err)
	}
	for _, h := range []string{a.Handle, c.Handle, d.Handle} {
		if _, err := r.Resolve(h); err != nil {
			t.Errorf("live handle %s lost: %v", h, err)
		}
	}
	if got := r.Handles(); len(got) != 3 || got[0] != d.Handle {
		t.Errorf("Handles = %v (most recent first, want %s first)", got, d.Handle)
	}
}

func TestDefaultBoundsSixtyFifthEvictsOldest(t *testing.T) {
	r := New()
	var hs []string
	for i := range 65 {
		hs = append(hs, commit(t, r, fmt.Sprint("s", i), fmt.Sprint("p", i)).Handle)
	}
	if n, _ := r.Len(); n != 64 {
		t.Fatalf("committed = %d, want 64", n)
	}
	if _, err := r.Resolve(hs[0]); !errors.Is(err, ErrUnknownHandle) {
		t.Error("65th commit did not evict the oldest handle")
	}
	if _, err := r.Resolve(hs[1]); err != nil {
		t.Error("second handle evicted too")
	}
}

func TestReservationsExhaustedAndFailedStartNeverEvicts(t *testing.T) {
	r := NewSized(2, 2)
	a := commit(t, r, "sa", "pa")
	b := commit(t, r, "sb", "pb")
	r1, err := r.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := r.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reserve(); !errors.Is(err, ErrReservationsExhausted) {
		t.Fatalf("third Reserve err = %v, want ErrReservationsExhausted", err)
	}
	// Both starts fail: nothing is evicted.
	r1.Release()
	r2.Release()
	r2.Release() // harmless
	for _, h := range []string{a.Handle, b.Handle} {
		if _, err := r.Resolve(h); err != nil {
			t.Errorf("failed start evicted %s: %v", h, err)
		}
	}
	if _, reserved := r.Len(); reserved != 0 {
		t.Errorf("reserved = %d after releases", reserved)
	}
	if _, _, err := r1.Commit(Binding{}); !errors.Is(err, ErrReservationDone) {
		t.Errorf("Commit after Release err = %v", err)
	}
	// Slots are free again.
	if _, err := r.Reserve(); err != nil {
		t.Errorf("Reserve after release: %v", err)
	}
}

func TestNewGenerationInvalidatesAll(t *testing.T) {
	r := New()
	a := commit(t, r, "s", "p")
	pending, _ := r.Reserve()
	g0 := r.Generation()
	if g := r.NewGeneration(); g != g0+1 {
		t.Errorf("generation = %d, want %d", g, g0+1)
	}
	if _, err := r.Resolve(a.Handle); !errors.Is(err, ErrUnknownHandle) {
		t.Error("handle survived a new generation")
	}
	if pending.Current() {
		t.Error("old reservation reports current")
	}
	if _, _, err := pending.Commit(Binding{SessionID: "s2"}); !errors.Is(err, ErrGenerationChanged) {
		t.Errorf("stale Commit err = %v, want ErrGenerationChanged", err)
	}
	if n, reserved := r.Len(); n != 0 || reserved != 0 {
		t.Errorf("Len = %d, %d", n, reserved)
	}
	b := commit(t, r, "s", "p")
	if b.Generation != g0+1 {
		t.Errorf("binding generation = %d", b.Generation)
	}
}

func TestEvictAndPurge(t *testing.T) {
	r := New()
	a1 := commit(t, r, "sa", "pa1")
	a2 := commit(t, r, "sa", "pa2")
	b := commit(t, r, "sb", "pb")
	c := commit(t, r, "sc", "pc")
	if n := r.EvictPage("pa1"); n != 1 {
		t.Errorf("EvictPage = %d", n)
	}
	if _, err := r.Resolve(a1.Handle); err == nil {
		t.Error("page-evicted handle resolves")
	}
	if _, err := r.Resolve(a2.Handle); err != nil {
		t.Error("sibling page's handle evicted")
	}
	if n := r.EvictSession("sa"); n != 1 {
		t.Errorf("EvictSession = %d", n)
	}
	calls := 0
	n := r.Purge(func(id string) bool { calls++; return id != "sb" })
	if n != 1 || calls != 2 {
		t.Errorf("Purge removed %d with %d alive calls", n, calls)
	}
	if _, err := r.Resolve(b.Handle); err == nil {
		t.Error("purged handle resolves")
	}
	if _, err := r.Resolve(c.Handle); err != nil {
		t.Error("live session's handle purged")
	}
}

func TestBindScope(t *testing.T) {
	r := New()
	b := commit(t, r, "s", "p")
	for _, tt := range []struct {
		name    string
		args    ScopeArgs
		want    Scope
		wantErr error
	}{
		{"explicit", ScopeArgs{SessionID: "s", PageID: "p"}, Scope{SessionID: "s", PageID: "p"}, nil},
		{"handle", ScopeArgs{Handle: b.Handle}, Scope{SessionID: "s", PageID: "p", WorkflowID: "w-p", Handle: b.Handle}, nil},
		{"handle+session", ScopeArgs{Handle: b.Handle, SessionID: "s"}, Scope{}, ErrBindingConflict},
		{"handle+page", ScopeArgs{Handle: b.Handle, PageID: "p"}, Scope{}, ErrBindingConflict},
		{"handle+workflow", ScopeArgs{Handle: b.Handle, WorkflowID: "w"}, Scope{}, ErrBindingConflict},
		{"malformed", ScopeArgs{Handle: "wf_nope"}, Scope{}, ErrUnknownHandle},
		{"unknown", ScopeArgs{Handle: "wf_00000000000000000000000000000000"}, Scope{}, ErrUnknownHandle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.BindScope(tt.args)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("BindScope = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewSized(8, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var handles []string
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				res, err := r.Reserve()
				if err != nil {
					continue // exhausted under contention is expected
				}
				if i%3 == 0 {
					res.Release()
					continue
				}
				b, _, err := res.Commit(Binding{SessionID: fmt.Sprint("s", g), PageID: fmt.Sprint("p", g, i)})
				if err != nil && !errors.Is(err, ErrGenerationChanged) {
					t.Errorf("Commit: %v", err)
					return
				}
				mu.Lock()
				handles = append(handles, b.Handle)
				mu.Unlock()
				_, _ = r.Resolve(b.Handle)
				if i%17 == 0 {
					r.EvictSession(fmt.Sprint("s", g))
				}
				if g == 0 && i%25 == 0 {
					r.NewGeneration()
				}
			}
		}()
	}
	wg.Wait()
	committed, reserved := r.Len()
	if committed > 8 || reserved != 0 {
		t.Errorf("after the storm: committed=%d reserved=%d (bounds 8, 0)", committed, reserved)
	}
	seen := map[string]bool{}
	for _, h := range handles {
		if h == "" {
			continue
		}
		if seen[h] {
			t.Fatalf("handle %s minted twice", h)
		}
		seen[h] = true
	}
}

func FuzzValidHandle(f *testing.F) {
	f.Add("wf_0123456789abcdef0123456789abcdef")
	f.Add("wf_")
	f.Add("")
	f.Add("wf_é123456789abcdef0123456789abcde")
	r := New()
	f.Fuzz(func(t *testing.T, s string) {
		ok := ValidHandle(s)
		if ok && (len(s) != 35 || !strings.HasPrefix(s, "wf_")) {
			t.Fatalf("ValidHandle(%q) = true", s)
		}
		if _, err := r.Resolve(s); !errors.Is(err, ErrUnknownHandle) {
			t.Fatalf("Resolve(%q) on an empty registry = %v", s, err)
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	r := New()
	var hs []string
	for i := range 64 {
		res, _ := r.Reserve()
		bb, _, _ := res.Commit(Binding{SessionID: fmt.Sprint(i)})
		hs = append(hs, bb.Handle)
	}
	i := 0
	for b.Loop() {
		if _, err := r.Resolve(hs[i%64]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
