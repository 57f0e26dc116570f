package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDelete(t *testing.T) {
	tests := []struct {
		rel     string
		wantErr error
		errText string
		kept    string // a path that must be untouched afterwards
	}{
		{rel: "a.txt"},
		{rel: "dir"},
		{rel: "inlink", kept: "dir/b.txt"}, // the link goes, its target stays
		{rel: "nope.txt", wantErr: fs.ErrNotExist},
		{rel: "leak", wantErr: ErrOutside},
		{rel: ".", errText: "workspace root"},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			root, _ := fixture(t)
			ws := root.Dir()
			trashed, err := root.Delete(tt.rel)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Delete(%q) = %v, want %v", tt.rel, err, tt.wantErr)
				}
				return
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("Delete(%q) = %v, want %q", tt.rel, err, tt.errText)
				}
				return
			case err != nil:
				t.Fatalf("Delete(%q): %v", tt.rel, err)
			}
			if _, err := os.Lstat(filepath.Join(ws, tt.rel)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s still present after Delete", tt.rel)
			}
			if !strings.HasPrefix(trashed, TrashDir+"/") || !strings.HasSuffix(trashed, "-"+tt.rel) {
				t.Fatalf("trash path = %q", trashed)
			}
			if _, err := os.Lstat(filepath.Join(ws, trashed)); err != nil {
				t.Fatalf("trashed copy missing: %v", err)
			}
			if tt.kept != "" {
				if _, err := os.Stat(filepath.Join(ws, tt.kept)); err != nil {
					t.Fatalf("%s was disturbed: %v", tt.kept, err)
				}
			}
		})
	}
}

func TestDeleteSameNameTwice(t *testing.T) {
	root, _ := fixture(t)
	var got []string
	for range 2 {
		if err := root.WriteFile("x.txt", []byte("x")); err != nil {
			t.Fatal(err)
		}
		p, err := root.Delete("x.txt")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if got[0] == got[1] {
		t.Fatalf("two deletes share trash path %q", got[0])
	}
}

func TestSweepTrash(t *testing.T) {
	root, _ := fixture(t)
	ws := root.Dir()
	if err := root.SweepTrash(time.Hour); err != nil {
		t.Fatalf("sweep with no trash: %v", err)
	}
	fresh, err := root.Delete("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("%s/%d-old.txt", TrashDir, time.Now().Add(-48*time.Hour).UnixNano())
	oldDir := fmt.Sprintf("%s/%d-olddir", TrashDir, time.Now().Add(-48*time.Hour).UnixNano())
	odd := TrashDir + "/not-a-stamp"
	for _, p := range []string{old, oldDir + "/inner.txt", odd} {
		if err := root.WriteFile(p, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.SweepTrash(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, oldDir} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived the sweep", p)
		}
	}
	for _, p := range []string{fresh, odd} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
			t.Errorf("%s was swept: %v", p, err)
		}
	}
	if err := root.SweepTrash(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, fresh)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SweepTrash(0) kept %s", fresh)
	}
}
