package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMove(t *testing.T) {
	tests := []changeCase{
		{name: "rename", args: m{"from": "notes/a.md", "to": "notes/b.md"}, want: []string{"moved notes/a.md to notes/b.md"},
			check: map[string]string{"notes/a.md": "<missing>", "notes/b.md": "alpha\n"}},
		{name: "into new folders", args: m{"from": "notes/a.md", "to": "archive/2026/a.md"}, check: map[string]string{"archive/2026/a.md": "alpha\n"}},
		{name: "into an existing folder", args: m{"from": "notes/a.md", "to": "box"}, want: []string{"moved notes/a.md to box/a.md"},
			check: map[string]string{"box/a.md": "alpha\n"}},
		{name: "refuses to overwrite", args: m{"from": "notes/a.md", "to": "box/x.txt"}, isErr: true,
			want: []string{"box/x.txt already exists", "overwrite"}, check: map[string]string{"notes/a.md": "alpha\n", "box/x.txt": "old"}},
		{name: "overwrite", args: m{"from": "notes/a.md", "to": "box/x.txt", "overwrite": true},
			check: map[string]string{"notes/a.md": "<missing>", "box/x.txt": "alpha\n"}},
		{name: "protected source", args: m{"from": "POLICY.md", "to": "notes/policy-copy.md"}, isErr: true,
			want: []string{"cannot move POLICY.md", "protected"}, check: map[string]string{"POLICY.md": "be careful\n"}},
		{name: "protected destination", args: m{"from": "notes/a.md", "to": "DELTA.md", "overwrite": true}, isErr: true,
			want: []string{"DELTA.md", "protected"}, check: map[string]string{"DELTA.md": "self\n", "notes/a.md": "alpha\n"}},
		{name: "into .delta", args: m{"from": "notes/a.md", "to": ".delta/a.md"}, isErr: true, want: []string{"protected"}},
		{name: "folder into .delta by folder rule", args: m{"from": "notes/a.md", "to": ".DELTA"}, isErr: true, want: []string{"protected"}},
		{name: "to a root .env", args: m{"from": "notes/a.md", "to": ".env.production"}, isErr: true, want: []string{"protected"}},
		{name: "escaping destination", args: m{"from": "notes/a.md", "to": "leakdir/a.md"}, isErr: true,
			want: []string{"outside the workspace"}, check: map[string]string{"notes/a.md": "alpha\n"}},
		{name: "traversal destination", args: m{"from": "notes/a.md", "to": "../a.md"}, isErr: true, want: []string{"outside the workspace"}},
		{name: "escaping source", args: m{"from": "leak", "to": "stolen.txt"}, isErr: true, want: []string{"outside the workspace"}, check: map[string]string{"stolen.txt": "<missing>"}},
		{name: "missing source", args: m{"from": "nope.md", "to": "x.md"}, isErr: true, want: []string{"cannot move nope.md to x.md: the source does not exist"}},
		{name: "folder into itself", args: m{"from": "notes", "to": "notes/sub/notes"}, isErr: true,
			want: []string{"cannot move notes to notes/sub/notes: a folder cannot be moved inside itself"}},
		{name: "missing to", args: m{"from": "notes/a.md"}, isErr: true, want: []string{`missing required field "to"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "box/x.txt", "old")
			res := call(t, Move(e.ws), tt.args)
			expect(t, res, tt.isErr, tt.want...)
			if strings.Count(res.Text, "cannot move") > 1 {
				t.Errorf("reason repeats itself: %q", res.Text)
			}
			e.expectContents(t, tt.check)
		})
	}
}

func TestMoveOverwriteKeepsOldInTrash(t *testing.T) {
	e := newEnv(t)
	e.write(t, "box/x.txt", "old")
	expect(t, call(t, Move(e.ws), m{"from": "notes/a.md", "to": "box/x.txt", "overwrite": true}), false)
	ents, err := os.ReadDir(filepath.Join(e.dir, ".delta/trash"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("trash = %v, %v", ents, err)
	}
	if got := e.content(t, filepath.Join(".delta/trash", ents[0].Name())); got != "old" {
		t.Fatalf("trashed content = %q", got)
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		isErr bool
		want  []string
		gone  bool
	}{
		{name: "file", path: "notes/a.md", want: []string{"deleted notes/a.md (moved to .delta/trash/", "-a.md; recoverable"}, gone: true},
		{name: "folder", path: "notes", gone: true},
		{name: "subfolder POLICY.md", path: "sub/POLICY.md", gone: true},
		{name: "POLICY.md", path: "POLICY.md", isErr: true, want: []string{"cannot delete POLICY.md", "protected"}},
		{name: ".env", path: ".env", isErr: true, want: []string{"protected"}},
		{name: ".delta", path: ".delta", isErr: true, want: []string{"protected"}},
		{name: "the root", path: ".", isErr: true, want: []string{"workspace root itself"}},
		{name: "escaping symlink", path: "leak", isErr: true, want: []string{"outside the workspace"}},
		{name: "traversal", path: "../outside/secret.txt", isErr: true, want: []string{"outside the workspace"}},
		{name: "missing", path: "nope.txt", isErr: true, want: []string{"cannot delete nope.txt: it does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "sub/POLICY.md", "mine")
			e.write(t, ".delta/delta.db", "db")
			_, err := os.Lstat(filepath.Join(e.dir, tt.path))
			existed := err == nil
			res := call(t, Delete(e.ws), m{"path": tt.path})
			expect(t, res, tt.isErr, tt.want...)
			_, err = os.Lstat(filepath.Join(e.dir, tt.path))
			if gone := os.IsNotExist(err); existed && gone != tt.gone {
				t.Errorf("%s gone = %v, want %v", tt.path, gone, tt.gone)
			}
			if tt.gone {
				trashed := strings.TrimSuffix(strings.Fields(strings.SplitN(res.Text, "moved to ", 2)[1])[0], ";")
				if _, err := os.Lstat(filepath.Join(e.dir, trashed)); err != nil {
					t.Errorf("trash copy %s missing: %v", trashed, err)
				}
			}
			if got := e.content(t, "POLICY.md"); got != "be careful\n" {
				t.Errorf("POLICY.md = %q", got)
			}
			if got := e.content(t, "../outside/secret.txt"); got != "secret" {
				t.Errorf("outside file = %q", got)
			}
		})
	}
}
