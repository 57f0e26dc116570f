package cli

import (
	"context"
	"fmt"
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
		return fmt.Errorf("init %s: %w (files already created are kept; fix the problem and rerun to fill the rest)", dir, err)
	}
	if len(made) > 0 {
		fmt.Fprintf(c.stdout, "\nNext: set a model key in %s, then run `delta dev %s`.\n", filepath.Join(dir, "delta.env"), dir)
	}
	return nil
}
