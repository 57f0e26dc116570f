package store_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sqlImports are the packages that run SQL: database/sql (and its driver
// interface) and the SQLite drivers Go programs use.
var sqlImports = []string{
	"database/sql",
	"modernc.org/sqlite",
	"github.com/mattn/go-sqlite3",
	"github.com/ncruces/go-sqlite3",
	"github.com/glebarez/go-sqlite",
	"github.com/glebarez/sqlite",
	"zombiezen.com/go/sqlite",
	"crawshaw.io/sqlite",
	"github.com/jackc/pgx",
	"github.com/lib/pq",
}

// foreignSQL are the packages allowed SQL outside internal/store, each for
// a database that is not the daemon's. internal/collector is the reference
// telemetry collector: its PostgreSQL agent_events table belongs to the
// operator's collector, never to the daemon's SQLite file (its pgtest
// subpackage starts the throwaway PostgreSQL its tests use).
var foreignSQL = map[string]bool{"internal/collector": true}

// TestOnlyStoreRunsSQL keeps the schema with one owner: no production Go
// file under internal/ or cmd/ outside package store imports database/sql or
// a SQLite driver. Other packages reach their tables through store methods
// (tests may open the file directly to inspect it).
func TestOnlyStoreRunsSQL(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/store" || foreignSQL[rel] || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				for _, banned := range sqlImports {
					if p == banned || strings.HasPrefix(p, banned+"/") {
						t.Errorf("%s imports %s: SQL belongs in internal/store; give store a method and declare the interface the caller needs", rel, p)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s: is the walk rooted at the module?", checked, root)
	}
}
