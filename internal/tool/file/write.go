package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

type writeParams struct {
	Path    string `json:"path" jsonschema:"file path, relative to the workspace root"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// Write is the write_file tool.
func Write(ws *workspace.Root) tool.Tool {
	return tool.Func(WriteName, doc(writeDoc), false, func(_ context.Context, _ tool.Call, p writeParams) (tool.Result, error) {
		if err := ws.CheckWritable(p.Path); err != nil {
			return failure("write", p.Path, err)
		}
		fi, err := ws.Stat(p.Path)
		switch {
		case err == nil && fi.IsDir():
			return tool.Errorf("cannot write %s: it is a folder; choose a file name inside it", p.Path), nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return failure("write", p.Path, err)
		}
		if err := ws.WriteFile(p.Path, []byte(p.Content)); err != nil {
			return failure("write", p.Path, err)
		}
		if fi != nil {
			return tool.Text(fmt.Sprintf("wrote %d bytes to %s (replaced the previous %d bytes)", len(p.Content), p.Path, fi.Size())), nil
		}
		return tool.Text(fmt.Sprintf("wrote %d bytes to %s (new file)", len(p.Content), p.Path)), nil
	})
}

// MaxEditBytes bounds the files edit_file loads whole into memory.
const MaxEditBytes = 64 << 20

type editParams struct {
	Path       string `json:"path" jsonschema:"file path, relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, copied from the file"`
	NewString  string `json:"new_string" jsonschema:"the replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of requiring exactly one"`
}

// Edit is the edit_file tool: an exact, unique string replacement.
func Edit(ws *workspace.Root) tool.Tool {
	return tool.Func(EditName, doc(editDoc), false, func(_ context.Context, _ tool.Call, p editParams) (tool.Result, error) {
		return edit(ws, p)
	})
}

func edit(ws *workspace.Root, p editParams) (tool.Result, error) {
	if p.OldString == "" {
		return tool.Errorf("cannot edit %s: old_string is empty; give the exact text to replace, or use write_file to create or rewrite a file", p.Path), nil
	}
	if p.OldString == p.NewString {
		return tool.Errorf("cannot edit %s: old_string and new_string are identical, so there is nothing to change", p.Path), nil
	}
	if err := ws.CheckWritable(p.Path); err != nil {
		return failure("edit", p.Path, err)
	}
	fi, err := ws.Stat(p.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tool.Errorf("cannot edit %s: it does not exist; use write_file to create it", p.Path), nil
		}
		return failure("edit", p.Path, err)
	}
	if fi.IsDir() {
		return tool.Errorf("cannot edit %s: it is a folder, not a file", p.Path), nil
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("cannot edit %s: it is not a regular file (%s)", p.Path, fi.Mode().Type()), nil
	}
	if fi.Size() > MaxEditBytes {
		return tool.Errorf("cannot edit %s: it is %d bytes, more than edit_file handles (%d); use the code tool for files this large", p.Path, fi.Size(), MaxEditBytes), nil
	}
	b, err := ws.ReadFile(p.Path)
	if err != nil {
		return failure("edit", p.Path, err)
	}
	content := string(b)
	old, repl := p.OldString, p.NewString
	n := strings.Count(content, old)
	if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(old, "\r") {
		// The model saw the lines without their carriage returns; match the
		// file's line endings rather than fail.
		old, repl = strings.ReplaceAll(old, "\n", "\r\n"), strings.ReplaceAll(repl, "\n", "\r\n")
		n = strings.Count(content, old)
	}
	switch {
	case n == 0:
		hint := "read the file again and copy the text exactly"
		if strings.Contains(squash(content), squash(p.OldString)) {
			hint = "the text is there with different whitespace or indentation; copy it exactly from read_file"
		}
		return tool.Errorf("cannot edit %s: old_string was not found in it (%s)", p.Path, hint), nil
	case n > 1 && !p.ReplaceAll:
		return tool.Errorf("cannot edit %s: old_string occurs %d times (lines %s); include more surrounding text to pick one, or set replace_all to true",
			p.Path, n, lineList(content, old, 10)), nil
	}
	line := 1 + strings.Count(content[:strings.Index(content, old)], "\n")
	if p.ReplaceAll {
		content = strings.ReplaceAll(content, old, repl)
	} else {
		content = strings.Replace(content, old, repl, 1)
	}
	if err := ws.WriteFile(p.Path, []byte(content)); err != nil {
		return failure("edit", p.Path, err)
	}
	if n == 1 {
		return tool.Text(fmt.Sprintf("edited %s: replaced 1 occurrence at line %d", p.Path, line)), nil
	}
	return tool.Text(fmt.Sprintf("edited %s: replaced %d occurrences (first at line %d)", p.Path, n, line)), nil
}

// squash drops all whitespace, to tell "not there" from "there, spaced
// differently".
func squash(s string) string {
	return strings.Join(strings.Fields(s), "")
}

// lineList names the lines where the first max occurrences of sub start.
func lineList(s, sub string, max int) string {
	var lines []string
	line, pos := 1, 0
	for len(lines) < max {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(s[pos:pos+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
	out := strings.Join(lines, ", ")
	if strings.Count(s, sub) > max {
		out += ", …"
	}
	return out
}
