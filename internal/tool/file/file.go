// Package file holds the workspace file tools a model calls: read_file,
// write_file, edit_file, list_files, move_file and delete_file. Each is a
// tool.Func over a *workspace.Root, so every path is confined to the
// workspace, and every mutating tool checks the protected root names first.
//
// A mistake the model can act on (a missing file, a path outside the
// workspace, a protected name, a directory where a file was meant) comes back
// as an error Result naming the path and the reason. Only faults the model
// cannot fix (I/O errors, a full disk) are returned as Go errors.
package file

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// Tool names, as the model sees them.
const (
	ReadName   = "read_file"
	WriteName  = "write_file"
	EditName   = "edit_file"
	ListName   = "list_files"
	MoveName   = "move_file"
	DeleteName = "delete_file"
)

var (
	//go:embed read_file.md
	readDoc string
	//go:embed write_file.md
	writeDoc string
	//go:embed edit_file.md
	editDoc string
	//go:embed list_files.md
	listDoc string
	//go:embed move_file.md
	moveDoc string
	//go:embed delete_file.md
	deleteDoc string
)

// All returns every file tool over ws, in the order the model sees them;
// read_file records the images it reads through images (nil = none).
func All(ws *workspace.Root, images Images) []tool.Tool {
	return []tool.Tool{ReadImages(ws, images), Write(ws), Edit(ws), List(ws), Move(ws), Delete(ws)}
}

func doc(s string) string { return strings.TrimSpace(s) }

// failure turns err from a workspace operation on path into what the model
// sees: an error Result with the reason for anything it can act on, a
// wrapped Go error for faults of the machine.
func failure(verb, path string, err error) (tool.Result, error) {
	if infraFault(err) {
		return tool.Result{}, fmt.Errorf("%s %s: %w", verb, path, err)
	}
	return tool.Errorf("cannot %s %s: %s", verb, path, reason(err)), nil
}

// reason says in plain words why an operation failed. The workspace's own
// refusals are already written for the model and pass through as they are.
func reason(err error) string {
	switch {
	case errors.Is(err, workspace.ErrOutside), errors.Is(err, workspace.ErrProtected), errors.Is(err, workspace.ErrBadPath):
		return err.Error()
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist (list_files shows what is there)"
	case errors.Is(err, syscall.ENOTDIR):
		return "a folder in the path is actually a file"
	case errors.Is(err, syscall.EISDIR):
		return "it is a folder, not a file"
	case errors.Is(err, fs.ErrExist):
		return "the destination already exists"
	case errors.Is(err, syscall.ENOTEMPTY):
		return "the destination is a folder that is not empty"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "a name in the path is too long"
	default:
		return err.Error()
	}
}

// infraFault reports errors no change of arguments can fix.
func infraFault(err error) bool {
	for _, e := range []error{syscall.EIO, syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
