package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindBobby: bobby beside the delta binary (also through a symlink to
// delta) wins over PATH; PATH is next; with neither, the error says where
// it looked and how to build both.
func TestFindBobby(t *testing.T) {
	writeExe := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	binDir := filepath.Join(root, "bin")
	writeExe(filepath.Join(binDir, "delta"))
	writeExe(filepath.Join(binDir, "bobby"))
	lone := filepath.Join(root, "lone", "delta")
	writeExe(lone)
	link := filepath.Join(root, "links", "delta")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(binDir, "delta"), link); err != nil {
		t.Fatal(err)
	}
	notData := filepath.Join(root, "data", "delta")
	writeExe(notData)
	if err := os.WriteFile(filepath.Join(root, "data", "bobby"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return "/opt/tools/bobby", nil }
	nowhere := func(string) (string, error) { return "", errors.New("not found") }

	for _, tt := range []struct {
		name, self string
		lookPath   func(string) (string, error)
		want       string
	}{
		{"next to delta", filepath.Join(binDir, "delta"), onPath, filepath.Join(binDir, "bobby")},
		{"next to the symlink's target", link, nowhere, filepath.Join(binDir, "bobby")},
		{"on PATH", lone, onPath, "/opt/tools/bobby"},
		{"a non-executable file beside delta is skipped", notData, onPath, "/opt/tools/bobby"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findBobby(tt.self, tt.lookPath)
			if err != nil || got != tt.want {
				t.Fatalf("findBobby = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	_, err := findBobby(lone, nowhere)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "lone", "bobby")) ||
		!strings.Contains(err.Error(), "go build -o bin/ ./cmd/delta ./cmd/bobby") {
		t.Fatalf("findBobby with no bobby: %v", err)
	}
}

// TestDemoBrowseWithoutBobby: the real binary, alone in its folder and with
// a PATH that holds no bobby, refuses --browse at once with the fix, and
// starts nothing.
func TestDemoBrowseWithoutBobby(t *testing.T) {
	tmp := t.TempDir()
	// os/exec keeps the last of duplicate keys: this PATH replaces the
	// inherited one.
	env := append(cleanEnv(), "PATH="+t.TempDir(), "TMPDIR="+tmp)
	r := runBin(t, env, "demo", "--browse")
	if r.code != 1 || !strings.Contains(r.stderr, "delta demo --browse needs the bobby binary") || !strings.Contains(r.stderr, "go install ./cmd/delta ./cmd/bobby") {
		t.Fatalf("delta demo --browse without bobby: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "delta-demo-*")); len(left) != 0 {
		t.Errorf("the refused demo created %v", left)
	}
}
