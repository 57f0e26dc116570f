package file

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/tooltest"
	"github.com/deltaharness/delta/internal/workspace"
)

// env is a real workspace on disk with the files every tool test needs, next
// to an "outside" directory the tools must never reach.
type env struct {
	ws      *workspace.Root
	dir     string // the workspace's real path
	outside string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	if err := os.MkdirAll(e.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if e.ws, err = workspace.Open(e.dir); err != nil {
		t.Fatal(err)
	}
	e.write(t, "notes/a.md", "alpha\n")
	e.write(t, "POLICY.md", "be careful\n")
	e.write(t, ".env", "TOKEN=abc\n")
	e.write(t, "DELTA.md", "self\n")
	if err := os.WriteFile(filepath.Join(e.outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"leak":       filepath.Join(e.outside, "secret.txt"),
		"leakdir":    e.outside,
		"notes/p.md": "../POLICY.md",
		"inlink":     "notes/a.md",
	} {
		if err := os.Symlink(target, filepath.Join(e.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// content is a file's text, or "<missing>".
func (e *env) content(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if os.IsNotExist(err) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expectContents checks each file's text (path → content, "<missing>"
// for an absent file).
func (e *env) expectContents(t *testing.T, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if got := e.content(t, p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
}

// call runs a tool with args as the model would send them. A Go error fails
// the test: model mistakes must come back as results.
func call(t *testing.T, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tooltest.Run(t, tl, tool.Call{RunID: "r", CallID: "c", Args: raw})
}

// changeCase is one call of a tool that changes files: its arguments,
// whether its result is an error, what the result's text holds, and what
// files hold afterwards (path → content, "<missing>" for absent).
type changeCase struct {
	name  string
	args  m
	isErr bool
	want  []string
	check map[string]string
}

// expect checks a result is (or is not) an error and holds every substring.
func expect(t *testing.T, res tool.Result, isErr bool, want ...string) {
	t.Helper()
	if res.IsError != isErr {
		t.Fatalf("IsError = %v, want %v; text: %s", res.IsError, isErr, res.Text)
	}
	for _, w := range want {
		if !strings.Contains(res.Text, w) {
			t.Errorf("result %q\nlacks %q", clip(res.Text), w)
		}
	}
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

type m = map[string]any

func TestAll(t *testing.T) {
	e := newEnv(t)
	tools := All(e.ws, nil)
	reg := tool.NewRegistry()
	reg.Add(tools...) // panics on a duplicate name
	wantNames := []string{ReadName, WriteName, EditName, ListName, MoveName, DeleteName}
	if got := reg.Names(); !slices.Equal(got, wantNames) {
		t.Fatalf("names = %v, want %v", got, wantNames)
	}
	readOnly := map[string]bool{ReadName: true, ListName: true}
	for _, tl := range tools {
		s := tl.Spec()
		if tl.ReadOnly() != readOnly[s.Name] {
			t.Errorf("%s ReadOnly = %v", s.Name, tl.ReadOnly())
		}
		if len(s.Description) < 80 || strings.HasSuffix(s.Description, "\n") {
			t.Errorf("%s description too thin or untrimmed: %q", s.Name, s.Description)
		}
		var schema struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Fatalf("%s schema: %v", s.Name, err)
		}
		if s.Name != ListName && len(schema.Required) == 0 {
			t.Errorf("%s schema has no required fields: %s", s.Name, s.Parameters)
		}
	}
}

func TestConcurrentCalls(t *testing.T) {
	// The engine runs every call of one turn at once, mutations included.
	e := newEnv(t)
	write, edit, read := Write(e.ws), Edit(e.ws), Read(e.ws)
	done := make(chan tool.Result)
	const n = 16
	for i := range n {
		go func() {
			p := filepath.Join("par", string(rune('a'+i))+".txt")
			raw, _ := json.Marshal(m{"path": p, "content": "v1"})
			if r, err := write.Run(context.Background(), tool.Call{Args: raw}); err != nil || r.IsError {
				done <- tool.Errorf("write %v %s", err, r.Text)
				return
			}
			raw, _ = json.Marshal(m{"path": p, "old_string": "v1", "new_string": "v2"})
			if r, err := edit.Run(context.Background(), tool.Call{Args: raw}); err != nil || r.IsError {
				done <- tool.Errorf("edit %v %s", err, r.Text)
				return
			}
			raw, _ = json.Marshal(m{"path": p})
			r, _ := read.Run(context.Background(), tool.Call{Args: raw})
			done <- r
		}()
	}
	for range n {
		if r := <-done; r.IsError || r.Text != "v2" {
			t.Errorf("concurrent write/edit/read = %+v", r)
		}
	}
}

// makeZip writes an Office-style package (a zip of XML parts).
func makeZip(t *testing.T, p string, parts map[string]string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(parts[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func openWS(dir string) (*workspace.Root, error) { return workspace.Open(dir) }

func runRaw(tl tool.Tool, args []byte) (tool.Result, error) {
	return tl.Run(context.Background(), tool.Call{Args: args})
}
