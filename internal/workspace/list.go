package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// DefaultListMax bounds List when the caller gives no limit.
const DefaultListMax = 1000

// Entry is one item List found.
type Entry struct {
	Path    string // slash-separated, relative to the workspace root, as the caller named it
	IsDir   bool
	Size    int64 // bytes; 0 for directories
	Symlink bool  // the entry itself is a symlink (not followed when walking)
}

// List returns what rel names: the entries of a directory (all levels below
// it when recursive, in lexical order, symlinks not descended), or the single
// entry of a file. It returns at most max entries (DefaultListMax if max <=
// 0) and reports whether more were left out. The root's .delta directory is
// the daemon's and is never listed.
func (r *Root) List(rel string, recursive bool, max int) ([]Entry, bool, error) {
	if max <= 0 {
		max = DefaultListMax
	}
	clean, err := r.clean(rel)
	if err != nil {
		return nil, false, err
	}
	name, err := r.locate(rel)
	if err != nil {
		return nil, false, err
	}
	root, err := r.openRoot()
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", rel, err)
	}
	if !fi.IsDir() {
		return []Entry{{Path: clean, Size: fi.Size()}}, false, nil
	}

	// Paths are reported under the name the caller used (a symlinked
	// directory lists as the link), which Resolve maps back to the same place.
	shown := func(p string) string {
		if name != "." {
			p = strings.TrimPrefix(strings.TrimPrefix(p, name), "/")
		}
		if clean == "." {
			return p
		}
		return path.Join(clean, p)
	}
	hidden := func(p string) bool { return p == DeltaDir }

	var out []Entry
	truncated := false
	errFull := errors.New("full")
	add := func(p string, d fs.DirEntry) error {
		if len(out) == max {
			truncated = true
			return errFull
		}
		e := Entry{Path: shown(p), IsDir: d.IsDir(), Symlink: d.Type()&fs.ModeSymlink != 0}
		if !e.IsDir {
			if info, err := d.Info(); err == nil {
				e.Size = info.Size()
			}
		}
		out = append(out, e)
		return nil
	}
	fsys := root.FS()
	if !recursive {
		ents, err := fs.ReadDir(fsys, name)
		if err != nil {
			return nil, false, fmt.Errorf("list %s: %w", rel, err)
		}
		for _, d := range ents {
			p := path.Join(name, d.Name())
			if hidden(p) {
				continue
			}
			if add(p, d) != nil {
				break
			}
		}
		return out, truncated, nil
	}
	err = fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == name {
				return err
			}
			return nil // an unreadable subfolder is skipped, not fatal
		}
		if p == name {
			return nil
		}
		if hidden(p) {
			return fs.SkipDir
		}
		return add(p, d)
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, false, fmt.Errorf("list %s: %w", rel, err)
	}
	return out, truncated, nil
}
