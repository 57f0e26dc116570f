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
// The form functions run on any engine through [Page], the browser
// operations they need (page functions on elements, native clicks and
// typing, files, a navigation and network watch): [On] binds them to one
// page as a [Tab]. [Chromium] is the Page of a chromedp page context, and
// the package functions ([Snapshot], [Control], [Fill], [CompleteForm],
// [SubmitAndVerify]) run on it, taking a chromedp page context
// (chromedp.FromContext(ctx).Target set); package firefox's FormPage is the
// Page of a Firefox tab over WebDriver BiDi. No function opens a tab; the
// caller applies timeouts and dialog guards. Targets resolve through
// package snapshot on Chromium and through its in-page walker on Firefox.
package form
