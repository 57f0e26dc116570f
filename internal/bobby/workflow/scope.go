package workflow

import "errors"

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
