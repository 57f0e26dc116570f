package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideRefs are references a newcomer cannot follow from the repository:
// item ids of a checklist that lives outside it, and the nickname of the
// runtime this one was modelled on.
var outsideRefs = regexp.MustCompile(`\b[DB]-[A-Z]{2,}-\d\d\b|(?i)\bthe seed\b|\bseed's\b|\bseed guide\b`)

// TestCommentsStandAlone: code comments say the behaviour and its reason,
// or point to a document in the repository; they never cite what only an
// outside document explains.
func TestCommentsStandAlone(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if m := outsideRefs.FindString(c.Text); m != "" {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: comment cites %q; say the behaviour and why instead", rel, fset.Position(c.Pos()).Line, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
