package api

import (
	"testing"
	"time"
)

// A session cookie stops working at its expiry and under another boot's key.
func TestSessionCookieExpiresAndIsBootBound(t *testing.T) {
	s := New(Options{InspectToken: "t"})
	t0 := time.Unix(1_800_000_000, 0)
	v := s.mintSession(t0)
	if !s.sessionOK(v, t0.Add(sessionTTL-time.Second)) {
		t.Fatal("a fresh cookie is refused")
	}
	if s.sessionOK(v, t0.Add(sessionTTL)) {
		t.Error("an expired cookie is accepted")
	}
	if New(Options{InspectToken: "t"}).sessionOK(v, t0) {
		t.Error("a cookie signed by another boot's key is accepted")
	}
	for _, bad := range []string{"", ".", "abc", v + "x", "x" + v} {
		if s.sessionOK(bad, t0) {
			t.Errorf("sessionOK(%q) = true", bad)
		}
	}
}
