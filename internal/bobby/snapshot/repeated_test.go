package snapshot

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestRepeatedSiblingsGolden: cards whose box the tree flattens away, table
// rows and list items render as a shape header and one line per item; runs
// too short, or of items with nothing to act on, keep their lines.
func TestRepeatedSiblingsGolden(t *testing.T) {
	ctx := openPage(t, "/repeated.html")
	s := take(t, ctx, Options{})
	const golden = "testdata/repeated.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(s.Text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	// Refs are backend node ids, which depend on what the renderer built
	// before: the golden fixes the shape, not the numbers.
	refs := regexp.MustCompile(`ref=e\d+`)
	if got := refs.ReplaceAllString(s.Text, "ref=eN"); got != refs.ReplaceAllString(string(want), "ref=eN") {
		t.Errorf("text:\n%s\nwant (%s):\n%s", s.Text, golden, want)
	}
	// An item line's refs resolve, inside an iframe and a shadow root too.
	for _, name := range []string{"Take offer 3", "Remove saved 2"} {
		m := regexp.MustCompile(`"` + name + `" \[ref=(e\d+)\]`).FindStringSubmatch(s.Text)
		if m == nil {
			t.Errorf("no item cell for %q", name)
			continue
		}
		r, err := Resolve(ctx, Target{Role: "button", Name: name})
		if err != nil || r.Ref() != m[1] {
			t.Errorf("button %q resolves to %v (%v), its item line says %s", name, r.Ref(), err, m[1])
		}
	}
	if s.Truncated || s.ShownNodes != s.TotalNodes || len(s.Nodes) != s.TotalNodes {
		t.Errorf("shown %d (nodes %d) of %d, truncated %v", s.ShownNodes, len(s.Nodes), s.TotalNodes, s.Truncated)
	}
}

// TestCatalogueWholeByDefault: a page of 120 cards shows whole under the
// default bounds, every card's button on its item line with a ref that
// resolves to that very button, in well under half the bytes of one line
// per node.
func TestCatalogueWholeByDefault(t *testing.T) {
	ctx := openPage(t, "/catalog.html")
	s := take(t, ctx, Options{})
	if s.Truncated {
		t.Fatalf("the default bounds cut the catalogue: %d of %d nodes, %d bytes", s.ShownNodes, s.TotalNodes, s.Bytes)
	}
	if !strings.Contains(s.Text, "\n    120 × listitem (link [h3] | text | button):\n") {
		t.Errorf("no shape header for the 120 cards:\n%.800s", s.Text)
	}
	rows := regexp.MustCompile(`(?m)^    - "([^"]+)" \[ref=e\d+\] \| [^|]+ \| "(Add [^"]+ to cart)" \[ref=(e\d+)\]$`).FindAllStringSubmatch(s.Text, -1)
	if len(rows) != 120 {
		t.Fatalf("%d item lines with a button ref, want 120:\n%.1200s", len(rows), s.Text)
	}
	last := rows[len(rows)-1]
	r, err := Resolve(ctx, Target{Role: "button", Name: last[2]})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ref() != last[3] {
		t.Errorf("button %q resolves to %s, the item line says %s", last[2], r.Ref(), last[3])
	}
	// One line per node would be ~19 KB; the items keep it far smaller.
	if s.Bytes > 15000 {
		t.Errorf("catalogue text is %d bytes; the compact items should keep it under 15000", s.Bytes)
	}
}
