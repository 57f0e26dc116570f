package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/deltaharness/delta/internal/bundle"
)

// bundleFiles are the five scaffold files, in the order init reports them.
var bundleFiles = []string{"delta.env", "vocab.json", "DELTA.md", "POLICY.md", "PROMPT_CONTEXT.md"}

// initCommand scaffolds a bundle. It never overwrites: bundle.Scaffold
// creates each file exclusively, so existing files are reported as skipped.
type initCommand struct{ env }

// initSynopsis is the argument synopsis `delta init` shows in help and usage errors.
const initSynopsis = "<dir>"

func (c *initCommand) Run(_ context.Context, args []string) error {
	fs := newFlagSet("init")
	pos, err := parse(fs, c.env, initSynopsis, args)
	if err != nil {
		return helpOK(err)
	}
	switch {
	case len(pos) == 0:
		return usageFor(c.env, fs, initSynopsis, "missing the bundle directory")
	case len(pos) > 1:
		return usageFor(c.env, fs, initSynopsis, "takes one directory, got %d arguments", len(pos))
	case pos[0] == "":
		return usageFor(c.env, fs, initSynopsis, "the bundle directory is empty")
	}
	dir := pos[0]
	created, err := bundle.Scaffold(dir)
	made := make([]string, 0, len(created))
	for _, p := range created {
		made = append(made, filepath.Base(p))
	}
	for _, name := range bundleFiles {
		if slices.Contains(made, name) {
			fmt.Fprintf(c.stdout, "created  %s\n", filepath.Join(dir, name))
		} else if err == nil {
			fmt.Fprintf(c.stdout, "skipped  %s (already exists, left unchanged)\n", filepath.Join(dir, name))
		}
	}
	if err != nil {
		kept := "nothing was created"
		if len(made) > 0 {
			kept = "the files created are kept"
		}
		return fmt.Errorf("init %s: %s; %s: fix the problem and rerun to fill the rest", dir, oneProblem(err), kept)
	}
	if len(made) > 0 {
		fmt.Fprintf(c.stdout, "\nNext: set a model key in %s, then run `delta dev %s`.\n", filepath.Join(dir, "delta.env"), dir)
	}
	return nil
}

// oneProblem renders a scaffold failure on one line: the first file's
// problem, and how many more files failed (a read-only directory fails all
// five the same way; five lines would say it five times).
func oneProblem(err error) string {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		errs = j.Unwrap()
	}
	msg := errs[0].Error()
	var pe *fs.PathError
	if errors.As(errs[0], &pe) {
		msg = pe.Error() // "open dir/delta.env: permission denied", without the wrapping that repeats the path
	}
	if n := len(errs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more %s)", n, map[bool]string{true: "file", false: "files"}[n == 1])
	}
	return msg
}
