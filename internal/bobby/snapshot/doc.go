// Package snapshot gives agents a compact, bounded view of a page and a way
// to point back into it.
//
// [Take] reads Chromium's accessibility tree (Accessibility.getFullAXTree)
// for the main frame and every iframe the page's process holds, grafts each
// iframe's document under its iframe node, and renders the nodes an agent
// acts on or reads: landmarks, headings, links, buttons, form controls with
// their state, and static text collapsed into lines. Open shadow roots come
// in through the accessibility tree itself. A snapshot is bounded by node
// count and bytes and says so (Truncated, TotalNodes, ShownNodes, Repair);
// a [Target] scopes it to one subtree.
//
// Refs ("e123") derive from the backend DOM node id, which Chromium keeps for
// as long as the node lives, so a ref survives new snapshots and unrelated
// mutations. [Resolve] turns a ref, a role + accessible name, or a CSS
// selector into a [NodeRef]; a target that no longer resolves gives
// [ErrTargetNotFound] naming the repair ("take a new a11y_snapshot"), and
// several matches without an index give [ErrAmbiguous] with the candidates.
//
// [Retained] keeps the last snapshot per page and [Ask] answers "where is the
// control described as X" from it, or answers nothing when the description
// is ambiguous, partial or below [ConfidenceFloor].
//
// On engines without an accessibility-tree command (Firefox over WebDriver
// BiDi), [WalkFunction] is an in-page walker that computes roles (explicit
// role, else the implicit HTML mapping) and accessible names (labelledby,
// aria-label, labels, alt, title, placeholder, content) in Chromium's role
// vocabulary, descending into same-origin iframes and open shadow roots and
// skipping hidden nodes; [ParseWalk] builds the same node tree from its
// answer, so [Walk.Snapshot] renders with the same rules. Its refs are
// numbers the page keeps per element (a WeakMap in an isolated realm), so a
// ref lives as long as its element, and a new document continues the
// numbering instead of reusing old refs.
//
// The functions take a chromedp page context (chromedp.FromContext(ctx).Target
// set) as their first argument and never open a tab; the caller applies
// timeouts and dialog guards. This package does not import internal/bobby/browser.
package snapshot
