package archtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the import-edge block of ARCHITECTURE.md from the code")

const module = "github.com/deltaharness/delta"

// root is the module's directory, two levels above this package.
var root = filepath.Join("..", "..")

// listed is one package as `go list -json` describes it.
type listed struct {
	ImportPath   string
	Doc          string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// goList runs `go list -json` on the module's own packages (default build
// tags, test files excluded).
func goList(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	for d := json.NewDecoder(bytes.NewReader(out)); d.More(); {
		var p listed
		if err := d.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// guarded reports whether rel (a path inside the module) is one the guards
// cover: the packages under internal/ and cmd/.
func guarded(rel string) bool {
	return strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "cmd/")
}

// TestPackageDocs: every package under internal/ and cmd/ says what it is
// in a package doc comment ("// Package x …" or, for a main, "// Command
// …"), so `go doc` and a newcomer can find their way.
func TestPackageDocs(t *testing.T) {
	for _, p := range goList(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if guarded(rel) && strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment: add one above its package clause in one file", rel)
		}
	}
}

// edges maps each guarded package to the module packages it imports, all
// as paths inside the module, sorted.
type edges map[string][]string

// actualEdges are the non-test import edges the code has today.
func actualEdges(t *testing.T) edges {
	t.Helper()
	out := edges{}
	for _, p := range goList(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if !guarded(rel) {
			continue
		}
		deps := []string{}
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		out[rel] = deps
	}
	return out
}

const (
	archFile   = "ARCHITECTURE.md"
	blockStart = "```imports\n"
	blockEnd   = "```\n"
)

// format renders e as the ARCHITECTURE.md block's body: one line per
// package, "package: import import …", sorted.
func (e edges) format() string {
	var b strings.Builder
	for _, pkg := range slices.Sorted(maps.Keys(e)) {
		fmt.Fprintf(&b, "%s:", pkg)
		for _, d := range e[pkg] {
			b.WriteString(" " + d)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// documented reads the import block of ARCHITECTURE.md, and returns the
// file's text with the block's bounds.
func documented(t *testing.T) (e edges, text string, start, end int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, archFile))
	if err != nil {
		t.Fatal(err)
	}
	text = string(b)
	start = strings.Index(text, blockStart)
	if start < 0 {
		t.Fatalf("%s has no %q block of import edges", archFile, strings.TrimSpace(blockStart))
	}
	start += len(blockStart)
	n := strings.Index(text[start:], blockEnd)
	if n < 0 {
		t.Fatalf("%s: the import block never ends", archFile)
	}
	end = start + n
	e = edges{}
	for i, line := range strings.Split(strings.TrimSuffix(text[start:end], "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		pkg, deps, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s import block, line %d: want \"package: import …\", got %q", archFile, i+1, line)
		}
		e[strings.TrimSpace(pkg)] = strings.Fields(deps)
	}
	return e, text, start, end
}

// TestImportEdges: the import edges between the module's own packages
// (test files aside) are exactly the ones ARCHITECTURE.md lists, no more
// and no fewer. A new edge is a design decision: make it in the document
// too. With -update the test rewrites the block from the code instead.
func TestImportEdges(t *testing.T) {
	got := actualEdges(t)
	want, text, start, end := documented(t)
	if *update {
		text = text[:start] + got.format() + text[end:]
		if err := os.WriteFile(filepath.Join(root, archFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var diffs []string
	for _, pkg := range slices.Sorted(maps.Keys(got)) {
		deps, listed := want[pkg]
		if !listed {
			diffs = append(diffs, fmt.Sprintf("package %s is not listed", pkg))
			continue
		}
		for _, d := range got[pkg] {
			if !slices.Contains(deps, d) {
				diffs = append(diffs, fmt.Sprintf("extra edge: %s imports %s", pkg, d))
			}
		}
		for _, d := range deps {
			if !slices.Contains(got[pkg], d) {
				diffs = append(diffs, fmt.Sprintf("missing edge: %s no longer imports %s", pkg, d))
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[pkg]; !ok {
			diffs = append(diffs, fmt.Sprintf("package %s is listed but does not exist", pkg))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("the import edges differ from %s:\n  %s\nIf the change is intended, update %s (its prose and diagram too):\n  go test ./test/archtest -run TestImportEdges -update",
			archFile, strings.Join(diffs, "\n  "), archFile)
	}
}

// TestBrowserTestsLeftToScriptsTest: scripts/check installs nothing, so a
// package whose tests drive Chromium (they import the browser packages or
// chromedp) must be one it leaves to scripts/test, which installs it.
func TestBrowserTestsLeftToScriptsTest(t *testing.T) {
	cmd := exec.Command(filepath.Join("scripts", "check"), "--rest")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/check --rest: %v", err)
	}
	rest := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		rest[line] = true
	}
	for _, p := range goList(t) {
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			browser := imp == module+"/internal/bobby/browser" || imp == module+"/internal/bobby/browser/browsertest" ||
				imp == module+"/internal/bobby/bidi" || imp == module+"/internal/bobby/bidi/biditest" || strings.HasPrefix(imp, "github.com/chromedp/")
			if browser && !rest[p.ImportPath] {
				t.Errorf("%s: its tests import %s but scripts/check runs them; add the package to rest_pattern in scripts/check", p.ImportPath, imp)
				break
			}
		}
	}
}
