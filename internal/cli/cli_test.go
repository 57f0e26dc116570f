package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/deltaharness/delta/internal/version"
)

// mapLookup is a LookupFunc over a fixed map.
func mapLookup(m map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// runCLI runs the command line in-process with empty stdin.
func runCLI(t *testing.T, lookup map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), lookup: mapLookup(lookup),
		environ: func() []string { return nil }}
	err = dispatch(context.Background(), e, args)
	return out.String(), errb.String(), err
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantErr   string // substring of the error
		wantUsage string // substring of stderr ("" = don't check)
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`, ""},
		{"unknown top-level flag", []string{"--bogus"}, "unknown flag --bogus", ""},
		{"init without dir", []string{"init"}, "missing the bundle directory", "usage: delta init <dir>"},
		{"init with two dirs", []string{"init", "a", "b"}, "takes one directory, got 2", "usage: delta init"},
		{"init unknown flag", []string{"init", "--force", "a"}, "flag provided but not defined: -force", "usage: delta init"},
		{"dev without bundle", []string{"dev"}, "missing the bundle directory", "usage: delta dev"},
		{"dev two bundles", []string{"dev", "a", "b"}, "takes one bundle directory", "--no-open"},
		{"dev port out of range", []string{"dev", "x", "--port", "70000"}, "--port 70000 is out of range", "usage: delta dev"},
		{"dev negative port", []string{"dev", "--port=-1", "x"}, "out of range", ""},
		{"dev port not a number", []string{"dev", "x", "--port", "abc"}, `invalid value "abc" for flag -port: want a whole number`, "usage: delta dev"},
		{"send port not a number", []string{"send", "--port", "80a", "hi"}, `invalid value "80a" for flag -port: want a whole number`, ""},
		{"watch since not a number", []string{"watch", "--since", "latest"}, `invalid value "latest" for flag -since: want a whole number`, ""},
		{"scheduler poll not a duration", []string{"scheduler", "--poll", "5"}, `invalid value "5" for flag -poll: want a duration such as 30s`, ""},
		{"smoke timeout not a duration", []string{"smoke", "--timeout", "soon"}, `invalid value "soon" for flag -timeout: want a duration`, ""},
		{"dev unknown flag", []string{"dev", "--nope", "x"}, "flag provided but not defined: -nope", ""},
		{"dev port missing value", []string{"dev", "x", "--port"}, "flag needs an argument: -port", ""},
		{"send without text", []string{"send"}, "missing the task text", "usage: delta send"},
		{"send blank text", []string{"send", "  "}, "missing the task text", ""},
		{"send port zero", []string{"send", "--port", "0", "hi"}, "--port 0 is out of range", ""},
		{"send to a remote name", []string{"send", "--host", "example.com", "hi"}, `--host "example.com" is not a loopback address`, "usage: delta send"},
		{"send to a private address", []string{"send", "--host", "192.168.1.10", "hi"}, "not a loopback", ""},
		{"send to 10/8", []string{"send", "--host", "10.0.0.1", "hi"}, "not a loopback", ""},
		{"send to all interfaces", []string{"send", "--host", "0.0.0.0", "hi"}, "not a loopback", ""},
		{"send to a public v6", []string{"send", "--host", "2001:db8::1", "hi"}, "not a loopback", ""},
		{"send json flag with value", []string{"send", "--json=maybe", "hi"}, "invalid boolean value", ""},
		{"watch extra argument", []string{"watch", "now"}, `unexpected argument "now"`, "usage: delta watch"},
		{"watch remote host", []string{"watch", "--host", "8.8.8.8"}, "not a loopback", ""},
		{"watch negative since", []string{"watch", "--port", "1", "--since", "-5"}, "--since -5: want an event id ≥ 0", "usage: delta watch"},
		{"watch since minus one", []string{"watch", "--port", "1", "--since=-1"}, "--since -1: want an event id ≥ 0", ""},
		{"demo extra argument", []string{"demo", "please"}, `unexpected argument "please"`, "usage: delta demo"},
		{"demo dir without value", []string{"demo", "--dir"}, "flag needs an argument: -dir", ""},
		{"serve extra argument", []string{"serve", "now"}, `unexpected argument "now"`, "usage: delta serve"},
		{"run with empty stdin", []string{"run"}, "no input", "usage: delta run"},
		{"run with blank text", []string{"run", " "}, "no input", ""},
		{"version with argument", []string{"version", "x"}, "takes no arguments", ""},
		{"scheduler extra argument", []string{"scheduler", "now"}, `unexpected argument "now"`, "usage: delta scheduler"},
		{"scheduler bad listen", []string{"scheduler", "--listen", "8091"}, `--listen "8091"`, ""},
		// An unusable --db makes the command fail at once should the flag
		// under test get past the checks.
		{"scheduler listen port out of range", []string{"scheduler", "--db", "/dev/null/s.db", "--listen", "127.0.0.1:99999"}, "port from 0 to 65535", "usage: delta scheduler"},
		{"scheduler relative daemon URL", []string{"scheduler", "--db", "/dev/null/s.db", "--daemon-url", "127.0.0.1:8080"}, `--daemon-url "127.0.0.1:8080": want an absolute http or https URL`, "usage: delta scheduler"},
		{"scheduler daemon URL of another scheme", []string{"scheduler", "--db", "/dev/null/s.db", "--daemon-url", "ftp://127.0.0.1"}, "want an absolute http or https URL", ""},
		{"scheduler open on all interfaces", []string{"scheduler", "--listen", "0.0.0.0:0"}, "set DELTA_CONTROL_TOKEN", ""},
		{"scheduler zero poll", []string{"scheduler", "--poll", "0s"}, "--poll must be positive", ""},
		{"smoke relative URL", []string{"smoke", "--url", "agent.example"}, `--url "agent.example": want an absolute http or https URL`, "usage: delta smoke"},
		{"smoke URL of another scheme", []string{"smoke", "--url", "ftp://agent.example"}, "want an absolute http or https URL", ""},
		{"smoke URL with a password", []string{"smoke", "--url", "ftp://ops:pw123@agent.example"}, `--url "ftp://ops:xxxxx@agent.example"`, ""},
		{"smoke zero timeout", []string{"smoke", "--url", "http://127.0.0.1:1", "--timeout", "0s"}, "--timeout 0s: want a positive duration", ""},
		{"smoke negative timeout", []string{"smoke", "--url", "http://127.0.0.1:1", "--timeout", "-1m"}, "want a positive duration", ""},
		{"help for unknown command", []string{"help", "nope"}, `unknown command "nope"`, ""},
		{"help with two names", []string{"help", "a", "b"}, "at most one", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runCLI(t, nil, tt.args...)
			if err == nil {
				t.Fatalf("delta %v: no error, want a usage error", tt.args)
			}
			if !errors.Is(err, ErrUsage) || ExitCode(err) != 2 {
				t.Fatalf("delta %v: err %v (exit %d), want a usage error (exit 2)", tt.args, err, ExitCode(err))
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("delta %v: err %q, want it to contain %q", tt.args, err, tt.wantErr)
			}
			if tt.wantUsage != "" && !strings.Contains(stderr, tt.wantUsage) {
				t.Fatalf("delta %v: stderr %q, want it to contain %q", tt.args, stderr, tt.wantUsage)
			}
		})
	}
}

func TestParseInterspersedFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantPort int
		wantOpen bool
	}{
		{"flags after the positional (the documented form)", []string{"./my-agent", "--port", "8080"}, []string{"./my-agent"}, 8080, false},
		{"flags first", []string{"--port=9000", "--no-open", "b"}, []string{"b"}, 9000, true},
		{"flags on both sides", []string{"--no-open", "b", "-port", "1"}, []string{"b"}, 1, true},
		{"double dash ends flags", []string{"a", "--", "--port", "5"}, []string{"a", "--port", "5"}, 0, false},
		{"several positionals kept in order", []string{"one", "--port", "2", "two", "three"}, []string{"one", "two", "three"}, 2, false},
		{"no arguments", nil, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("dev")
			port := fs.Int("port", 0, "")
			noOpen := fs.Bool("no-open", false, "")
			pos, err := parse(fs, env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, "", tt.args)
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.args, err)
			}
			if !reflect.DeepEqual(pos, tt.wantPos) || *port != tt.wantPort || *noOpen != tt.wantOpen {
				t.Fatalf("parse(%q) = %q port=%d no-open=%v; want %q port=%d no-open=%v",
					tt.args, pos, *port, *noOpen, tt.wantPos, tt.wantPort, tt.wantOpen)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	out, _, err := runCLI(t, nil, "help")
	if err != nil {
		t.Fatalf("delta help: %v", err)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "\n  "+c.name+" ") {
			t.Errorf("delta help does not list %q:\n%s", c.name, out)
		}
	}

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"help", "send"}, []string{"usage: delta send", "--json", "--host", "--port port", "(default 8080)"}},
		{[]string{"send", "-h"}, []string{"usage: delta send", "--json"}},
		{[]string{"dev", "--help"}, []string{"usage: delta dev <bundle>", "--no-open", "--port port"}},
		{[]string{"help", "demo"}, []string{"--keep", "--dir directory", "--browse"}},
		{[]string{"help", "version"}, []string{"usage: delta version"}},
		{[]string{"--help"}, []string{"Commands:", "demo"}},
		{[]string{"init", "-h"}, []string{"usage: delta init <dir>"}},
	}
	for _, tt := range tests {
		out, _, err := runCLI(t, nil, tt.args...)
		if err != nil || ExitCode(err) != 0 {
			t.Fatalf("delta %v: %v, want success", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("delta %v output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}

// TestHelpFlagLines: each flag line of every command's -h is the flag, at
// most one argument word, its text, and its default at most once.
func TestHelpFlagLines(t *testing.T) {
	for _, c := range commands() {
		if c.name == "help" || c.name == "version" {
			continue
		}
		out, _, err := runCLI(t, nil, c.name, "-h")
		if err != nil {
			t.Fatalf("delta %s -h: %v", c.name, err)
		}
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "  --") {
				continue
			}
			flagPart, _, _ := strings.Cut(l, "\t")
			if n := len(strings.Fields(flagPart)); n > 2 || strings.Count(l, "(default") > 1 {
				t.Errorf("delta %s -h: flag line %q: want --name [arg] then the text, the default once", c.name, l)
			}
		}
	}
}

// TestHelpDespiteBadVariables: -h shows a command's usage even when a
// variable it reads is malformed; running it then names the variable.
func TestHelpDespiteBadVariables(t *testing.T) {
	bad := map[string]string{"DELTA_URL": "agent.example"}
	for _, name := range []string{"scheduler", "smoke"} {
		out, _, err := runCLI(t, bad, name, "-h")
		if err != nil || !strings.Contains(out, "usage: delta "+name) {
			t.Errorf("delta %s -h with DELTA_URL=agent.example: %v, stdout %q; want the usage", name, err, out)
		}
	}
	if _, _, err := runCLI(t, bad, "scheduler", "--db", "/dev/null/s.db"); err == nil || !strings.Contains(err.Error(), "DELTA_URL") {
		t.Errorf("delta scheduler with DELTA_URL=agent.example: %v, want it named", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := runCLI(t, nil, args...)
		if err != nil {
			t.Fatalf("delta %v: %v", args, err)
		}
		if !strings.HasPrefix(out, "delta "+version.Version) {
			t.Fatalf("delta %v = %q, want \"delta %s…\"", args, out, version.Version)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true}, {"127.8.9.10", true}, {"::1", true}, {"[::1]", true},
		{"localhost", true}, {"LOCALHOST", true},
		{"", false}, {"0.0.0.0", false}, {"::", false}, {"10.1.2.3", false}, {"192.168.0.1", false},
		{"172.16.0.1", false}, {"8.8.8.8", false}, {"example.com", false}, {"localhost.example.com", false},
		{"127.0.0.1.nip.io", false}, {"::ffff:8.8.8.8", false},
	}
	for _, tt := range tests {
		err := checkLoopback(tt.host)
		if (err == nil) != tt.ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", tt.host, err, tt.ok)
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{usagef("bad"), 2},
		{&ExitError{Code: 3}, 3},
		{&ExitError{Code: 0}, 0},
		{errors.Join(errors.New("x"), usagef("y")), 2},
		{flag.ErrHelp, 1},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestEnvHelpers(t *testing.T) {
	m := environMap([]string{"A=1", "B=x=y", "A=2", "noequals", "=skip", "E="})
	want := map[string]string{"A": "2", "B": "x=y", "E": ""}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("environMap = %v, want %v", m, want)
	}
	if got := envList(map[string]string{"B": "2", "A": "1"}); !reflect.DeepEqual(got, []string{"A=1", "B=2"}) {
		t.Fatalf("envList = %v", got)
	}
	for bind, want := range map[string]string{
		"": "http://127.0.0.1:9", "0.0.0.0": "http://127.0.0.1:9", "::": "http://127.0.0.1:9",
		"127.0.0.2": "http://127.0.0.2:9", "::1": "http://[::1]:9", "[::1]": "http://[::1]:9",
	} {
		if got := healthBase(bind, 9); got != want {
			t.Errorf("healthBase(%q) = %q, want %q", bind, got, want)
		}
	}
}

// TestConfigWarningsLoggedOnce: a configuration warning reaches the log
// once per start, whichever command starts the harness, and before the
// start can fail (here at the workspace).
func TestConfigWarningsLoggedOnce(t *testing.T) {
	env := map[string]string{"DELTA_VAULT_KEY": "short", "DELTA_WORKSPACE": "/dev/null/ws", "MODEL_API_KEY": "k",
		"DELTA_DB": filepath.Join(t.TempDir(), "delta.db")}
	for _, args := range [][]string{{"run", "hi"}, {"serve"}} {
		env["PORT"] = loopbackPort(t)
		_, stderr, err := runCLI(t, env, args...)
		if err == nil || !strings.Contains(err.Error(), "workspace") {
			t.Fatalf("delta %v: %v, want the workspace failure", args, err)
		}
		if n := strings.Count(stderr, "DELTA_VAULT_KEY: key shorter"); n != 1 {
			t.Fatalf("delta %v logged the DELTA_VAULT_KEY warning %d times, want once:\n%s", args, n, stderr)
		}
	}
}

// TestDemoDirThatIsAFile: `delta demo --dir F` where F is a file fails
// naming F, and never tells the user to explore F with delta dev.
func TestDemoDirThatIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runCLI(t, nil, "demo", "--dir", file)
	if err == nil || !strings.Contains(err.Error(), file) || errors.Is(err, ErrUsage) {
		t.Fatalf("demo --dir on a file: %v, want a runtime error naming it", err)
	}
	if strings.Contains(stdout+stderr, "kept") || strings.Contains(stdout+stderr, "delta dev") {
		t.Fatalf("stdout %q stderr %q: a file is not a bundle to keep or explore", stdout, stderr)
	}
}

// TestInitFailureIsOneLine: `delta init` into a place it cannot write
// fails with one line that names the first problem, how many files share
// it, whether anything was created, and what to do.
func TestInitFailureIsOneLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, nil, "init", filepath.Join(file, "agent"))
	if err == nil || strings.Contains(err.Error(), "\n") || errors.Is(err, ErrUsage) ||
		!strings.Contains(err.Error(), "not a directory; nothing was created: fix the problem and rerun") {
		t.Fatalf("init under a file: %q, want one runtime line", err)
	}
	// A read-only directory fails every file alike (as root it does not
	// fail, so the five errors are built as bundle.Scaffold builds them).
	var errs []error
	for _, name := range bundleFiles {
		p := filepath.Join("ro", name)
		errs = append(errs, fmt.Errorf("scaffold %s: %w", p, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}))
	}
	if got, want := oneProblem(errors.Join(errs...)), "open ro/delta.env: permission denied (and 4 more files)"; got != want {
		t.Fatalf("oneProblem = %q, want %q", got, want)
	}
}

// TestScaffoldFailuresOnOneLine: when several bundle files cannot be
// written (here: their paths are longer than Linux allows, which fails
// even for root), init and demo each report one line.
func TestScaffoldFailuresOnOneLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the path length limit used here is Linux's (4095 bytes)")
	}
	// A directory whose path is 4086 bytes: DELTA.md fits under it (4095),
	// the four longer names do not.
	dir := t.TempDir()
	for len(dir) < 4086-1 {
		dir = filepath.Join(dir, strings.Repeat("d", min(200, 4086-len(dir)-1)))
	}
	if len(dir) != 4086 {
		t.Fatalf("built a %d-byte path", len(dir))
	}
	_, _, err := runCLI(t, nil, "init", dir)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "file name too long (and 3 more files); the files created are kept") {
		t.Fatalf("init: %q, want one line counting the four failures", err)
	}
	_, _, err = runCLI(t, nil, "demo", "--dir", dir)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "file name too long (and 3 more files)") {
		t.Fatalf("demo: %q, want one line counting the four failures", err)
	}
}
