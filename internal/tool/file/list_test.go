package file

import (
	"fmt"
	"strings"
	"testing"
)

func TestList(t *testing.T) {
	e := newEnv(t)
	e.write(t, ".delta/spill/r.c.txt", "hidden")
	e.write(t, "notes/sub/deep.md", "deep")
	e.write(t, "many/keep.txt", "")
	for i := range MaxListEntries + 20 {
		e.write(t, fmt.Sprintf("many/f%04d.txt", i), "x")
	}
	if err := e.ws.WriteFile("blank/.keep", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ws.Delete("blank/.keep"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  m
		isErr bool
		want  []string
		not   []string
	}{
		{name: "root", args: m{}, want: []string{".env (10 B)\n", "POLICY.md (11 B)\n", "inlink (symlink)\n", "many/\n", "notes/"}, not: []string{".delta", "deep.md"}},
		{name: "root by dot", args: m{"path": "."}, want: []string{".env (10 B)\n", "many/\n"}, not: []string{".delta"}},
		{name: "subfolder", args: m{"path": "notes"}, want: []string{"notes/a.md (6 B)", "notes/sub/"}, not: []string{"deep.md"}},
		{name: "recursive", args: m{"path": "notes", "recursive": true}, want: []string{"notes/a.md", "notes/sub/\n", "notes/sub/deep.md (4 B)"}},
		{name: "recursive root hides .delta", args: m{"recursive": true}, want: []string{".env (10 B)\n", "many/f0000.txt"}, not: []string{".delta", "spill"}},
		{name: "bounded", args: m{"path": "many"}, want: []string{"many/f0000.txt", fmt.Sprintf("[listing stopped at %d entries; more exist. List a subfolder to see the rest]", MaxListEntries)}},
		{name: "bounded recursive", args: m{"recursive": true}, want: []string{"or list without recursive"}},
		{name: "empty folder", args: m{"path": "blank"}, want: []string{"[blank is empty]"}},
		{name: "a file", args: m{"path": "notes/a.md"}, want: []string{"notes/a.md (6 B)"}},
		{name: "missing", args: m{"path": "nope"}, isErr: true, want: []string{"cannot list nope: it does not exist"}},
		{name: "escaping folder", args: m{"path": "leakdir"}, isErr: true, want: []string{"cannot list leakdir", "outside the workspace"}, not: []string{"secret.txt ("}},
		{name: "traversal", args: m{"path": ".."}, isErr: true, want: []string{"outside the workspace"}},
		{name: "recursive as string", args: m{"recursive": "yes"}, isErr: true, want: []string{`field "recursive": expected boolean`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, List(e.ws), tt.args)
			expect(t, res, tt.isErr, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("listing shows %q:\n%s", n, clip(res.Text))
				}
			}
			if lines := strings.Count(res.Text, "\n"); lines > MaxListEntries+1 {
				t.Errorf("listing has %d lines", lines)
			}
		})
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KB", 5 << 20: "5.0 MB", 3 << 30: "3.0 GB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}
