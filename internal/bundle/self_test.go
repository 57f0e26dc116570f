package bundle

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadSelf(t *testing.T) {
	const limit = 800 * 4
	head := "# Persona\n\nHEAD-MARK " + strings.Repeat("h", 2000)
	tail := strings.Repeat("t", 2000) + " TAIL-MARK\n"
	for _, tt := range []struct {
		name    string
		content *string
		mkdir   bool
		check   func(t *testing.T, got string)
	}{
		{"missing", nil, false, wantEqual("")},
		{"directory", nil, true, wantEqual("")},
		{"empty", ptr(""), false, wantEqual("")},
		{"small as is", ptr("# Persona\n\nMeridian.\n"), false, wantEqual("# Persona\n\nMeridian.\n")},
		{"exactly at cap", ptr(strings.Repeat("x", limit)), false, wantEqual(strings.Repeat("x", limit))},
		{"over cap elided", ptr(head + strings.Repeat("m", 50_000) + tail), false, func(t *testing.T, got string) {
			if len(got) > limit {
				t.Fatalf("elided to %d bytes, cap %d", len(got), limit)
			}
			if len(got) < limit-8 {
				t.Errorf("elided to %d bytes: wasted budget (cap %d)", len(got), limit)
			}
			if !strings.HasPrefix(got, "# Persona\n\nHEAD-MARK") || !strings.HasSuffix(got, "TAIL-MARK\n") {
				t.Errorf("head or tail lost: %q … %q", got[:40], got[len(got)-40:])
			}
			total := len(head) + 50_000 + len(tail)
			omitted := total - (len(got) - len(markerIn(t, got)))
			if want := "[… " + strconv.Itoa(omitted) + " bytes of DELTA.md elided"; !strings.Contains(got, want) {
				t.Errorf("marker %q does not state %d omitted bytes", markerIn(t, got), omitted)
			}
		}},
		{"multibyte elided on rune boundaries", ptr(strings.Repeat("é漢🚀", 3000)), false, func(t *testing.T, got string) {
			if len(got) > limit || !utf8.ValidString(got) {
				t.Fatalf("len %d, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
		}},
		{"at 1 MB still elided", ptr(strings.Repeat("y", SelfMaxFileBytes)), false, func(t *testing.T, got string) {
			if got == "" || len(got) > limit {
				t.Fatalf("len %d, want a non-empty elision ≤ %d", len(got), limit)
			}
		}},
		{"over 1 MB empty", ptr(strings.Repeat("z", SelfMaxFileBytes+1)), false, wantEqual("")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(Options{Dir: bundleWith(t, SelfFile, tt.content, tt.mkdir)})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, b.ReadSelf())
		})
	}
}

func TestReadSelfCustomCapAndFreshRead(t *testing.T) {
	dir := t.TempDir()
	b, err := Load(Options{Dir: dir, SelfMaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if b.SelfMaxBytes() != 400 {
		t.Fatalf("SelfMaxBytes = %d", b.SelfMaxBytes())
	}
	writeFile(t, dir, SelfFile, "v1")
	first := b.ReadSelf()
	// An edit shows up at the next attempt's read; an attempt keeps its own
	// snapshot because the engine holds the string it got.
	writeFile(t, dir, SelfFile, strings.Repeat("v2", 300))
	second := b.ReadSelf()
	if first != "v1" || len(second) > 400 || !strings.HasPrefix(second, "v2v2") {
		t.Fatalf("first %q, second (%d bytes) %q", first, len(second), clipText(second))
	}
}

func TestElideTinyCap(t *testing.T) {
	for limit := 1; limit < 200; limit++ {
		got := elide(strings.Repeat("ü", 500), limit)
		if len(got) > limit || !utf8.ValidString(got) {
			t.Fatalf("limit %d: len %d valid %v", limit, len(got), utf8.ValidString(got))
		}
	}
}

func FuzzElide(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("漢", 400), 300)
	f.Add(strings.Repeat("a", 5000), 3200)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 1 || limit > 1<<16 {
			return
		}
		got := elide(s, limit)
		if len(s) <= limit && got != s {
			t.Fatalf("fitting text changed")
		}
		if len(got) > limit {
			t.Fatalf("elide(%d bytes, %d) = %d bytes", len(s), limit, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("elision broke UTF-8")
		}
	})
}

func BenchmarkReadSelf(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SelfFile), []byte(strings.Repeat("lesson line\n", 260)), 0o644); err != nil {
		b.Fatal(err)
	}
	bd, err := Load(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		bd.ReadSelf()
	}
}

func wantEqual(want string) func(*testing.T, string) {
	return func(t *testing.T, got string) {
		t.Helper()
		if got != want {
			t.Fatalf("got %q, want %q", clipText(got), clipText(want))
		}
	}
}

func markerIn(t *testing.T, s string) string {
	t.Helper()
	i, j := strings.Index(s, "\n\n[… "), strings.Index(s, " …]\n\n")
	if i < 0 || j < i {
		t.Fatalf("no elision marker in %q", clipText(s))
	}
	return s[i : j+len(" …]\n\n")]
}
