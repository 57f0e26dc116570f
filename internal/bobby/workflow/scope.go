package workflow

import (
	"errors"
	"slices"
)

// HandleTools is the V1 allowlist: the tools where a workflowHandle may
// replace the explicit sessionId/pageId/workflowId scope fields. Each of
// them still accepts the explicit form.
var HandleTools = []string{
	"a11y_snapshot", "click", "click_and_wait_for_popup", "context_ask", "context_neighbors",
	"control_action", "cookie_delete", "cookie_get", "cookie_set", "dialog", "download_url",
	"emulate", "evaluate_javascript", "extract_structured", "form_snapshot", "inspect",
	"intent_complete_form", "intent_dismiss_obstruction", "intent_extract", "intent_fill",
	"intent_follow", "intent_locate", "intent_submit_and_verify", "intent_wait_for_state",
	"navigate", "network_log", "page_activate", "page_close", "pdf", "screenshot", "type_text",
	"upload_files", "wait_for",
}

// AcceptsHandle reports whether tool is on the handle allowlist.
func AcceptsHandle(tool string) bool { return slices.Contains(HandleTools, tool) }

// ErrBindingConflict: a handle was given together with explicit scope fields.
var ErrBindingConflict = errors.New("workflowHandle given together with explicit scope fields")

// Scope is where a command runs.
type Scope struct {
	SessionID  string
	PageID     string
	WorkflowID string // empty: the server mints one
	Handle     string // the handle it came from, if any
}

// ScopeArgs are the scope fields of one tool call as received.
type ScopeArgs struct {
	Handle     string
	SessionID  string
	PageID     string
	WorkflowID string
}

// BindScope resolves the scope of a call. With a handle, no explicit scope
// field may be present (ErrBindingConflict) and the handle must resolve
// (ErrUnknownHandle). Without one, the explicit fields are returned as they
// are; checking that the needed ones are present is the caller's job.
func (r *Registry) BindScope(a ScopeArgs) (Scope, error) {
	if a.Handle == "" {
		return Scope{SessionID: a.SessionID, PageID: a.PageID, WorkflowID: a.WorkflowID}, nil
	}
	if a.SessionID != "" || a.PageID != "" || a.WorkflowID != "" {
		return Scope{}, ErrBindingConflict
	}
	b, err := r.Resolve(a.Handle)
	if err != nil {
		return Scope{}, err
	}
	return Scope{SessionID: b.SessionID, PageID: b.PageID, WorkflowID: b.WorkflowID, Handle: b.Handle}, nil
}
