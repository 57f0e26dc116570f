package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The inspection API's rules: bundle files an operator edits are allowed;
// the daemon's state and secrets files are refused however they are
// spelled or reached.
func TestCheckOperator(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".delta"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, ".delta"), filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{"DELTA.md", true}, {"POLICY.md", true}, {"notes/a.md", true}, {"sub/.delta/x", false}, {"sub/.env", false}, {"a/b/Delta.env", false}, {"sub/.env.prod", false}, {"sub/.envrc", true}, {"vocab.json", true},
		{".delta/delta.db", false}, {".DELTA/delta.db", false}, {".delta", false}, {".env", false}, {".env.local", false},
		{"Delta.env", false}, {"state/delta.db", false}, {".", false}, {"../x", false},
	} {
		err := r.CheckOperator(tt.path)
		if tt.ok && err != nil {
			t.Errorf("CheckOperator(%q) = %v, want allowed", tt.path, err)
		}
		if !tt.ok && err == nil {
			t.Errorf("CheckOperator(%q) allowed, want refused", tt.path)
		}
		if !tt.ok && err != nil && tt.path != "../x" && !errors.Is(err, ErrProtected) {
			t.Errorf("CheckOperator(%q) = %v, want ErrProtected", tt.path, err)
		}
	}
}
