package vault

import (
	"fmt"
	"regexp"
	"strings"
)

// refPattern matches a {{vault:NAME}} reference; whitespace inside the
// braces is tolerated, the name is not case-folded.
var refPattern = regexp.MustCompile(`\{\{\s*vault:([^}\s]*)\s*\}\}`)

// Expand replaces every {{vault:NAME}} in s with resolve(NAME). It fails
// closed: an unknown or invalid name, or a nil resolve (no vault), is an
// error naming the reference, and nothing of s is returned.
func Expand(s string, resolve func(name string) (string, error)) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(s, func(m string) string {
		if firstErr != nil {
			return ""
		}
		name := refPattern.FindStringSubmatch(m)[1]
		if !ValidName(name) {
			firstErr = fmt.Errorf("vault reference %q: invalid secret name", name)
			return ""
		}
		if resolve == nil {
			firstErr = fmt.Errorf("vault reference %s: %w", name, ErrDisabled)
			return ""
		}
		v, err := resolve(name)
		if err != nil {
			firstErr = fmt.Errorf("vault reference %s: %w", name, err)
			return ""
		}
		return v
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// References lists the secret names s refers to, in order, without
// resolving them (for the status block's "declared" names).
func References(s string) []string {
	var out []string
	for _, m := range refPattern.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
