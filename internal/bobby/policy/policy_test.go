package policy

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseCapability(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Capability
		wantErr bool
	}{
		{"browser:mutate", BrowserMutate, false},
		{" page:read ", PageRead, false},
		{"artifact:capture", ArtifactCapture, false},
		{"artifact:read", ArtifactRead, false},
		{"file:upload", FileUpload, false},
		{"browser:fingerprint", BrowserFingerprint, false},
		{"browser:humanize", BrowserHumanize, false},
		{"browser:*", "", true},
		{"", "", true},
		{"PAGE:READ", "", true},
	} {
		got, err := ParseCapability(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseCapability(%q) = %q, %v", tt.in, got, err)
		}
		if tt.wantErr && !errors.Is(err, ErrUnknownCapability) {
			t.Errorf("ParseCapability(%q) error %v is not ErrUnknownCapability", tt.in, err)
		}
	}
}

func TestSet(t *testing.T) {
	s := NewSet(PageRead, ArtifactRead)
	if !s.Has(PageRead) || !s.Has(PageRead, ArtifactRead) || s.Has(BrowserMutate) || s.Has(PageRead, BrowserMutate) {
		t.Errorf("Has wrong for %v", s.Strings())
	}
	if !s.Has() {
		t.Error("Has() with no requirement must be true")
	}
	if s.Has("bogus") {
		t.Error("unknown capability reported held")
	}
	if got := s.Strings(); !slices.Equal(got, []string{"page:read", "artifact:read"}) {
		t.Errorf("Strings = %v", got)
	}
	if got := s.Missing(PageRead, FileUpload, BrowserMutate); !slices.Equal(got, []Capability{FileUpload, BrowserMutate}) {
		t.Errorf("Missing = %v", got)
	}
	if got := s.Intersect(NewSet(PageRead, FileUpload)).Strings(); !slices.Equal(got, []string{"page:read"}) {
		t.Errorf("Intersect = %v", got)
	}
	if _, err := ParseSet([]string{"page:read", "nope"}); err == nil {
		t.Error("ParseSet accepted an unknown capability")
	}
	full, err := ParseSet([]string{"browser:mutate", "page:read", "artifact:capture", "artifact:read", "file:upload", "browser:fingerprint", "browser:humanize"})
	if err != nil || len(full.List()) != len(All) {
		t.Errorf("ParseSet(all) = %v, %v", full.List(), err)
	}
	if (Set{}).Strings() == nil {
		t.Error("empty set Strings must be [] not nil (it is JSON-encoded)")
	}
}

func TestAuthenticate(t *testing.T) {
	now := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	agent, err := NewPrincipal("agent", NewSet(BrowserMutate), time.Time{}, HashTokenHex("agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := NewPrincipal("old", NewSet(PageRead), now.Add(-time.Second), HashTokenHex("old-token"))
	soon, _ := NewPrincipal("soon", NewSet(PageRead), now.Add(time.Hour), HashTokenHex("soon-token"))
	reg, err := NewRegistry([]Principal{agent, old, soon})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token    string
		wantName string
		wantErr  error
	}{
		{"agent-token", "agent", nil},
		{"soon-token", "soon", nil},
		{"old-token", "old", ErrExpired},
		{"agent-token ", "", ErrInvalidToken},
		{"", "", ErrInvalidToken},
		{"nope", "", ErrInvalidToken},
	} {
		p, err := reg.Authenticate(tt.token, now)
		if !errors.Is(err, tt.wantErr) || p.Name != tt.wantName {
			t.Errorf("Authenticate(%q) = %q, %v; want %q, %v", tt.token, p.Name, err, tt.wantName, tt.wantErr)
		}
	}
	if !soon.ExpiresWithin(now, 7*24*time.Hour) || agent.ExpiresWithin(now, 7*24*time.Hour) {
		t.Error("ExpiresWithin wrong")
	}
	if !agent.MatchesToken("agent-token") || agent.MatchesToken("soon-token") {
		t.Error("MatchesToken wrong")
	}
	if p, ok := reg.Lookup("soon"); !ok || p.Name != "soon" {
		t.Error("Lookup failed")
	}
}

func TestNewRegistryRejects(t *testing.T) {
	a, _ := NewPrincipal("a", NewSet(PageRead), time.Time{}, HashTokenHex("t"))
	a2, _ := NewPrincipal("a", NewSet(PageRead), time.Time{}, HashTokenHex("u"))
	b, _ := NewPrincipal("b", NewSet(PageRead), time.Time{}, HashTokenHex("t"))
	noTok, _ := NewPrincipal("n", NewSet(PageRead), time.Time{}, "")
	for name, ps := range map[string][]Principal{
		"duplicate name":  {a, a2},
		"shared token":    {a, b},
		"tokenless entry": {noTok},
	} {
		if _, err := NewRegistry(ps); err == nil {
			t.Errorf("%s: NewRegistry accepted", name)
		}
	}
	if _, err := NewPrincipal("", Set{}, time.Time{}, ""); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := NewPrincipal("x", Set{}, time.Time{}, "zz"); err == nil {
		t.Error("bad hash accepted")
	}
}

func TestContext(t *testing.T) {
	p, _ := NewPrincipal("ctx", NewSet(PageRead), time.Time{}, "")
	got, ok := FromContext(WithPrincipal(context.Background(), p))
	if !ok || got.Name != "ctx" {
		t.Errorf("FromContext = %v, %v", got, ok)
	}
	if _, ok := FromContext(context.Background()); ok {
		t.Error("principal found in empty context")
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	var ps []Principal
	for i := range 32 {
		p, _ := NewPrincipal(string(rune('a'+i)), NewSet(PageRead), time.Time{}, HashTokenHex(string(rune('a'+i))+"-token"))
		ps = append(ps, p)
	}
	reg, _ := NewRegistry(ps)
	now := time.Now()
	b.ResetTimer()
	for b.Loop() {
		if _, err := reg.Authenticate("q-token", now); err != nil {
			b.Fatal(err)
		}
	}
}
