package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// ReadFile returns the contents of the file rel names.
func (r *Root) ReadFile(rel string) ([]byte, error) {
	return inRoot(r, rel, "read", (*os.Root).ReadFile)
}

// OpenFile opens the file rel names for reading, for callers that stream.
// The file keeps its own descriptor after the root is closed.
func (r *Root) OpenFile(rel string) (*os.File, error) {
	return inRoot(r, rel, "open", (*os.Root).Open)
}

// Stat describes what rel names, following symlinks.
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	return inRoot(r, rel, "stat", (*os.Root).Stat)
}

// inRoot calls do with the workspace root, opened for the call, and the
// name rel locates in it; do's error is wrapped with op and rel.
func inRoot[T any](r *Root, rel, op string, do func(root *os.Root, name string) (T, error)) (T, error) {
	var zero T
	name, err := r.locate(rel)
	if err != nil {
		return zero, err
	}
	root, err := r.openRoot()
	if err != nil {
		return zero, err
	}
	defer root.Close()
	v, err := do(root, name)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", op, rel, err)
	}
	return v, nil
}

// WriteFile replaces the file rel names with data, atomically: the bytes go
// to a temporary file in the same directory, which is synced and renamed over
// the target, so a reader or a crash sees the old file or the new one, never
// half of either. Missing parent directories are created. An existing file
// keeps its permission bits; a new one gets 0644. Writing through a symlink
// replaces the file it points to.
func (r *Root) WriteFile(rel string, data []byte) error {
	name, err := r.locate(rel)
	if err != nil {
		return err
	}
	if name == "." {
		return fmt.Errorf("write %s: is the workspace root", rel)
	}
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()

	perm := fs.FileMode(0o644)
	switch fi, err := root.Stat(name); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("write %s: %w", rel, syscall.EISDIR)
	case err == nil:
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: create parent: %w", rel, err)
		}
	}
	// The temporary name stays well under NAME_MAX however long the target's is.
	base := path.Base(name)
	if len(base) > 100 {
		base = base[:100]
	}
	tmp := path.Join(path.Dir(name), "."+base+".tmp-"+randHex())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := writeSync(f, data, perm); err != nil {
		_ = root.Remove(tmp) // best effort: the write already failed, and that error is returned
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp) // best effort: the write already failed, and that error is returned
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// writeSync fills f, fixes its mode (on the descriptor, so no path race) and
// makes it durable before the rename publishes it.
func writeSync(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func randHex() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b[:])
}

// Exists reports whether rel names something (following symlinks). A path
// that cannot be resolved is reported as an error, not as missing.
func (r *Root) Exists(rel string) (bool, error) {
	_, err := r.Stat(rel)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// Move renames from to to, creating to's parent directories. If to exists
// Move fails with an error wrapping fs.ErrExist unless overwrite is set, in
// which case the old to is moved to the trash first, so nothing is lost. A
// symlink named by from is moved itself, not the file it points to. The
// check for an existing to and the rename are separate steps: a concurrent
// writer may slip in between, which the tools accept as they do any race
// with the code tool.
func (r *Root) Move(from, to string, overwrite bool) error {
	src, err := r.locateNoFollow(from)
	if err != nil {
		return err
	}
	dst, err := r.locateNoFollow(to)
	if err != nil {
		return err
	}
	if src == "." || dst == "." {
		return fmt.Errorf("move %s to %s: cannot move the workspace root", from, to)
	}
	if src == dst {
		return fmt.Errorf("move %s to %s: source and destination are the same path", from, to)
	}
	if strings.HasPrefix(dst, src+"/") {
		return fmt.Errorf("move %s to %s: a folder cannot be moved inside itself", from, to)
	}
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := root.Lstat(src); err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	switch _, err := root.Lstat(dst); {
	case err == nil && !overwrite:
		return fmt.Errorf("move %s to %s: %w", from, to, fs.ErrExist)
	case err == nil:
		if _, err := r.trash(root, dst); err != nil {
			return fmt.Errorf("move %s to %s: %w", from, to, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	if dir := path.Dir(dst); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("move %s to %s: create parent: %w", from, to, err)
		}
	}
	if err := root.Rename(src, dst); err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return nil
}
