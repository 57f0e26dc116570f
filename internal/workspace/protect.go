package workspace

import (
	"fmt"
	"path"
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

// rootRule is a set of root names a caller may not touch, lower-cased, the
// names it may not touch in any folder, and what the refusal says.
type rootRule struct {
	names map[string]bool
	deep  func(name string) bool
	what  string
}

// toolRule: what file tools may not change.
var toolRule = rootRule{protectedNames, secretName, "is a protected file (POLICY.md, vocab.json, PROMPT_CONTEXT.md, DELTA.md at the root; .env, .env.*, delta.env, .delta/ in any folder) that file tools cannot change; the root-only names inside a subfolder are fine"}

// operatorRule: what the inspection API neither reads nor writes on an
// operator's behalf — the daemon's live state (database, spill, media,
// trash) and the files that hold secrets. The bundle files an operator
// edits are allowed.
var operatorRule = rootRule{map[string]bool{".env": true, "delta.env": true, DeltaDir: true}, secretName,
	"is the daemon's state or a secrets file (.delta/, .env, .env.*, delta.env, in any folder), which inspection neither reads nor writes"}

// readRule: what file tools may not read. Only the secrets files: the
// daemon's .delta folder holds spilled tool results and research reports
// an agent is meant to read back, and its database is binary, which
// read_file refuses anyway.
var readRule = rootRule{nil, secretFile,
	"is a secrets file (.env, .env.*, delta.env, in any folder), which file tools do not read: what a tool reads reaches the model and the transcript; give the agent what it needs through the vault or the environment instead"}

// secretName reports whether one path component, lower-cased, names a
// file that holds secrets or daemon state. These are refused at any depth,
// not only at the root: a bundle's subfolder .env holds secrets just the
// same, and must not reach an operator's screen or a model's writes.
func secretName(name string) bool {
	return name == DeltaDir || secretFile(name)
}

// secretFile reports whether one path component, lower-cased, names a
// file that holds secrets: .env, .env.* or delta.env.
func secretFile(name string) bool {
	return name == ".env" || name == "delta.env" || strings.HasPrefix(name, ".env.")
}

// SecretFile reports whether the last component of a slash-separated
// path names a secrets file, for callers that walk the workspace
// themselves (grep) and skip what CheckReadable would refuse.
func SecretFile(p string) bool {
	return secretFile(strings.ToLower(path.Base(p)))
}

// CheckWritable reports whether a tool may create, change, move or delete
// rel. It returns ErrProtected for the workspace root itself and for the
// protected root names (POLICY.md, vocab.json, PROMPT_CONTEXT.md, DELTA.md,
// .env, .env.*, delta.env, and .delta with everything under it), compared
// case-insensitively so a case-insensitive file system cannot be used to
// slip past. .env, .env.*, delta.env and .delta are refused in any folder;
// the other names inside a subfolder are writable. Both the path as
// written and the path its symlinks lead to are checked, so a link cannot
// launder a protected name. Paths Resolve refuses are refused here too.
func (r *Root) CheckWritable(rel string) error { return r.check(rel, toolRule) }

// CheckOperator reports whether the inspection API may read or write rel
// on an operator's behalf. It follows CheckWritable's rules (case-folded
// root names, the path as written and the path its symlinks lead to, the
// root itself refused) with operatorRule's narrower list: DELTA.md,
// POLICY.md, PROMPT_CONTEXT.md and vocab.json are allowed, while .delta
// with everything under it, .env, .env.* and delta.env are refused.
func (r *Root) CheckOperator(rel string) error { return r.check(rel, operatorRule) }

// CheckReadable reports whether a file tool may read rel. It refuses the
// secrets files (.env, .env.*, delta.env) in any folder, compared
// case-insensitively, as written and where symlinks lead, so their
// contents never reach a model, a transcript or an event. Everything else
// Resolve accepts is readable, including the .delta folder's spilled
// results.
func (r *Root) CheckReadable(rel string) error {
	clean, err := r.clean(rel)
	if err != nil {
		return err
	}
	if clean == "." {
		return nil // a folder, which read_file explains itself
	}
	return r.check(rel, readRule)
}

// check applies rule to rel as written and to where its symlinks lead.
func (r *Root) check(rel string, rule rootRule) error {
	clean, err := r.clean(rel)
	if err != nil {
		return err
	}
	if err := rule.refuses(rel, clean); err != nil {
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
		if err := rule.refuses(rel, target); err != nil {
			return fmt.Errorf("%w (through a symlink to %q)", err, target)
		}
	}
	return nil
}

// refuses checks a cleaned, slash-separated relative path against the
// rule's root names and the secret names. A root name is refused only as
// the first component; a secret name (secretName) is refused as any
// component. Either way a refused name covers whatever sits below it.
func (rule rootRule) refuses(orig, clean string) error {
	if clean == "." {
		return fmt.Errorf("%w: %q is the workspace root itself", ErrProtected, orig)
	}
	for i, part := range strings.Split(clean, "/") {
		name := strings.ToLower(part)
		if (i == 0 && rule.names[name]) || rule.deep(name) {
			return fmt.Errorf("%w: %q %s", ErrProtected, orig, rule.what)
		}
	}
	return nil
}
