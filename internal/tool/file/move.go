package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

type moveParams struct {
	From      string `json:"from" jsonschema:"current path, relative to the workspace root"`
	To        string `json:"to" jsonschema:"new path, or an existing folder to move into"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing file at to (the old one goes to the trash)"`
}

// Move is the move_file tool.
func Move(ws *workspace.Root) tool.Tool {
	return tool.Func(MoveName, doc(moveDoc), false, func(_ context.Context, _ tool.Call, p moveParams) (tool.Result, error) {
		if err := ws.CheckWritable(p.From); err != nil {
			return failure("move", p.From, err)
		}
		to := p.To
		if fi, err := ws.Stat(to); err == nil && fi.IsDir() {
			// An existing folder as the destination means "into it", as mv does.
			if src, err1 := ws.Resolve(p.From); err1 == nil {
				if dst, err2 := ws.Resolve(to); err2 == nil && src != dst {
					to = path.Join(to, path.Base(path.Clean(p.From)))
				}
			}
		}
		if err := ws.CheckWritable(to); err != nil {
			return failure("move to", to, err)
		}
		err := ws.Move(p.From, to, p.Overwrite)
		switch {
		case errors.Is(err, fs.ErrExist):
			return tool.Errorf("cannot move %s to %s: %s already exists; set overwrite to true to replace it (the old one goes to the trash)", p.From, to, to), nil
		case infraFault(err):
			return tool.Result{}, fmt.Errorf("move %s to %s: %w", p.From, to, err)
		case err != nil:
			return tool.Errorf("cannot move %s to %s: %s", p.From, to, moveReason(err, p.From, to)), nil
		}
		return tool.Text(fmt.Sprintf("moved %s to %s", p.From, to)), nil
	})
}

// moveReason says why workspace.Move failed, without the "move a to b:"
// prefix the result already carries.
func moveReason(err error, from, to string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the source does not exist (list_files shows what is there)"
	case errors.Is(err, workspace.ErrOutside), errors.Is(err, workspace.ErrBadPath), errors.Is(err, workspace.ErrProtected):
		return err.Error()
	}
	r := reason(err)
	r = strings.TrimPrefix(r, fmt.Sprintf("move %s to %s: ", from, to))
	return strings.TrimPrefix(r, fmt.Sprintf("move %s: ", from))
}

type deleteParams struct {
	Path string `json:"path" jsonschema:"file or folder to delete, relative to the workspace root"`
}

// Delete is the delete_file tool; it moves to the workspace trash.
func Delete(ws *workspace.Root) tool.Tool {
	return tool.Func(DeleteName, doc(deleteDoc), false, func(_ context.Context, _ tool.Call, p deleteParams) (tool.Result, error) {
		if err := ws.CheckWritable(p.Path); err != nil {
			return failure("delete", p.Path, err)
		}
		trashed, err := ws.Delete(p.Path)
		if err != nil {
			return failure("delete", p.Path, err)
		}
		return tool.Text(fmt.Sprintf("deleted %s (moved to %s; recoverable until the trash is swept)", p.Path, trashed)), nil
	})
}
