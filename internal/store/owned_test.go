package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

func TestTodoPlanRoundTripAndClear(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	if got, err := s.TodoPlan(ctx, "s1"); err != nil || got != "" {
		t.Fatalf("plan of a new session = %q, %v; want empty", got, err)
	}
	at := time.UnixMilli(1_700_000_000_000)
	if err := s.SetTodoPlan(ctx, "s1", `[{"text":"a","status":"doing"}]`, at); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTodoPlan(ctx, "s1", `[{"text":"b","status":"done"}]`, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.TodoPlan(ctx, "s1"); got != `[{"text":"b","status":"done"}]` {
		t.Fatalf("plan after replace = %q", got)
	}
	if got, _ := s.TodoPlan(ctx, "s2"); got != "" {
		t.Fatalf("another session sees %q", got)
	}
	if err := s.SetTodoPlan(ctx, "s1", "", at); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.TodoPlan(ctx, "s1"); got != "" {
		t.Fatalf("plan after clear = %q", got)
	}
}

func TestToolActivationsKeepOrderAndFirstStamp(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	at := time.Unix(1_700_000_000, 0)
	if err := s.ActivateTools(ctx, "r1", []string{"z__b", "a__a"}, at); err != nil {
		t.Fatal(err)
	}
	// Re-activating keeps the first stamp; a later batch sorts after.
	if err := s.ActivateTools(ctx, "r1", []string{"c__c", "z__b"}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.ActivateTools(ctx, "r2", []string{"other__x"}, at); err != nil {
		t.Fatal(err)
	}
	got, err := s.ToolActivations(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"z__b", "a__a", "c__c"}; !slices.Equal(got, want) {
		t.Fatalf("activations = %v, want %v", got, want)
	}
	if got, _ := s.ToolActivations(ctx, "none"); len(got) != 0 {
		t.Fatalf("a run without activations has %v", got)
	}
}

func TestSecretsRows(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	at := time.UnixMilli(1_700_000_000_123).UTC()
	sec := store.Secret{Name: "B_KEY", Purpose: "p", Nonce: []byte{1, 2}, Ciphertext: []byte{3, 4, 5}, Created: at, Updated: at}
	if err := s.PutSecret(ctx, sec, false); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, sec, false); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second insert = %v, want ErrExists", err)
	}
	later := at.Add(time.Minute)
	if err := s.PutSecret(ctx, store.Secret{Name: "B_KEY", Purpose: "q", Nonce: []byte{9}, Ciphertext: []byte{8}, Created: later, Updated: later}, true); err != nil {
		t.Fatal(err)
	}
	got, err := s.Secret(ctx, "B_KEY")
	if err != nil {
		t.Fatal(err)
	}
	// A replace keeps the row's creation time: only the value and labels move.
	if got.Purpose != "q" || !slices.Equal(got.Nonce, []byte{9}) || !slices.Equal(got.Ciphertext, []byte{8}) || !got.Created.Equal(at) || !got.Updated.Equal(later) {
		t.Fatalf("after replace = %+v", got)
	}
	// A replace with no purpose keeps the one the row has; a replace of a
	// name with no row creates nothing.
	if err := s.PutSecret(ctx, store.Secret{Name: "B_KEY", Nonce: []byte{7}, Ciphertext: []byte{7}, Updated: later}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Secret(ctx, "B_KEY"); got.Purpose != "q" || !slices.Equal(got.Nonce, []byte{7}) {
		t.Fatalf("after a replace without purpose = %+v, want purpose q kept and the new value", got)
	}
	if err := s.PutSecret(ctx, store.Secret{Name: "C_KEY", Nonce: []byte{1}, Ciphertext: []byte{1}, Updated: later}, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("replace of a missing name = %v, want ErrNotFound", err)
	}
	if err := s.PutSecret(ctx, store.Secret{Name: "A_KEY", Nonce: []byte{1}, Ciphertext: []byte{1}, Created: at, Updated: at}, false); err != nil {
		t.Fatal(err)
	}
	list, err := s.Secrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "A_KEY" || list[1].Name != "B_KEY" || list[1].Ciphertext != nil || list[1].Nonce != nil {
		t.Fatalf("list = %+v, want A_KEY, B_KEY without ciphertext", list)
	}
	if _, err := s.Secret(ctx, "MISSING"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing secret = %v, want ErrNotFound", err)
	}
	if err := s.DeleteSecret(ctx, "A_KEY"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret(ctx, "A_KEY"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
}
