package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture builds a workspace next to an "outside" directory and plants
// files and symlinks of every kind Resolve must judge. It returns the
// workspace and the outside directory's real path.
func fixture(t testing.TB) (*Root, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	out := filepath.Join(base, "outside")
	for _, d := range []string{ws, out, filepath.Join(ws, "dir", "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ws, "a.txt"):        "alpha",
		filepath.Join(ws, "dir", "b.txt"): "bravo",
		filepath.Join(out, "secret.txt"):  "secret",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"leak":         filepath.Join(out, "secret.txt"), // absolute, escaping, at the leaf
		"leakrel":      "../outside/secret.txt",          // relative, escaping, at the leaf
		"leakdir":      out,                              // escaping directory in the middle of a path
		"dir/up":       "../..",                          // climbs out from a subfolder
		"inlink":       "dir/b.txt",                      // inside: fine
		"inabs":        filepath.Join(ws, "dir"),         // absolute but inside: fine
		"dangling-out": filepath.Join(out, "nope"),       // dangling and escaping
		"dangling-in":  "dir/new.txt",                    // dangling inside: fine
		"loop1":        "loop2",
		"loop2":        "loop1",
		"c1":           "c2", // a chain ending inside
		"c2":           "dir",
		"dir/sub/back": "../b.txt",              // ".." inside a target, staying inside
		"reenter":      "../ws/dir",             // leaves and comes back: the real target is inside
		"viaout":       "leakdir/../ws/a.txt",   // passes through an escaping link: refused
		"dir/sub/deep": "../../../outside/nope", // dangling escape below a subfolder
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	return root, out
}

func TestResolve(t *testing.T) {
	root, _ := fixture(t)
	ws := root.Dir()
	tests := []struct {
		rel     string
		want    string // relative to ws, when accepted
		wantErr error
	}{
		{rel: "a.txt", want: "a.txt"},
		{rel: "./dir/../a.txt", want: "a.txt"},
		{rel: "dir/", want: "dir"},
		{rel: ".", want: "."},
		{rel: "new/deep/file.txt", want: "new/deep/file.txt"},
		{rel: "a.txt/below", want: "a.txt/below"}, // fails later with ENOTDIR, confined now
		{rel: "inlink", want: "dir/b.txt"},
		{rel: "inabs/b.txt", want: "dir/b.txt"},
		{rel: "dangling-in", want: "dir/new.txt"},
		{rel: "c1/b.txt", want: "dir/b.txt"},
		{rel: "dir/sub/back", want: "dir/b.txt"},
		{rel: "reenter/b.txt", want: "dir/b.txt"},
		{rel: "", wantErr: ErrBadPath},
		{rel: "a\x00b", wantErr: ErrBadPath},
		{rel: "loop1", wantErr: ErrBadPath},
		{rel: "/etc/passwd", wantErr: ErrOutside},
		{rel: filepath.Join(ws, "a.txt"), wantErr: ErrOutside},
		{rel: "..", wantErr: ErrOutside},
		{rel: "../outside/secret.txt", wantErr: ErrOutside},
		{rel: "dir/../../x", wantErr: ErrOutside},
		{rel: "dir/../../ws/a.txt", wantErr: ErrOutside}, // ".." leaving the root is refused even if it returns
		{rel: "leak", wantErr: ErrOutside},
		{rel: "leakrel", wantErr: ErrOutside},
		{rel: "leakdir/secret.txt", wantErr: ErrOutside},
		{rel: "leakdir", wantErr: ErrOutside},
		{rel: "dir/up", wantErr: ErrOutside},
		{rel: "dir/up/outside/secret.txt", wantErr: ErrOutside},
		{rel: "dangling-out", wantErr: ErrOutside},
		{rel: "dir/sub/deep", wantErr: ErrOutside},
		{rel: "viaout", wantErr: ErrOutside},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
			got, err := root.Resolve(tt.rel)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", tt.rel, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.rel, err)
			}
			if want := filepath.Join(ws, tt.want); got != want {
				t.Fatalf("Resolve(%q) = %q, want %q", tt.rel, got, want)
			}
		})
	}
}

func TestResolveErrorsGuideTheModel(t *testing.T) {
	root, _ := fixture(t)
	tests := []struct {
		rel  string
		want string
	}{
		{filepath.Join(root.Dir(), "dir", "b.txt"), `use "dir/b.txt"`},
		{"leakdir/secret.txt", `symlink "leakdir"`},
		{"../x", "climbs above the workspace root"},
	}
	for _, tt := range tests {
		_, err := root.Resolve(tt.rel)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Resolve(%q) error = %v, want it to mention %q", tt.rel, err, tt.want)
		}
	}
}

func TestOpen(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("creates a missing directory", func(t *testing.T) {
		dir := filepath.Join(base, "fresh", "ws")
		root, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("workspace directory not created: %v", err)
		}
		if root.Dir() != dir {
			t.Fatalf("Dir() = %q, want %q", root.Dir(), dir)
		}
	})
	t.Run("resolves a symlinked directory to its real path", func(t *testing.T) {
		real := filepath.Join(base, "real")
		link := filepath.Join(base, "link")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		root, err := Open(link)
		if err != nil {
			t.Fatal(err)
		}
		if root.Dir() != real {
			t.Fatalf("Dir() = %q, want %q", root.Dir(), real)
		}
	})
	t.Run("refuses a file", func(t *testing.T) {
		f := filepath.Join(base, "file")
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(f); err == nil {
			t.Fatal("Open(file) succeeded")
		}
	})
	t.Run("refuses empty", func(t *testing.T) {
		if _, err := Open(""); !errors.Is(err, ErrBadPath) {
			t.Fatalf("Open(\"\") = %v, want ErrBadPath", err)
		}
	})
}

// FuzzResolve checks that any accepted path lands inside the root and, when
// it exists, names the same file the kernel reaches and is symlink-free.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"a.txt", ".", "..", "../x", "/etc/passwd", "dir/../../ws/a.txt", "leak", "leakdir/secret.txt",
		"dir/up/ws/a.txt", "inabs/b.txt", "c1/sub/back", "reenter/../a.txt", "dangling-in", "loop1/x",
		"dir//sub/./back", "a\x00", "viaout", "dir/sub/deep/x", "", "~", "dir/sub/../../inlink",
	} {
		f.Add(s)
	}
	root, _ := fixture(f)
	ws := root.Dir()
	f.Fuzz(func(t *testing.T, rel string) {
		real, err := root.Resolve(rel)
		if err != nil {
			if !errors.Is(err, ErrOutside) && !errors.Is(err, ErrBadPath) {
				t.Fatalf("Resolve(%q) error %v is neither ErrOutside nor ErrBadPath", rel, err)
			}
			return
		}
		if real != ws && !strings.HasPrefix(real, ws+"/") {
			t.Fatalf("Resolve(%q) = %q, outside %q", rel, real, ws)
		}
		if filepath.Clean(real) != real {
			t.Fatalf("Resolve(%q) = %q, not clean", rel, real)
		}
		fi, err := os.Lstat(real)
		if err != nil {
			return
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("Resolve(%q) = %q, a symlink", rel, real)
		}
		if ev, err := filepath.EvalSymlinks(real); err != nil || ev != real {
			t.Fatalf("Resolve(%q) = %q, but the real path is %q (%v)", rel, real, ev, err)
		}
		kernel, err := os.Stat(filepath.Join(ws, filepath.Clean(rel)))
		if err == nil && !os.SameFile(kernel, fi) {
			t.Fatalf("Resolve(%q) = %q, but the kernel reaches a different file", rel, real)
		}
	})
}
