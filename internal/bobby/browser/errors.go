package browser

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is; the gateway maps
// them to its failure taxonomy.
var (
	// ErrNotOpen is returned by calls on a Runtime that was never opened or
	// is already closed.
	ErrNotOpen = errors.New("browser runtime is not open")

	// ErrBrowserCrashed is returned by calls into sessions and pages whose
	// Chromium process died (crash, OOM kill, external kill). The next
	// NewSession launches a fresh browser; the dead session only answers
	// State and CloseSession.
	ErrBrowserCrashed = errors.New("browser process crashed")

	// ErrSessionClosed is returned by calls on a session after CloseSession.
	ErrSessionClosed = errors.New("session is closed")

	// ErrPageClosed is returned by calls on a page whose target is gone: the
	// page was closed by Close, by the page itself (window.close) or by the
	// browser.
	ErrPageClosed = errors.New("page is closed")

	// ErrPageCrashed is returned by calls on a page whose renderer crashed.
	ErrPageCrashed = errors.New("page renderer crashed")

	// ErrNotFound is returned when a session, a page or a node does not exist.
	ErrNotFound = errors.New("not found")

	// ErrDialogOpen is returned (wrapped in a *DialogError) by page work that
	// cannot run while a JavaScript dialog blocks the page. The repair is
	// Page.HandleDialog.
	ErrDialogOpen = errors.New("a javascript dialog is open")

	// ErrNodeNotFound is returned when a NodeRef resolves to nothing: the
	// selector matches no element, or the backend node is gone. The repair is
	// a fresh snapshot.
	ErrNodeNotFound = errors.New("target node not found, take a new snapshot")

	// ErrNotInteractable is returned by Click when the node has no box to
	// click (display:none, zero size) or another element covers its centre.
	ErrNotInteractable = errors.New("target node is not interactable")

	// ErrInvalidArgument marks bad input from the caller (empty NodeRef,
	// unknown modifier, bad matcher, bad URL).
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrPolicyDenied marks a URL refused by the NavigationPolicy or by
	// Options.AllowURL.
	ErrPolicyDenied = errors.New("denied by network policy")
)

// DialogError reports that a JavaScript dialog blocks the page. It matches
// ErrDialogOpen with errors.Is and carries the dialog so the caller can show
// it without a second call.
type DialogError struct {
	Dialog Dialog
}

// Error implements error.
func (e *DialogError) Error() string {
	return fmt.Sprintf("%s dialog open: %q", e.Dialog.Type, e.Dialog.Message)
}

// Is makes errors.Is(err, ErrDialogOpen) true.
func (e *DialogError) Is(target error) bool { return target == ErrDialogOpen }

// EvalError reports a JavaScript exception thrown by Evaluate.
type EvalError struct {
	// Text is the exception description as the console would print it.
	Text string
}

// Error implements error.
func (e *EvalError) Error() string { return "javascript exception: " + e.Text }

// invalidf returns an error wrapping ErrInvalidArgument.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// ErrTimeout is returned when an action gets no answer within its timeout.
var ErrTimeout = errors.New("timed out")
