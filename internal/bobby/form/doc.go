// Package form reads and fills the forms of a page the way a user would.
//
// [Snapshot] lists every form control (text-like inputs, textarea, selects,
// checkboxes, radio groups, files, dates, contenteditable), including those
// in same-origin iframes, open shadow roots and hidden ones, with a semantic
// target, label, state and validity. Values are reported except for
// passwords (HasValue only) and files (count and base names only).
//
// [Control] performs one action (setText, setChecked, selectOne,
// selectMany, setFiles, clear, activate) through the browser's input
// pipeline — focus, typed text, native clicks — so page frameworks see the
// events a person causes, and returns typed re-read [Evidence]. [Fill] maps
// field descriptions to controls and fills them; [CompleteForm] also reports
// the controls the fill revealed; [SubmitAndVerify] submits with a native
// click and tells a completed submission from one the browser's own
// validation blocked, with value-free issues.
//
// Functions take a chromedp page context (chromedp.FromContext(ctx).Target
// set) and never open a tab; the caller applies timeouts and dialog guards.
// Targets resolve through package snapshot.
package form
