package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	tests := []changeCase{
		{name: "new file in new folders", args: m{"path": "out/deep/r.md", "content": "report"},
			want: []string{"wrote 6 bytes to out/deep/r.md (new file)"}, check: map[string]string{"out/deep/r.md": "report"}},
		{name: "replace", args: m{"path": "notes/a.md", "content": "beta"},
			want: []string{"replaced the previous 6 bytes"}, check: map[string]string{"notes/a.md": "beta"}},
		{name: "empty content", args: m{"path": "blank.txt", "content": ""}, check: map[string]string{"blank.txt": ""}},
		{name: "through an inside symlink", args: m{"path": "inlink", "content": "via"}, check: map[string]string{"notes/a.md": "via"}},
		{name: "same name in a subfolder", args: m{"path": "notes/POLICY.md", "content": "mine"}, check: map[string]string{"notes/POLICY.md": "mine", "POLICY.md": "be careful\n"}},
		{name: "subfolder .env", args: m{"path": "cfg/.env", "content": "X=1"}, isErr: true, want: []string{"protected"}},
		{name: "POLICY.md", args: m{"path": "POLICY.md", "content": "x"}, isErr: true,
			want: []string{"cannot write POLICY.md", "protected"}, check: map[string]string{"POLICY.md": "be careful\n"}},
		{name: "dot slash POLICY.md", args: m{"path": "./POLICY.md", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{"POLICY.md": "be careful\n"}},
		{name: "climb back to POLICY.md", args: m{"path": "notes/../POLICY.md", "content": "x"}, isErr: true, want: []string{"protected"}},
		{name: "case variant", args: m{"path": "policy.MD", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{"policy.MD": "<missing>"}},
		{name: "DELTA.md", args: m{"path": "DELTA.md", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{"DELTA.md": "self\n"}},
		{name: "vocab.json", args: m{"path": "vocab.json", "content": "{}"}, isErr: true, want: []string{"protected"}},
		{name: "PROMPT_CONTEXT.md", args: m{"path": "PROMPT_CONTEXT.md", "content": "x"}, isErr: true, want: []string{"protected"}},
		{name: ".env", args: m{"path": ".env", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{".env": "TOKEN=abc\n"}},
		{name: ".env.local", args: m{"path": ".env.local", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{".env.local": "<missing>"}},
		{name: "delta.env", args: m{"path": "delta.env", "content": "x"}, isErr: true, want: []string{"protected"}},
		{name: ".delta", args: m{"path": ".delta/delta.db", "content": "x"}, isErr: true, want: []string{"protected"}, check: map[string]string{".delta/delta.db": "<missing>"}},
		{name: "symlink to a protected name", args: m{"path": "notes/p.md", "content": "x"}, isErr: true,
			want: []string{"protected", "through a symlink"}, check: map[string]string{"POLICY.md": "be careful\n"}},
		{name: "escaping symlink", args: m{"path": "leak", "content": "pwned"}, isErr: true, want: []string{"cannot write leak", "outside the workspace"}},
		{name: "escaping folder", args: m{"path": "leakdir/new.txt", "content": "pwned"}, isErr: true, want: []string{"outside the workspace"}},
		{name: "traversal", args: m{"path": "../escape.txt", "content": "pwned"}, isErr: true, want: []string{"outside the workspace"}},
		{name: "folder", args: m{"path": "notes", "content": "x"}, isErr: true, want: []string{"cannot write notes: it is a folder"}},
		{name: "file as folder", args: m{"path": "notes/a.md/x.txt", "content": "x"}, isErr: true, want: []string{"cannot write notes/a.md/x.txt"}},
		{name: "missing content", args: m{"path": "x.txt"}, isErr: true, want: []string{`missing required field "content"`}},
		{name: "root", args: m{"path": ".", "content": "x"}, isErr: true, want: []string{"workspace root itself"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			expect(t, call(t, Write(e.ws), tt.args), tt.isErr, tt.want...)
			e.expectContents(t, tt.check)
			if got := e.content(t, "../outside/secret.txt"); got != "secret" {
				t.Errorf("outside file = %q", got)
			}
			for _, stray := range []string{"../escape.txt", "../outside/new.txt"} {
				if _, err := os.Stat(filepath.Join(e.dir, stray)); err == nil {
					t.Errorf("%s was created outside the workspace", stray)
				}
			}
		})
	}
}

func TestEdit(t *testing.T) {
	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n\nfunc c() {\n\treturn 1\n}\n"
	tests := []struct {
		name  string
		file  string // content of f.go before; src if empty
		args  m
		isErr bool
		want  []string
		after string // f.go afterwards; unchanged if empty
	}{
		{name: "unique match", args: m{"old_string": "func b() {\n\treturn 1", "new_string": "func b() {\n\treturn 2"},
			want:  []string{"replaced 1 occurrence at line 5"},
			after: strings.Replace(src, "func b() {\n\treturn 1", "func b() {\n\treturn 2", 1)},
		{name: "several without replace_all", args: m{"old_string": "return 1", "new_string": "return 2"}, isErr: true,
			want: []string{"cannot edit f.go", "occurs 3 times (lines 2, 6, 10)", "replace_all"}},
		{name: "replace_all", args: m{"old_string": "return 1", "new_string": "return 2", "replace_all": true},
			want: []string{"replaced 3 occurrences (first at line 2)"}, after: strings.ReplaceAll(src, "return 1", "return 2")},
		{name: "not found", args: m{"old_string": "return 42", "new_string": "x"}, isErr: true,
			want: []string{"cannot edit f.go: old_string was not found", "read the file again"}},
		{name: "whitespace differs", args: m{"old_string": "func a() {\n    return 1", "new_string": "x"}, isErr: true,
			want: []string{"not found", "different whitespace"}},
		{name: "delete text", args: m{"old_string": "\nfunc c() {\n\treturn 1\n}\n", "new_string": ""},
			after: "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"},
		{name: "crlf file, lf old_string", file: "one\r\ntwo\r\nthree\r\n", args: m{"old_string": "one\ntwo", "new_string": "1\n2"},
			after: "1\r\n2\r\nthree\r\n"},
		{name: "empty old_string", args: m{"old_string": "", "new_string": "x"}, isErr: true, want: []string{"old_string is empty", "write_file"}},
		{name: "identical strings", args: m{"old_string": "return 1", "new_string": "return 1"}, isErr: true, want: []string{"identical"}},
		{name: "missing file", args: m{"path": "nope.go", "old_string": "a", "new_string": "b"}, isErr: true,
			want: []string{"cannot edit nope.go: it does not exist; use write_file"}},
		{name: "folder", args: m{"path": "notes", "old_string": "a", "new_string": "b"}, isErr: true, want: []string{"it is a folder"}},
		{name: "protected", args: m{"path": "POLICY.md", "old_string": "careful", "new_string": "reckless"}, isErr: true, want: []string{"protected"}},
		{name: "protected via symlink", args: m{"path": "notes/p.md", "old_string": "careful", "new_string": "reckless"}, isErr: true, want: []string{"protected"}},
		{name: "escaping symlink", args: m{"path": "leak", "old_string": "secret", "new_string": "x"}, isErr: true, want: []string{"outside the workspace"}},
		{name: "missing new_string", args: m{"old_string": "a"}, isErr: true, want: []string{`missing required field "new_string"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := tt.file
			if before == "" {
				before = src
			}
			e.write(t, "f.go", before)
			if _, ok := tt.args["path"]; !ok {
				tt.args["path"] = "f.go"
			}
			expect(t, call(t, Edit(e.ws), tt.args), tt.isErr, tt.want...)
			want := tt.after
			if want == "" {
				want = before
			}
			if got := e.content(t, "f.go"); got != want {
				t.Errorf("f.go = %q, want %q", got, want)
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
