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
	checkPaths(t, "CheckWritable", root.CheckWritable, []pathCase{
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
	})
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

func TestCheckReadable(t *testing.T) {
	root, _ := fixture(t)
	ws := root.Dir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.env", filepath.Join(ws, "dir", "config.txt")); err != nil {
		t.Fatal(err)
	}
	checkPaths(t, "CheckReadable", root.CheckReadable, []pathCase{
		{".env", ErrProtected},
		{".ENV", ErrProtected},
		{".env.local", ErrProtected},
		{"delta.env", ErrProtected},
		{"Delta.Env", ErrProtected},
		{"notes/.env", ErrProtected},
		{"a/b/delta.env", ErrProtected},
		{"notes/.env.prod/x", ErrProtected},
		{"dir/config.txt", ErrProtected}, // a link to .env
		{"../x", ErrOutside},
		{"", ErrBadPath},
		{".", nil},
		{"POLICY.md", nil},
		{"DELTA.md", nil},
		{".delta/spill/r.c.txt", nil},
		{".delta/research/r.md", nil},
		{".envrc", nil},
		{"my.env", nil},
		{"a.txt", nil},
		{"dir", nil},
	})
}

func TestSecretFile(t *testing.T) {
	for p, want := range map[string]bool{
		".env": true, "a/.ENV.local": true, "x/delta.env": true, "a/.envrc": false, ".delta": false, "a/b.env": false,
	} {
		if got := SecretFile(p); got != want {
			t.Errorf("SecretFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// pathCase is one path a check is asked about and the error it must
// answer, nil for a path it allows.
type pathCase struct {
	rel     string
	wantErr error
}

// checkPaths runs check (the method name names in failures) on each case's
// path, one subtest a path.
func checkPaths(t *testing.T, name string, check func(rel string) error, cases []pathCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
			err := check(tt.rel)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("%s(%q) = %v, want nil", name, tt.rel, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s(%q) = %v, want %v", name, tt.rel, err, tt.wantErr)
			}
		})
	}
}
