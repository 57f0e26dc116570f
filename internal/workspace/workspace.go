// Package workspace is the agent's working directory: every path a model
// supplies is resolved here and confined to it, file mutations are atomic,
// deletes go to a trash that a sweep empties later, and oversized tool results
// spill into files the model can re-read.
//
// Confinement is checked twice. Resolve walks the path one component at a
// time, following symlinks the way the kernel does, and refuses any path whose
// real location leaves the root (traversal with "..", absolute paths, or a
// symlink at any depth pointing out, dangling or not). The file operations
// then act on the resolved, symlink-free relative path through an os.Root,
// which refuses to leave the root even if the tree changes between the check
// and the use.
//
// The protected root names (CheckWritable) are mutation guards for tools, not
// read controls and not a process sandbox: the methods of Root do not enforce
// them, so the daemon itself (uploads, remember, spill, trash) can write
// anywhere in the workspace. Root is safe for concurrent use.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Layout of the daemon's own corner of the workspace.
const (
	DeltaDir = ".delta"       // daemon state; protected, hidden from List
	SpillDir = ".delta/spill" // full text of capped tool results
	TrashDir = ".delta/trash" // deleted files, swept by SweepTrash
	MediaDir = ".delta/media" // media the daemon keeps for vision
)

var (
	// ErrOutside reports a path that is absolute, climbs above the root, or
	// reaches outside it through a symlink.
	ErrOutside = errors.New("outside the workspace")
	// ErrProtected reports a write to a protected root name (CheckWritable).
	ErrProtected = errors.New("protected workspace path")
	// ErrBadPath reports a path that is empty, holds a NUL byte or loops
	// through symlinks.
	ErrBadPath = errors.New("invalid path")
)

// maxSymlinkHops bounds symlink chains, as the kernel's ELOOP does.
const maxSymlinkHops = 40

// Root is the workspace directory.
type Root struct {
	dir string // absolute, symlink-free
}

// Open returns the workspace at dir, creating the directory if it is missing.
// The root is held as its absolute real path, so a workspace reached through
// a symlink is confined to the directory the symlink names.
func Open(dir string) (*Root, error) {
	if dir == "" {
		return nil, fmt.Errorf("open workspace: %w: empty directory", ErrBadPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open workspace %s: not a directory", dir)
	}
	return &Root{dir: real}, nil
}

// Dir is the workspace's absolute real path.
func (r *Root) Dir() string { return r.dir }

// Resolve returns the absolute real path rel names inside the workspace, with
// every symlink followed. The path need not exist; the part that does exist
// must stay inside the root, and so must every symlink met on the way.
func (r *Root) Resolve(rel string) (string, error) {
	clean, err := r.clean(rel)
	if err != nil {
		return "", err
	}
	real, err := r.follow(rel, clean)
	if err != nil {
		return "", err
	}
	return real, nil
}

// Rel turns a path Resolve returned back into a slash-separated path relative
// to the root ("." for the root itself).
func (r *Root) Rel(real string) (string, error) {
	if !r.within(real) {
		return "", fmt.Errorf("%w: %s", ErrOutside, real)
	}
	rel, err := filepath.Rel(r.dir, real)
	if err != nil {
		return "", fmt.Errorf("relative path of %s: %w", real, err)
	}
	return filepath.ToSlash(rel), nil
}

// clean validates a model-supplied path lexically and returns it cleaned.
func (r *Root) clean(rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("%w: empty path", ErrBadPath)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return "", fmt.Errorf("%w: %q contains a NUL byte", ErrBadPath, rel)
	}
	if filepath.IsAbs(rel) {
		hint := "give a path relative to the workspace root"
		if c := filepath.Clean(rel); r.within(c) && c != r.dir {
			if inside, err := filepath.Rel(r.dir, c); err == nil {
				hint = fmt.Sprintf("use %q (paths are relative to the workspace root)", filepath.ToSlash(inside))
			}
		}
		return "", fmt.Errorf("%w: %q is an absolute path; %s", ErrOutside, rel, hint)
	}
	c := filepath.Clean(rel)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q climbs above the workspace root", ErrOutside, rel)
	}
	return c, nil
}

// within reports whether the absolute, cleaned path p is the root or below it.
func (r *Root) within(p string) bool {
	if p == r.dir {
		return true
	}
	prefix := r.dir
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return strings.HasPrefix(p, prefix)
}

// follow resolves the cleaned relative path clean against the root.
func (r *Root) follow(orig, clean string) (string, error) {
	if clean == "." {
		return r.dir, nil
	}
	hops := 0
	real, _, err := r.walk(orig, r.dir, strings.Split(clean, "/"), &hops)
	if err != nil {
		return "", err
	}
	if !r.within(real) { // unreachable given clean and the per-link checks; kept as the last word
		return "", fmt.Errorf("%w: %q resolves to %s", ErrOutside, orig, real)
	}
	return real, nil
}

// walk applies comps to the absolute path cur like the kernel does: ".."
// goes to the real parent, a symlink is replaced by its fully resolved
// target, which must lie inside the root. Once a component does not exist
// the rest is applied lexically (nothing below a missing name can be a
// symlink). It reports whether the result exists.
func (r *Root) walk(orig, cur string, comps []string, hops *int) (string, bool, error) {
	missing := false
	for _, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if missing {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// The operation on this path fails later with the precise
				// reason; confinement is already settled.
				missing = true
				cur = next
				continue
			}
			if errors.Is(err, syscall.ENAMETOOLONG) {
				return "", false, fmt.Errorf("%w: %q has a name that is too long", ErrBadPath, orig)
			}
			return "", false, fmt.Errorf("resolve %q: %w", orig, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		*hops++
		if *hops > maxSymlinkHops {
			return "", false, fmt.Errorf("%w: %q loops through symlinks", ErrBadPath, orig)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false, fmt.Errorf("resolve %q: %w", orig, err)
		}
		base := cur
		if filepath.IsAbs(target) {
			base = "/"
		}
		dest, exists, err := r.walk(orig, base, strings.Split(filepath.ToSlash(target), "/"), hops)
		if err != nil {
			return "", false, err
		}
		if !r.within(dest) {
			link := next
			if l, err := filepath.Rel(r.dir, next); err == nil && r.within(next) {
				link = filepath.ToSlash(l)
			}
			return "", false, fmt.Errorf("%w: %q goes through symlink %q, which points to %s", ErrOutside, orig, link, target)
		}
		cur = dest
		missing = !exists
	}
	return cur, !missing, nil
}

// locate resolves rel for the root-relative form os.Root wants.
func (r *Root) locate(rel string) (string, error) {
	real, err := r.Resolve(rel)
	if err != nil {
		return "", err
	}
	return r.Rel(real)
}

// locateNoFollow is locate without following a symlink in the last
// component, for operations that act on a link itself (move, delete). The
// link must still point inside the root.
func (r *Root) locateNoFollow(rel string) (string, error) {
	if _, err := r.Resolve(rel); err != nil {
		return "", err
	}
	clean, _ := r.clean(rel) // validated by Resolve
	if clean == "." {
		return ".", nil
	}
	parent, err := r.follow(rel, filepath.Dir(clean))
	if err != nil {
		return "", err
	}
	return r.Rel(filepath.Join(parent, filepath.Base(clean)))
}

// openRoot opens the workspace as an os.Root for one operation. Opening per
// operation keeps it in step with Resolve, which works on the path, if the
// workspace directory is ever moved.
func (r *Root) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	return root, nil
}
