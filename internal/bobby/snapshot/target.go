package snapshot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp"
)

// Sentinel errors callers branch on with errors.Is. The concrete errors carry
// the details ([*NotFoundError], [*AmbiguousError]).
var (
	// ErrTargetNotFound means the target resolves to no live node. Its message
	// names the repair: take a new a11y_snapshot.
	ErrTargetNotFound = errors.New("target not found")
	// ErrAmbiguous means several nodes match and the target has no Index.
	ErrAmbiguous = errors.New("target is ambiguous")
	// ErrInvalidTarget means the target itself is malformed (no form set, two
	// forms mixed, a bad ref, a bad selector).
	ErrInvalidTarget = errors.New("invalid target")
	// ErrNoPage means the context carries no chromedp page target. The
	// functions of this package never open a tab themselves.
	ErrNoPage = errors.New("context has no chromedp page target")
)

// RepairSnapshot is the repair every stale-target error names.
const RepairSnapshot = "take a new a11y_snapshot"

// Target names one node of a page in one of three forms, exactly as the MCP
// tools accept it:
//
//   - Ref: a ref from a snapshot ("e123"). Role and Name may ride along (a
//     target copied from a snapshot carries all three); when Role is set it
//     must still match, which catches a ref that outlived its document.
//   - Role and/or Name: a semantic target, matched against the accessibility
//     tree of the main frame and every readable iframe. Name matches exactly
//     first, then trimmed and case-insensitively. Index (0-based, document
//     order) picks one when several match.
//   - Selector: a CSS selector evaluated on the main document, piercing open
//     shadow roots. "iframe#pay >> input[name=card]" first selects a
//     same-origin iframe, then evaluates the rest inside its document. Index
//     picks one when several match.
type Target struct {
	Ref      string `json:"ref,omitempty"`
	Role     string `json:"role,omitempty"`
	Name     string `json:"name,omitempty"`
	Index    *int   `json:"index,omitempty"`
	Selector string `json:"selector,omitempty"`
}

// IsZero reports whether no form of the target is set.
func (t Target) IsZero() bool {
	return t.Ref == "" && t.Role == "" && t.Name == "" && t.Selector == "" && t.Index == nil
}

// Validate reports a malformed target with an [ErrInvalidTarget] error that
// says which rule failed. It does not touch the page.
func (t Target) Validate() error {
	switch {
	case t.IsZero():
		return fmt.Errorf("%w: set ref, role/name, or selector", ErrInvalidTarget)
	case t.Selector != "" && (t.Ref != "" || t.Role != "" || t.Name != ""):
		return fmt.Errorf("%w: selector cannot be combined with ref, role or name", ErrInvalidTarget)
	case t.Index != nil && *t.Index < 0:
		return fmt.Errorf("%w: index must be 0 or more", ErrInvalidTarget)
	case t.Ref == "" && t.Role == "" && t.Name == "" && t.Selector == "":
		return fmt.Errorf("%w: index alone names nothing; add role/name or selector", ErrInvalidTarget)
	}
	if t.Ref != "" {
		if _, err := ParseRef(t.Ref); err != nil {
			return err
		}
	}
	if t.Selector != "" {
		for _, part := range splitFrameSelector(t.Selector) {
			if part == "" {
				return fmt.Errorf("%w: empty selector part in %q", ErrInvalidTarget, t.Selector)
			}
		}
	}
	return nil
}

// String renders the target for error messages: the form that was used.
func (t Target) String() string {
	var parts []string
	if t.Ref != "" {
		parts = append(parts, "ref "+t.Ref)
	}
	if t.Role != "" {
		parts = append(parts, "role "+t.Role)
	}
	if t.Name != "" {
		parts = append(parts, "name "+strconv.Quote(t.Name))
	}
	if t.Selector != "" {
		parts = append(parts, "selector "+strconv.Quote(t.Selector))
	}
	if t.Index != nil {
		parts = append(parts, "index "+strconv.Itoa(*t.Index))
	}
	if len(parts) == 0 {
		return "empty target"
	}
	return strings.Join(parts, ", ")
}

// NodeRef is a resolved target: the DOM node and the frame whose document
// holds it. FrameID is empty for the main frame.
type NodeRef struct {
	BackendNodeID cdp.BackendNodeID `json:"backendNodeId"`
	FrameID       cdp.FrameID       `json:"frameId,omitempty"`
}

// Ref returns the snapshot ref of the node ("e123").
func (r NodeRef) Ref() string { return RefOf(r.BackendNodeID) }

// RefOf returns the ref of a backend DOM node id. A ref is derived from the
// backend node id, which Chromium keeps for as long as the node lives and
// never reuses inside one renderer process, so the same button keeps its ref
// across snapshots and unrelated mutations. Ids are unique across the
// same-process iframes of a page, so a ref needs no frame part.
func RefOf(id cdp.BackendNodeID) string { return "e" + strconv.FormatInt(int64(id), 10) }

// ParseRef returns the backend node id of a ref made by [RefOf].
func ParseRef(ref string) (cdp.BackendNodeID, error) {
	digits, ok := strings.CutPrefix(ref, "e")
	if !ok || digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, fmt.Errorf("%w: ref %q is not of the form e<number>", ErrInvalidTarget, ref)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != digits {
		return 0, fmt.Errorf("%w: ref %q is not of the form e<number>", ErrInvalidTarget, ref)
	}
	return cdp.BackendNodeID(n), nil
}

// NotFoundError says why a target resolves to nothing and names the repair.
type NotFoundError struct {
	Target Target
	Reason string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("target not found (%s): %s; %s", e.Target, e.Reason, RepairSnapshot)
}

// Unwrap makes errors.Is(err, ErrTargetNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrTargetNotFound }

// Candidate is one of the nodes an ambiguous target matched. Passing Index
// back in the target picks it.
type Candidate struct {
	Index int    `json:"index"`
	Ref   string `json:"ref"`
	Role  string `json:"role"`
	Name  string `json:"name"`
}

// AmbiguousError lists the nodes an index-less target matched.
type AmbiguousError struct {
	Target     Target
	Matches    int         // how many nodes matched
	Candidates []Candidate // the first few of them
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target is ambiguous (%s): %d nodes match; add index to pick one:", e.Target, e.Matches)
	for i, c := range e.Candidates {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " index %d = %s %q [ref=%s]", c.Index, c.Role, c.Name, c.Ref)
	}
	if e.Matches > len(e.Candidates) {
		fmt.Fprintf(&b, "; … %d more", e.Matches-len(e.Candidates))
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// maxCandidates bounds the candidates an AmbiguousError lists.
const maxCandidates = 10

// splitFrameSelector splits "iframe#a >> iframe#b >> input" into its parts.
func splitFrameSelector(sel string) []string {
	parts := strings.Split(sel, ">>")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// pick applies an index to n matches: it returns the chosen position, or an
// error when the index is out of range or missing while n > 1. The caller
// fills the candidates of an AmbiguousError.
func pick(t Target, n int) (int, error) {
	switch {
	case n == 0:
		return 0, &NotFoundError{Target: t, Reason: "no node matches"}
	case t.Index != nil && *t.Index >= n:
		return 0, &NotFoundError{Target: t, Reason: fmt.Sprintf("index %d is out of range, %d nodes match", *t.Index, n)}
	case t.Index != nil:
		return *t.Index, nil
	case n > 1:
		return 0, &AmbiguousError{Target: t, Matches: n}
	}
	return 0, nil
}
