package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckWritable(t *testing.T) {
	root, _ := fixture(t)
	ws := root.Dir()
	for name, target := range map[string]string{
		"dir/p.md":  "../POLICY.md", // launders a protected root name through a link
		"rootlink":  ".",            // the root under another name
		"dir/dlink": "../.delta",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		rel     string
		wantErr error
	}{
		{"POLICY.md", ErrProtected},
		{"./POLICY.md", ErrProtected},
		{"a/../POLICY.md", ErrProtected},
		{"policy.md", ErrProtected},
		{"Policy.Md", ErrProtected},
		{"vocab.json", ErrProtected},
		{"VOCAB.JSON", ErrProtected},
		{"PROMPT_CONTEXT.md", ErrProtected},
		{"DELTA.md", ErrProtected},
		{"delta.md", ErrProtected},
		{".env", ErrProtected},
		{".ENV", ErrProtected},
		{".env.local", ErrProtected},
		{".env.production", ErrProtected},
		{".Env.Local", ErrProtected},
		{"delta.env", ErrProtected},
		{".delta", ErrProtected},
		{".delta/x", ErrProtected},
		{".delta/spill/r.c.txt", ErrProtected},
		{".DELTA/trash", ErrProtected},
		{".", ErrProtected},
		{"dir/..", ErrProtected},
		{"dir/p.md", ErrProtected},
		{"rootlink/POLICY.md", ErrProtected},
		{"dir/dlink/x", ErrProtected},
		{"../x", ErrOutside},
		{"leak", ErrOutside},
		{"", ErrBadPath},
		{"notes/POLICY.md", nil},
		{"notes/.env", ErrProtected},
		{"notes/.ENV.local", ErrProtected},
		{"a/b/delta.env", ErrProtected},
		{"notes/.delta/x", ErrProtected},
		{"notes/vocab.json", nil},
		{"notes/.envrc", nil},
		{"notes/DELTA.md", nil},
		{"POLICY.md.bak", nil},
		{".envrc", nil},
		{"my.env", nil},
		{"a.txt", nil},
		{"dir", nil},
		{"inlink", nil},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
			err := root.CheckWritable(tt.rel)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckWritable(%q) = %v, want nil", tt.rel, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckWritable(%q) = %v, want %v", tt.rel, err, tt.wantErr)
			}
		})
	}
}

func TestCheckWritableExplains(t *testing.T) {
	root, _ := fixture(t)
	err := root.CheckWritable("POLICY.md")
	for _, want := range []string{`"POLICY.md"`, "protected", "subfolder"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckWritable(POLICY.md) = %v, want it to mention %q", err, want)
		}
	}
}
