package remember_test

import (
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/tool/remember"
)

func TestDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	new := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\n"
	want := "--- rev\n+++ cur\n@@ -1,10 +1,11 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n i\n j\n+k\n"
	if got := remember.Diff("rev", old, "cur", new); got != want {
		t.Fatalf("Diff =\n%s\nwant\n%s", got, want)
	}
	far := strings.Repeat("x\n", 20)
	got := remember.Diff("rev", "1\n"+far+"2\n", "cur", "one\n"+far+"two\n")
	if strings.Count(got, "@@ ") != 2 || !strings.Contains(got, "@@ -1,4 +1,4 @@\n-1\n+one\n x\n x\n x\n") ||
		!strings.Contains(got, "@@ -19,4 +19,4 @@\n x\n x\n x\n-2\n+two\n") {
		t.Fatalf("two distant changes =\n%s\nwant two hunks", got)
	}
	if remember.Diff("a", "same", "b", "same") != "" {
		t.Fatal("equal files have a diff")
	}
	if got := remember.Diff("rev", "", "cur", "new\n"); got != "--- rev\n+++ cur\n@@ -0,0 +1,1 @@\n+new\n" {
		t.Fatalf("from empty = %q", got)
	}
}
