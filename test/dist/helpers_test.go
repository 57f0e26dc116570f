package dist

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// need returns the path of a program the test cannot do without. Missing,
// it skips the test locally and fails it in CI, where scripts/test has
// installed it.
func need(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s is missing (%s; scripts/test installs it)", name, install)
	}
	t.Skipf("%s is not installed (%s; scripts/test installs it)", name, install)
	return ""
}

// repoRoot is the module's root directory, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// goEnv is one `go env` value.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// run runs a command to completion within limit and returns its combined
// output, failing the test with that output when it fails.
func run(t *testing.T, limit time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(limit, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// runErr is run without the test: the output and the error.
func runErr(limit time.Duration, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = env
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
