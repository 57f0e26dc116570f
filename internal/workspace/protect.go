package workspace

import (
	"fmt"
	"strings"
)

// protectedNames are the root entries file tools may not change,
// lower-cased: the operator's policy and prompt files, secrets, and the
// daemon's own state. DELTA.md is written only through the remember tool,
// which calls WriteFile directly.
var protectedNames = map[string]bool{
	"policy.md":         true,
	"vocab.json":        true,
	"prompt_context.md": true,
	"delta.md":          true,
	".env":              true,
	"delta.env":         true,
	DeltaDir:            true,
}

// CheckWritable reports whether a tool may create, change, move or delete
// rel. It returns ErrProtected for the workspace root itself and for the
// protected root names (POLICY.md, vocab.json, PROMPT_CONTEXT.md, DELTA.md,
// .env, .env.*, delta.env, and .delta with everything under it), compared
// case-insensitively so a case-insensitive file system cannot be used to
// slip past. The same names inside a subfolder are writable. Both the path as
// written and the path its symlinks lead to are checked, so a link cannot
// launder a protected name. Paths Resolve refuses are refused here too.
func (r *Root) CheckWritable(rel string) error {
	clean, err := r.clean(rel)
	if err != nil {
		return err
	}
	if err := protected(rel, clean); err != nil {
		return err
	}
	real, err := r.follow(rel, clean)
	if err != nil {
		return err
	}
	target, err := r.Rel(real)
	if err != nil {
		return err
	}
	if target != clean {
		if err := protected(rel, target); err != nil {
			return fmt.Errorf("%w (through a symlink to %q)", err, target)
		}
	}
	return nil
}

// protected checks a cleaned, slash-separated relative path against the
// root-only protected names. Only the first component matters: a protected
// name protects whatever sits below it, and a subfolder is never protected.
func protected(orig, clean string) error {
	if clean == "." {
		return fmt.Errorf("%w: %q is the workspace root itself", ErrProtected, orig)
	}
	first, _, _ := strings.Cut(clean, "/")
	name := strings.ToLower(first)
	if protectedNames[name] || strings.HasPrefix(name, ".env.") {
		return fmt.Errorf("%w: %q is a protected root file (POLICY.md, vocab.json, PROMPT_CONTEXT.md, DELTA.md, .env, .env.*, delta.env, .delta/) that file tools cannot change; the same name inside a subfolder is fine", ErrProtected, orig)
	}
	return nil
}

// operatorRefused are the root names an operator cannot read or write
// through the inspection API, lower-cased: the daemon's live state (its
// database, spill, media and trash) and the files that hold secrets.
var operatorRefused = map[string]bool{
	".env":      true,
	"delta.env": true,
	DeltaDir:    true,
}

// CheckOperator reports whether the inspection API may read or write rel
// on an operator's behalf. It follows CheckWritable's rules (case-folded
// root names, the path as written and the path its symlinks lead to, the
// root itself refused) with a narrower list: the bundle files an operator
// edits (DELTA.md, POLICY.md, PROMPT_CONTEXT.md, vocab.json) are allowed,
// while .delta with everything under it, .env, .env.* and delta.env are
// refused with ErrProtected.
func (r *Root) CheckOperator(rel string) error {
	clean, err := r.clean(rel)
	if err != nil {
		return err
	}
	if err := operatorProtected(rel, clean); err != nil {
		return err
	}
	real, err := r.follow(rel, clean)
	if err != nil {
		return err
	}
	target, err := r.Rel(real)
	if err != nil {
		return err
	}
	if target != clean {
		if err := operatorProtected(rel, target); err != nil {
			return fmt.Errorf("%w (through a symlink to %q)", err, target)
		}
	}
	return nil
}

func operatorProtected(orig, clean string) error {
	if clean == "." {
		return fmt.Errorf("%w: %q is the workspace root itself", ErrProtected, orig)
	}
	first, _, _ := strings.Cut(clean, "/")
	name := strings.ToLower(first)
	if operatorRefused[name] || strings.HasPrefix(name, ".env.") {
		return fmt.Errorf("%w: %q is the daemon's state or a secrets file (.delta/, .env, .env.*, delta.env), which inspection neither reads nor writes", ErrProtected, orig)
	}
	return nil
}
