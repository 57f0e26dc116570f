package grep

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		glob string
		rel  string
		want bool
	}{
		{"*.go", "a/b/main.go", true},
		{"*.go", "a/b/main.ts", false},
		{"*.{md,txt}", "notes/x.txt", true},
		{"*.{md,txt}", "notes/x.rs", false},
		{"src/**/*.ts", "src/x.ts", true},
		{"src/**/*.ts", "src/a/b/c/x.ts", true},
		{"src/**/*.ts", "lib/src/x.ts", false},
		{"**/test_*.py", "test_a.py", true},
		{"**/test_*.py", "a/b/test_a.py", true},
		{"docs/*", "docs/a/b.md", false},
		{"docs/**", "docs/a/b.md", true},
		{"./src/*.go", "src/a.go", true},
		{"{a,b{c,d}}.txt", "bd.txt", true},
		{"{a,b{c,d}}.txt", "b.txt", false},
		{"[abc].go", "b.go", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.glob)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.glob, err)
		}
		if got := g.match(tt.rel); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.glob, tt.rel, got, tt.want)
		}
	}
}

func FuzzGlob(f *testing.F) {
	for _, s := range []string{"*.go", "src/**/*.ts", "*.{md,txt}", "{a,{b,c}}", "[a-", "}{", "**", "a\\", "{,}{,}{,}"} {
		f.Add(s, "src/a/b.ts")
	}
	f.Fuzz(func(t *testing.T, pattern, rel string) {
		if len(pattern) > 200 || len(rel) > 200 {
			return
		}
		g, err := compileGlob(pattern)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(g.alts) == 0 || len(g.alts) > maxGlobAlternatives {
			t.Fatalf("compileGlob(%q) gave %d alternatives", pattern, len(g.alts))
		}
		_ = g.match(strings.Trim(rel, "/"))
	})
}
