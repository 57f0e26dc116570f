package file

import (
	"context"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// MaxListEntries bounds one list_files result.
const MaxListEntries = 500

type listParams struct {
	Path      string `json:"path,omitempty" jsonschema:"folder to list, relative to the workspace root (default: the root)"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"also list everything in subfolders"`
}

// List is the list_files tool.
func List(ws *workspace.Root) tool.Tool {
	return tool.Func(ListName, doc(listDoc), true, func(_ context.Context, _ tool.Call, p listParams) (tool.Result, error) {
		dir := p.Path
		if dir == "" {
			dir = "."
		}
		entries, truncated, err := ws.List(dir, p.Recursive, MaxListEntries)
		if err != nil {
			return failure("list", dir, err)
		}
		if len(entries) == 0 {
			if dir == "." {
				return tool.Text("[the workspace is empty]"), nil
			}
			return tool.Text(fmt.Sprintf("[%s is empty]", dir)), nil
		}
		var b strings.Builder
		for _, e := range entries {
			b.WriteString(e.Path)
			switch {
			case e.IsDir:
				b.WriteByte('/')
			case e.Symlink:
				b.WriteString(" (symlink)")
			default:
				fmt.Fprintf(&b, " (%s)", size(e.Size))
			}
			b.WriteByte('\n')
		}
		if truncated {
			fmt.Fprintf(&b, "[listing stopped at %d entries; more exist. List a subfolder", MaxListEntries)
			if p.Recursive {
				b.WriteString(", or list without recursive")
			}
			b.WriteString(" to see the rest]\n")
		}
		return tool.Text(strings.TrimSuffix(b.String(), "\n")), nil
	})
}

// size renders a byte count the way a person reads it.
func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	}
}
