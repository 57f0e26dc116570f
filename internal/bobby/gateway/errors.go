package gateway

import (
	"fmt"
	"sort"
)

// Failure codes. Each is both error.code in a CommandOutcome and the
// reason of a rejected call; bobby://failure-taxonomy documents them all.
const (
	CodeSchemaViolation           = "schemaViolation"
	CodeInvalidRequest            = "invalidRequest"
	CodeInputTooLarge             = "inputTooLarge"
	CodeFrameTooLarge             = "frameTooLarge"
	CodeNotInitialized            = "notInitialized"
	CodeCapabilityDenied          = "capabilityDenied"
	CodePolicyDenied              = "executionPolicyDenied"
	CodeNetworkPolicyDenied       = "networkPolicyDenied"
	CodeNotFound                  = "notFound"
	CodeUnknownWorkflowHandle     = "unknownWorkflowHandle"
	CodeWorkflowBindingConflict   = "workflowBindingConflict"
	CodePageOpenFailed            = "pageOpenFailed"
	CodeNavigationFailed          = "navigationFailed"
	CodeWorkflowGenerationChanged = "workflowGenerationChanged"
	CodeWorkflowSupervisorLost    = "workflowSupervisorLost"
	CodeTargetNotFound            = "targetNotFound"
	CodeTargetAmbiguous           = "targetAmbiguous"
	CodeNotInteractable           = "notInteractable"
	CodeDialogOpen                = "dialogOpen"
	CodeNoDialog                  = "noDialog"
	CodeTimeout                   = "timeout"
	CodeJavaScriptError           = "javascriptError"
	CodeBrowserCrashed            = "browserCrashed"
	CodePageClosed                = "pageClosed"
	CodeFormValidation            = "formValidationFailed"
	CodeNotVerified               = "notVerified"
	CodeIdempotencyKeyReused      = "idempotencyKeyReused"
	CodeNeedsReconciliation       = "needsReconciliation"
	CodeVisionAssistFailed        = "visionAssistFailed"
	CodeCapacityExceeded          = "capacityExceeded"
	CodeUnsupported               = "unsupported"
	CodeUnsupportedOnEngine       = "unsupportedOnEngine"
	CodeInternal                  = "internal"
)

// Outcome statuses.
const (
	StatusCompleted           = "completed"
	StatusFailed              = "failed"
	StatusRejected            = "rejected" // refused before anything ran
	StatusTimedOut            = "timedOut"
	StatusNeedsReconciliation = "needsReconciliation"
)

// TaxonomyURI is the resource every repair hint points into.
const TaxonomyURI = "bobby://failure-taxonomy"

// failureInfo is one row of the failure taxonomy.
type failureInfo struct {
	Meaning string `json:"meaning"`
	Action  string `json:"action"`
	Repair  string `json:"repair"`
	Retry   string `json:"retry"` // "never", "after-repair", "safe"
}

var taxonomy = map[string]failureInfo{
	CodeSchemaViolation:           {"The arguments do not match the tool's published input schema; pointer and constraint name the schema location and keyword (never your value).", "fixArguments", "Read the tool's inputSchema at pointer, fix the argument, call again.", "after-repair"},
	CodeInvalidRequest:            {"The arguments match the schema but cannot be used (unparsable URL, bad regex, unknown profile, conflicting fields).", "fixArguments", "Correct the named field; the message names the rule.", "after-repair"},
	CodeInputTooLarge:             {"Tool arguments exceed 256 KiB.", "shrinkInput", "Send less: split the work into several calls.", "after-repair"},
	CodeFrameTooLarge:             {"A stdio JSON-RPC frame exceeded 1 MiB and was discarded unread.", "shrinkInput", "Send smaller messages.", "after-repair"},
	CodeNotInitialized:            {"A request arrived before initialize: over stdio before the initialize request, over HTTP without an Mcp-Session-Id.", "initialize", "Send initialize and notifications/initialized, then the request again.", "after-repair"},
	CodeCapabilityDenied:          {"The calling principal lacks the capability this tool (or this argument) requires. Advertisement is never authority: hidden tools are re-checked too.", "useAuthorizedPrincipal", "Ask the operator for the capability or use another principal; retrying as is never helps.", "never"},
	CodePolicyDenied:              {"The session's executionPolicy forbids this (e.g. evaluate_javascript without javascriptEvaluation).", "createSessionWithPolicy", "Create a session whose executionPolicy allows it.", "never"},
	CodeNetworkPolicyDenied:       {"The URL's scheme or destination is refused by the network policy.", "chooseAllowedUrl", "Use an http(s) URL the policy allows.", "never"},
	CodeNotFound:                  {"The session or page does not exist, was closed, or belongs to another principal (indistinguishable on purpose).", "listSessions", "Call session_list / page_list and use a live ID.", "after-repair"},
	CodeUnknownWorkflowHandle:     {"The workflowHandle is malformed, expired (new generation), unknown or evicted from the 64-entry LRU.", "startWorkflowOrUseIds", "Call workflow_start again, or pass explicit sessionId/pageId.", "after-repair"},
	CodeWorkflowBindingConflict:   {"A workflowHandle was combined with explicit sessionId/pageId/workflowId.", "removeExplicitScope", "Pass either the handle or the explicit IDs, not both.", "after-repair"},
	CodePageOpenFailed:            {"workflow_start could not open the page; see pageClosed, sessionDeleted, cleanupErrorCode.", "reconcileWithSessionList", "Call session_list, close or resume the session it may have left, then start again.", "after-repair"},
	CodeNavigationFailed:          {"The navigation did not load (network error, HTTP error status, timeout, download, policy).", "checkUrlThenRetry", "Check navigationOutcome.error; retry only once the cause is fixed. In workflow_start inspect the cleanup fields first.", "after-repair"},
	CodeWorkflowGenerationChanged: {"A new initialize started a new generation while workflow_start was in flight; its handle was not published.", "reconcileWithSessionList", "Call session_list, close the orphaned session, start again.", "after-repair"},
	CodeWorkflowSupervisorLost:    {"The runtime lost the browser or shut down during workflow_start.", "reconcileWithSessionList", "Call session_list and runtime_info; start again once the browser is healthy.", "after-repair"},
	CodeTargetNotFound:            {"The target (ref, role+name, or selector) no longer resolves to a node: the page changed since the snapshot.", "takeSnapshot", "Take a new a11y_snapshot or form_snapshot and use a target from it.", "after-repair"},
	CodeTargetAmbiguous:           {"The semantic target matches several nodes.", "refineTarget", "Add index, or use the ref from a snapshot.", "after-repair"},
	CodeNotInteractable:           {"The node has no clickable box or is covered by another element.", "dismissObstruction", "Scroll, close the overlay, or wait_for it to become visible.", "after-repair"},
	CodeDialogOpen:                {"A JavaScript dialog blocks the page; nothing ran.", "handleDialog", "Call dialog with accept true/false (and promptText for prompts).", "after-repair"},
	CodeNoDialog:                  {"dialog was called but no dialog is open.", "inspectPage", "Nothing to answer; continue.", "never"},
	CodeTimeout:                   {"The command did not finish before its deadline.", "waitThenObserve", "Observe the page (workflow_observe, inspect) before retrying a mutation.", "after-repair"},
	CodeJavaScriptError:           {"The evaluated script threw.", "fixScript", "Fix the expression.", "after-repair"},
	CodeBrowserCrashed:            {"Chromium died; the session's pages are gone.", "createNewSession", "Create a new session (the next session relaunches the browser).", "after-repair"},
	CodePageClosed:                {"The page closed (by itself, by page_close or with its session).", "openPage", "Use page_list, or page_open a new page.", "after-repair"},
	CodeFormValidation:            {"The browser's client-side validation blocked the submit; formValidation lists the invalid controls (value-free).", "fixFieldsAndResubmit", "Fill the listed controls (intent_fill / control_action) and submit again.", "after-repair"},
	CodeNotVerified:               {"The action ran but its expected effect was not observed.", "observePage", "Call workflow_observe or inspect to see what happened before acting again.", "after-repair"},
	CodeIdempotencyKeyReused:      {"The idempotencyKey was first used for a different request in this session.", "useNewKey", "Use a fresh idempotencyKey for a different request.", "never"},
	CodeNeedsReconciliation:       {"The command may or may not have taken effect (the connection or browser was lost mid-action).", "reconcileNeverRetry", "Never retry blindly: observe the page and session_list first, then decide.", "never"},
	CodeVisionAssistFailed:        {"Vision assistance was requested but no vision provider is configured; retrying never succeeds.", "disableVisionAssist", "Create the session without visionAssist.", "never"},
	CodeCapacityExceeded:          {"A bound was hit (64 concurrent workflow starts, sessions).", "retryLater", "Wait for in-flight starts to finish or close sessions.", "after-repair"},
	CodeUnsupported:               {"This runtime does not implement the requested kind, or not on this connection (toolset_select over 2026-07-28 HTTP, which has no MCP session).", "useOtherTool", "Use command_execute with a supported kind or another tool; for phases, connect with protocol 2025-11-25.", "never"},
	CodeUnsupportedOnEngine:       {"The tool (or this argument of it, such as a networkQuiet wait) does not run on the browser engine this runtime drives ([browser] engine); the message names the engines it runs on and why.", "useSupportedToolOrEngine", "Use a tool tools/list advertises (the message suggests one), or run bobby with [browser] engine = \"chromium\".", "never"},
	CodeInternal:                  {"An unexpected runtime fault.", "reportBug", "Observe the page before retrying; report the message.", "after-repair"},
}

// Repair is a machine-readable repair hint.
type Repair struct {
	Action string `json:"action"`
	Doc    string `json:"doc"`
}

// repairFor returns the hint of a code, pointing into the taxonomy.
func repairFor(code string) *Repair {
	info, ok := taxonomy[code]
	if !ok {
		info = taxonomy[CodeInternal]
		code = CodeInternal
	}
	return &Repair{Action: info.Action, Doc: TaxonomyURI + "#" + code}
}

// ErrorInfo is the error of a CommandOutcome.
type ErrorInfo struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Repair  *Repair `json:"repair"`
	// Pointer and Constraint are set for schemaViolation.
	Pointer    *string `json:"pointer,omitempty"`
	Constraint string  `json:"constraint,omitempty"`
}

// toolError is a failure that a handler returns to become an error result.
type toolError struct {
	Code       string
	Message    string
	Pointer    *string
	Constraint string
	Extra      map[string]any // merged into structuredContent
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *toolError {
	return &toolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func schemaErr(pointer, constraint, message string) *toolError {
	p := pointer
	return &toolError{Code: CodeSchemaViolation, Message: message, Pointer: &p, Constraint: constraint}
}

func (e *toolError) info() *ErrorInfo {
	return &ErrorInfo{Code: e.Code, Message: e.Message, Repair: repairFor(e.Code), Pointer: e.Pointer, Constraint: e.Constraint}
}

// taxonomyDoc renders the failure-taxonomy resource.
func taxonomyDoc() map[string]any {
	codes := make([]string, 0, len(taxonomy))
	for c := range taxonomy {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	rows := make([]map[string]any, 0, len(codes))
	for _, c := range codes {
		info := taxonomy[c]
		rows = append(rows, map[string]any{
			"code": c, "meaning": info.Meaning, "action": info.Action, "repair": info.Repair, "retry": info.Retry,
		})
	}
	return map[string]any{
		"uri":      TaxonomyURI,
		"statuses": []string{StatusCompleted, StatusFailed, StatusRejected, StatusTimedOut, StatusNeedsReconciliation},
		"notes": []string{
			"A result whose status is not completed has isError:true.",
			"Command-layer failures carry error.repair; JSON-RPC rejections (-32602) carry error.data.repair. doc is " + TaxonomyURI + "#<code>.",
			"schemaViolation pointer/constraint describe the schema, never the submitted value.",
			"needsReconciliation always carries the reconcileNeverRetry repair.",
		},
		"codes": rows,
	}
}
