package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// Delete moves what rel names (a file, a directory with its contents, or a
// symlink itself) into .delta/trash/<unix-nanos>-<name> and returns that
// trash path. Nothing is really deleted until SweepTrash ages it out.
func (r *Root) Delete(rel string) (string, error) {
	name, err := r.locateNoFollow(rel)
	if err != nil {
		return "", err
	}
	if name == "." {
		return "", fmt.Errorf("delete %s: cannot delete the workspace root", rel)
	}
	if name == TrashDir || strings.HasPrefix(TrashDir, name+"/") {
		return "", fmt.Errorf("delete %s: cannot move the trash into itself", rel)
	}
	root, err := r.openRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	if _, err := root.Lstat(name); err != nil {
		return "", fmt.Errorf("delete %s: %w", rel, err)
	}
	dst, err := r.trash(root, name)
	if err != nil {
		return "", fmt.Errorf("delete %s: %w", rel, err)
	}
	return dst, nil
}

// trash renames the root-relative name into the trash directory.
func (r *Root) trash(root *os.Root, name string) (string, error) {
	if err := root.MkdirAll(TrashDir, 0o755); err != nil {
		return "", fmt.Errorf("create trash: %w", err)
	}
	// The timestamp leads the name so the sweep ages entries by when they
	// were deleted, not by their (preserved) modification time.
	now := time.Now().UnixNano()
	for {
		dst := path.Join(TrashDir, strconv.FormatInt(now, 10)+"-"+path.Base(name))
		if _, err := root.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			if err := root.Rename(name, dst); err != nil {
				return "", fmt.Errorf("move to trash: %w", err)
			}
			return dst, nil
		}
		now++
	}
}

// SweepTrash permanently removes trash entries deleted more than olderThan
// ago. Entries whose name does not start with a timestamp are left alone. A
// missing trash directory is not an error. It is meant for daemon start.
func (r *Root) SweepTrash(olderThan time.Duration) error {
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	ents, err := fs.ReadDir(root.FS(), TrashDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep trash: %w", err)
	}
	cutoff := time.Now().Add(-olderThan).UnixNano()
	var errs []error
	for _, d := range ents {
		stamp, _, ok := strings.Cut(d.Name(), "-")
		if !ok {
			continue
		}
		nanos, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil || nanos > cutoff {
			continue
		}
		if err := root.RemoveAll(path.Join(TrashDir, d.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sweep trash: %w", err)
	}
	return nil
}
