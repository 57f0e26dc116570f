package tool

import (
	"context"
	"slices"
	"testing"
)

func named(name string) Tool {
	return Func(name, "the "+name+" tool", true, func(context.Context, Call, struct{}) (Result, error) {
		return Text(name), nil
	})
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	r.Add(named("c"), named("a"))
	r.Add(named("b"))

	if got, want := r.Names(), []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if tl, ok := r.Get("a"); !ok || tl.Spec().Name != "a" {
		t.Fatalf("Get(a) = %v, %v", tl, ok)
	}
	if _, ok := r.Get("zz"); ok {
		t.Fatal("Get(zz) found a tool")
	}
	specNames := func(names []string) []string {
		var out []string
		for _, s := range r.Specs(names) {
			out = append(out, s.Name)
		}
		return out
	}
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{"all", nil, []string{"c", "a", "b"}},
		{"subset keeps insertion order", []string{"b", "c"}, []string{"c", "b"}},
		{"unknown names skipped", []string{"a", "nope"}, []string{"a"}},
		{"empty selection", []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := specNames(tt.names); !slices.Equal(got, tt.want) {
				t.Fatalf("Specs(%v) = %v, want %v", tt.names, got, tt.want)
			}
		})
	}
	// Names hands out a copy.
	n := r.Names()
	n[0] = "mutated"
	if r.Names()[0] != "c" {
		t.Fatal("Names() exposed the registry's slice")
	}
}

func TestRegistryRefusesWiringMistakes(t *testing.T) {
	tests := []struct {
		name string
		add  func(r *Registry)
	}{
		{"duplicate in one call", func(r *Registry) { r.Add(named("x"), named("x")) }},
		{"duplicate across calls", func(r *Registry) { r.Add(named("x")); r.Add(named("x")) }},
		{"nil tool", func(r *Registry) { r.Add(nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Add did not panic")
				}
			}()
			tt.add(NewRegistry())
		})
	}
}

func TestRegistryAddMissingSkipsKnownNames(t *testing.T) {
	r := NewRegistry()
	r.Add(named("a"))
	if n := r.AddMissing(named("a"), named("b"), named("b"), named("c")); n != 2 {
		t.Fatalf("AddMissing added %d, want 2 (b and c once each)", n)
	}
	if got, want := r.Names(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}
