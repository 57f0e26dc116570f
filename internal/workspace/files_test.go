package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadFile(t *testing.T) {
	root, _ := fixture(t)
	checkRel(t, "ReadFile", func(rel string) (string, error) {
		b, err := root.ReadFile(rel)
		return string(b), err
	}, []relCase[string]{
		{rel: "a.txt", want: "alpha"},
		{rel: "inlink", want: "bravo"},
		{rel: "missing.txt", wantErr: fs.ErrNotExist},
		{rel: "leak", wantErr: ErrOutside},
		{rel: "leakdir/secret.txt", wantErr: ErrOutside},
		{rel: "../outside/secret.txt", wantErr: ErrOutside},
	})
}

// relCase is one path a lookup is asked for and what it must answer: want,
// or an error that is wantErr.
type relCase[T comparable] struct {
	rel     string
	want    T
	wantErr error
}

// checkRel asks lookup (the method name names in failures) for each case's
// path.
func checkRel[T comparable](t *testing.T, name string, lookup func(rel string) (T, error), cases []relCase[T]) {
	t.Helper()
	for _, tt := range cases {
		got, err := lookup(tt.rel)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s(%q) = %#v, %v; want %v", name, tt.rel, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s(%q) = %#v, %v; want %#v", name, tt.rel, got, err, tt.want)
		}
	}
}

func TestWriteFile(t *testing.T) {
	root, out := fixture(t)
	ws := root.Dir()

	t.Run("creates parents", func(t *testing.T) {
		if err := root.WriteFile("new/deep/c.txt", []byte("charlie")); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, filepath.Join(ws, "new/deep/c.txt")); got != "charlie" {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("replaces and keeps the mode", func(t *testing.T) {
		p := filepath.Join(ws, "a.txt")
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := root.WriteFile("a.txt", []byte("again")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
		}
		if got := readAll(t, p); got != "again" {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("writes through an inside symlink", func(t *testing.T) {
		if err := root.WriteFile("inlink", []byte("via link")); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, filepath.Join(ws, "dir/b.txt")); got != "via link" {
			t.Fatalf("target content = %q", got)
		}
		if fi, err := os.Lstat(filepath.Join(ws, "inlink")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link itself was replaced: %v", err)
		}
	})
	t.Run("creates the target of a dangling inside symlink", func(t *testing.T) {
		if err := root.WriteFile("dangling-in", []byte("new")); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, filepath.Join(ws, "dir/new.txt")); got != "new" {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("refuses escapes", func(t *testing.T) {
		for _, rel := range []string{"leak", "dangling-out", "leakdir/x.txt", "../outside/x.txt"} {
			if err := root.WriteFile(rel, []byte("pwned")); !errors.Is(err, ErrOutside) {
				t.Errorf("WriteFile(%q) = %v, want ErrOutside", rel, err)
			}
		}
		if got := readAll(t, filepath.Join(out, "secret.txt")); got != "secret" {
			t.Fatalf("outside file changed to %q", got)
		}
		if _, err := os.Stat(filepath.Join(out, "nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("dangling escape target was created: %v", err)
		}
	})
	t.Run("a name at the length limit", func(t *testing.T) {
		long := strings.Repeat("n", 255)
		if err := root.WriteFile(long, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, filepath.Join(ws, long)); got != "x" {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("refuses a directory", func(t *testing.T) {
		if err := root.WriteFile("dir", []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("WriteFile(dir) = %v, want 'is a directory'", err)
		}
	})
	t.Run("leaves no temporary files", func(t *testing.T) {
		var stray []string
		if err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.Contains(d.Name(), ".tmp-") {
				stray = append(stray, p)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(stray) > 0 {
			t.Fatalf("temporary files left: %v", stray)
		}
	})
}

func TestWriteFileConcurrent(t *testing.T) {
	root, _ := fixture(t)
	done := make(chan error)
	const n = 8
	for i := range n {
		go func() { done <- root.WriteFile("race.txt", []byte(strings.Repeat(fmt.Sprint(i), 4096))) }()
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, filepath.Join(root.Dir(), "race.txt"))
	if len(got) != 4096 || strings.Count(got, got[:1]) != 4096 {
		t.Fatalf("a concurrent write tore the file: %d bytes, first %q", len(got), got[:1])
	}
}

func TestMove(t *testing.T) {
	tests := []struct {
		name      string
		from, to  string
		overwrite bool
		wantErr   error  // sentinel, or nil
		errText   string // substring, when no sentinel fits
		check     func(t *testing.T, ws string)
	}{
		{name: "rename", from: "a.txt", to: "renamed.txt", check: func(t *testing.T, ws string) {
			if readAll(t, filepath.Join(ws, "renamed.txt")) != "alpha" {
				t.Fatal("content lost")
			}
			if _, err := os.Stat(filepath.Join(ws, "a.txt")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("source still there")
			}
		}},
		{name: "into new folders", from: "a.txt", to: "x/y/a.txt", check: func(t *testing.T, ws string) {
			if readAll(t, filepath.Join(ws, "x/y/a.txt")) != "alpha" {
				t.Fatal("content lost")
			}
		}},
		{name: "refuses to overwrite", from: "a.txt", to: "dir/b.txt", wantErr: fs.ErrExist, check: func(t *testing.T, ws string) {
			if readAll(t, filepath.Join(ws, "dir/b.txt")) != "bravo" {
				t.Fatal("destination changed")
			}
		}},
		{name: "overwrite trashes the old file", from: "a.txt", to: "dir/b.txt", overwrite: true, check: func(t *testing.T, ws string) {
			if readAll(t, filepath.Join(ws, "dir/b.txt")) != "alpha" {
				t.Fatal("not overwritten")
			}
			ents, _ := os.ReadDir(filepath.Join(ws, TrashDir))
			if len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), "-b.txt") {
				t.Fatalf("trash = %v, want the old b.txt", ents)
			}
		}},
		{name: "moves a symlink itself", from: "inlink", to: "dir/sub/inlink2", check: func(t *testing.T, ws string) {
			fi, err := os.Lstat(filepath.Join(ws, "dir/sub/inlink2"))
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("link not moved as a link: %v", err)
			}
			if readAll(t, filepath.Join(ws, "dir/b.txt")) != "bravo" {
				t.Fatal("target disturbed")
			}
		}},
		{name: "missing source", from: "nope.txt", to: "x.txt", wantErr: fs.ErrNotExist},
		{name: "outside source", from: "leak", to: "x.txt", wantErr: ErrOutside},
		{name: "outside destination", from: "a.txt", to: "leakdir/a.txt", wantErr: ErrOutside},
		{name: "into itself", from: "dir", to: "dir/sub/dir", errText: "inside itself"},
		{name: "same path", from: "a.txt", to: "./a.txt", errText: "same path"},
		{name: "the root", from: ".", to: "x", errText: "workspace root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := fixture(t)
			err := root.Move(tt.from, tt.to, tt.overwrite)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Move(%q, %q) = %v, want %v", tt.from, tt.to, err, tt.wantErr)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("Move(%q, %q) = %v, want %q", tt.from, tt.to, err, tt.errText)
				}
			case err != nil:
				t.Fatalf("Move(%q, %q): %v", tt.from, tt.to, err)
			}
			if tt.check != nil {
				tt.check(t, root.Dir())
			}
		})
	}
}

func TestList(t *testing.T) {
	root, _ := fixture(t)
	if err := root.WriteFile(".delta/spill/r.c.txt", []byte("hidden")); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile("dir/sub/.delta/shown.txt", []byte("a subfolder .delta is ordinary")); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile(".hidden", []byte("dotfile")); err != nil {
		t.Fatal(err)
	}
	paths := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			p := e.Path
			if e.IsDir {
				p += "/"
			}
			out = append(out, p)
		}
		return out
	}

	t.Run("top level hides .delta", func(t *testing.T) {
		es, trunc, err := root.List(".", false, 0)
		if err != nil || trunc {
			t.Fatalf("List: %v, truncated %v", err, trunc)
		}
		got := paths(es)
		if slices.Contains(got, ".delta/") {
			t.Fatalf("List shows .delta: %v", got)
		}
		for _, want := range []string{"a.txt", "dir/", ".hidden"} {
			if !slices.Contains(got, want) {
				t.Fatalf("List = %v, missing %q", got, want)
			}
		}
		for _, e := range es {
			if e.Path == "a.txt" && e.Size != int64(len("alpha")) {
				t.Fatalf("a.txt size = %d", e.Size)
			}
			if e.Path == "inlink" && !e.Symlink {
				t.Fatal("inlink not marked as a symlink")
			}
		}
	})
	t.Run("recursive", func(t *testing.T) {
		es, _, err := root.List("dir", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := paths(es)
		for _, want := range []string{"dir/b.txt", "dir/sub/", "dir/sub/back", "dir/sub/.delta/shown.txt"} {
			if !slices.Contains(got, want) {
				t.Fatalf("List(dir, recursive) = %v, missing %q", got, want)
			}
		}
	})
	t.Run("recursive from the root never enters .delta", func(t *testing.T) {
		es, _, err := root.List(".", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := paths(es)
		for _, p := range got {
			if strings.HasPrefix(p, ".delta") {
				t.Fatalf("List(., recursive) shows %q", p)
			}
		}
		for _, want := range []string{".hidden", "dir/sub/.delta/shown.txt"} {
			if !slices.Contains(got, want) {
				t.Fatalf("List(., recursive) = %v, missing %q", got, want)
			}
		}
	})
	t.Run("bounded", func(t *testing.T) {
		es, trunc, err := root.List(".", true, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 3 || !trunc {
			t.Fatalf("List(max 3) = %d entries, truncated %v", len(es), trunc)
		}
	})
	t.Run("through a symlinked directory keeps the caller's name", func(t *testing.T) {
		es, _, err := root.List("c1", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(es); !slices.Contains(got, "c1/b.txt") {
			t.Fatalf("List(c1) = %v, want c1/b.txt", got)
		}
	})
	t.Run("a file lists itself", func(t *testing.T) {
		es, _, err := root.List("a.txt", false, 0)
		if err != nil || len(es) != 1 || es[0].Path != "a.txt" {
			t.Fatalf("List(a.txt) = %v, %v", es, err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		if _, _, err := root.List("leakdir", false, 0); !errors.Is(err, ErrOutside) {
			t.Fatalf("List(leakdir) = %v, want ErrOutside", err)
		}
		if _, _, err := root.List("nope", false, 0); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("List(nope) = %v, want ErrNotExist", err)
		}
	})
}

func TestExists(t *testing.T) {
	root, _ := fixture(t)
	checkRel(t, "Exists", root.Exists, []relCase[bool]{
		{rel: "a.txt", want: true},
		{rel: "dir", want: true},
		{rel: "inlink", want: true},
		{rel: "dangling-in", want: false},
		{rel: "nope", want: false},
		{rel: "leak", wantErr: ErrOutside},
	})
}
