package grep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/grep"
	"github.com/deltaharness/delta/internal/tool/tooltest"
	"github.com/deltaharness/delta/internal/workspace"
)

// fixture builds a small workspace with text, binary, hidden and linked files.
func fixture(t testing.TB) (*workspace.Root, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"main.go":              "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n",
		"notes/todo.md":        "# Todo\n- TODO: write tests\n- done: nothing\r\n- todo lower\n",
		"notes/deep/a.txt":     "alpha\nbeta TODO\ngamma\n",
		"src/app/x.ts":         "const TODO = 1;\n",
		".delta/spill/r.c.txt": "TODO secret spill\n",
		".git/config":          "TODO in git\n",
		"bin/blob.bin":         "TODO\x00\x01\x02binary",
		"unicode.txt":          "héllo wörld TODO ✓\n",
		".env":                 "TODO=tok-root\n",
		"notes/delta.env":      "KEY=TODO-secret\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TODO outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escapedir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(dir, "envlink.txt")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws, dir
}

func run(t testing.TB, tl tool.Tool, args string) tool.Result {
	t.Helper()
	return tooltest.Run(t, tl, tool.Call{Args: json.RawMessage(args)})
}

func TestGrepFinds(t *testing.T) {
	ws, _ := fixture(t)
	tl := grep.New(ws, grep.Options{})
	if !tl.ReadOnly() {
		t.Fatal("grep must be read-only")
	}
	tests := []struct {
		name    string
		args    string
		want    []string
		notWant []string
	}{
		{"plain", `{"pattern":"TODO"}`,
			[]string{"notes/todo.md:2: - TODO: write tests", "notes/deep/a.txt:2: beta TODO", "src/app/x.ts:1: const TODO = 1;", "unicode.txt:1: héllo wörld TODO ✓", "[4 matching lines in 4 files", "[skipped 1 binary file, 3 secrets files (never read)]"},
			[]string{".delta", ".git", "secret.txt", "outside", "blob.bin", "todo lower", "tok-root", "envlink"}},
		{"ignore case", `{"pattern":"todo","ignore_case":true}`,
			[]string{"notes/todo.md:1: # Todo", "notes/todo.md:4: - todo lower"}, nil},
		{"path folder", `{"pattern":"TODO","path":"notes"}`,
			[]string{"notes/todo.md:2:", "notes/deep/a.txt:2:"}, []string{"src/app", "unicode"}},
		{"path file", `{"pattern":"^func","path":"main.go"}`,
			[]string{"main.go:3: func main() {", "[1 matching line in 1 file"}, nil},
		{"glob by name", `{"pattern":"TODO","glob":"*.{md,ts}"}`,
			[]string{"notes/todo.md:2:", "src/app/x.ts:1:"}, []string{"a.txt", "unicode"}},
		{"glob by path", `{"pattern":"TODO","glob":"notes/**/*.txt"}`,
			[]string{"notes/deep/a.txt:2:"}, []string{"todo.md", "x.ts"}},
		{"carriage return trimmed", `{"pattern":"nothing$"}`,
			[]string{"notes/todo.md:3: - done: nothing"}, nil},
		{"no match", `{"pattern":"zebra"}`,
			[]string{`[no matches for "zebra" in . (`}, []string{"matching line"}},
		{"max results", `{"pattern":"TODO","max_results":2}`,
			[]string{"[stopped at 2 matching lines in 2 files (max_results)"}, nil},
		{"escaping symlink not followed", `{"pattern":"outside"}`,
			[]string{"[no matches"}, []string{"secret.txt", "TODO outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tl, tt.args)
			if res.IsError {
				t.Fatalf("unexpected error result: %s", res.Text)
			}
			tooltest.CheckText(t, res.Text, tt.want, tt.notWant)
		})
	}
}

func TestGrepBadInputs(t *testing.T) {
	ws, _ := fixture(t)
	tl := grep.New(ws, grep.Options{})
	tests := []struct {
		name, args, want string
	}{
		{"missing pattern", `{}`, `missing required field "pattern"`},
		{"empty pattern", `{"pattern":""}`, "pattern is empty"},
		{"invalid regexp", `{"pattern":"a(b"}`, "not a valid Go regular expression"},
		{"lookahead", `{"pattern":"foo(?=bar)"}`, "lookarounds and backreferences are not supported"},
		{"huge pattern", `{"pattern":"` + strings.Repeat("a", 5000) + `"}`, "at most 4096"},
		{"pattern wrong type", `{"pattern":5}`, `field "pattern": expected string`},
		{"negative max", `{"pattern":"x","max_results":-1}`, "max_results must be 1 or more"},
		{"max too large", `{"pattern":"x","max_results":5000}`, "max_results is at most 1000"},
		{"outside", `{"pattern":"x","path":"../"}`, "outside the workspace"},
		{"absolute", `{"pattern":"x","path":"/etc"}`, "absolute path"},
		{"symlink out", `{"pattern":"x","path":"escapedir"}`, "outside the workspace"},
		{"missing path", `{"pattern":"x","path":"nope"}`, "does not exist"},
		{"daemon state", `{"pattern":"x","path":".delta/spill"}`, "daemon's own state"},
		{"secrets file", `{"pattern":"x","path":".env"}`, "secrets file"},
		{"subfolder secrets file", `{"pattern":"x","path":"notes/delta.env"}`, "secrets file"},
		{"link to a secrets file", `{"pattern":"x","path":"envlink.txt"}`, "secrets file"},
		{"bad glob bracket", `{"pattern":"x","glob":"[a-"}`, "malformed"},
		{"bad glob brace", `{"pattern":"x","glob":"*.{go"}`, "without a matching }"},
		{"glob blowup", `{"pattern":"x","glob":"{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"}`, "more than 64 alternatives"},
		{"unknown field", `{"pattern":"x","regex":"y"}`, `unknown field "regex"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tl, tt.args)
			if !res.IsError {
				t.Fatalf("want an error result, got: %s", res.Text)
			}
			if !strings.Contains(res.Text, tt.want) {
				t.Fatalf("error %q lacks %q", res.Text, tt.want)
			}
		})
	}
}

func TestGrepBounds(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "match line %d %s\n", i, strings.Repeat("x", 80))
	}
	if err := os.WriteFile(filepath.Join(dir, "many.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 5000) + "NEEDLE" + strings.Repeat("b", 5000)
	if err := os.WriteFile(filepath.Join(dir, "long.txt"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("match\n", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("output characters", func(t *testing.T) {
		tl := grep.New(ws, grep.Options{MaxOutput: 2000, MaxResults: 1000})
		res := run(t, tl, `{"pattern":"match line","max_results":1000}`)
		if len(res.Text) > 2300 {
			t.Fatalf("result is %d bytes, want about 2000", len(res.Text))
		}
		if !strings.Contains(res.Text, "[stopped at 2000 characters") {
			t.Fatalf("no truncation note:\n%s", res.Text)
		}
	})
	t.Run("long line windowed", func(t *testing.T) {
		res := run(t, grep.New(ws, grep.Options{}), `{"pattern":"NEEDLE"}`)
		if !strings.Contains(res.Text, "NEEDLE") || !strings.Contains(res.Text, "[line is 10006 bytes]") || len(res.Text) > 600 {
			t.Fatalf("long line not windowed:\n%s", res.Text)
		}
	})
	t.Run("file size bound", func(t *testing.T) {
		res := run(t, grep.New(ws, grep.Options{MaxFileBytes: 1 << 20 / 1024}), `{"pattern":"^match$"}`)
		if !strings.Contains(res.Text, "[skipped 3 files over 1 KB]") {
			t.Fatalf("large file not reported as skipped:\n%s", res.Text)
		}
		if strings.Contains(res.Text, "big.txt:") {
			t.Fatalf("file over the bound was searched:\n%s", res.Text)
		}
	})
}

func TestGrepCancelled(t *testing.T) {
	ws, _ := fixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := grep.New(ws, grep.Options{}).Run(ctx, tool.Call{Args: json.RawMessage(`{"pattern":"TODO"}`)})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Run with a cancelled context = %v, want context canceled", err)
	}
}

// BenchmarkGrep10k searches a generated workspace of 10,000 files (100
// folders of 100 files, ~2 KB each) for a word in 1% of them.
func BenchmarkGrep10k(b *testing.B) {
	dir := b.TempDir()
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	body := strings.Repeat(line, 36)
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			text := body
			if f == 7 {
				text += "func needleHandler() {}\n"
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	tl := grep.New(ws, grep.Options{})
	args := json.RawMessage(`{"pattern":"needle\\w+","max_results":1000}`)
	b.ResetTimer()
	for b.Loop() {
		res, err := tl.Run(context.Background(), tool.Call{Args: args})
		if err != nil || !strings.Contains(res.Text, "[100 matching lines in 100 files; 10000 files searched]") {
			b.Fatalf("Run = %v, %q", err, res.Text[max(0, len(res.Text)-200):])
		}
	}
}
