package gateway

import "slices"

// Phase narrows what tools/list advertises. It never changes what a
// principal may call: capability gates are the only authority.
type Phase string

// The phases.
const (
	PhaseExplore Phase = "explore"
	PhaseAct     Phase = "act"
	PhaseIntent  Phase = "intent"
	PhaseVerify  Phase = "verify"
)

// Phases lists the phases in order.
var Phases = []Phase{PhaseExplore, PhaseAct, PhaseIntent, PhaseVerify}

// alwaysTools appear in every phase.
var alwaysTools = []string{
	"session_create", "session_list", "session_close",
	"page_open", "page_close", "page_list", "page_activate",
	"runtime_info", "toolset_select", "workflow_start", "workflow_observe",
}

// phaseTools is the phase → tool table (on top of alwaysTools). The form
// loop (workflow_start, workflow_observe, intent_complete_form,
// intent_submit_and_verify) is complete in explore, the startup phase.
var phaseTools = map[Phase][]string{
	PhaseExplore: {"navigate", "a11y_snapshot", "form_snapshot", "context_ask",
		"intent_complete_form", "intent_submit_and_verify"},
	PhaseAct: {"navigate", "click", "type_text", "control_action", "wait_for", "dialog", "a11y_snapshot",
		"evaluate_javascript", "command_execute"},
	PhaseIntent: {"intent_locate", "intent_fill", "intent_complete_form", "intent_submit_and_verify",
		"form_snapshot", "control_action", "context_ask", "wait_for"},
	PhaseVerify: {"a11y_snapshot", "form_snapshot", "inspect", "extract_structured", "screenshot",
		"wait_for", "context_ask"},
}

var phaseDescriptions = map[Phase]string{
	PhaseExplore: "Startup phase: start a workflow, look at the page, and run the whole form loop.",
	PhaseAct:     "Low-level actions: click, type, control_action, dialogs, waits, JavaScript, command_execute.",
	PhaseIntent:  "Intent-level form work: locate, fill, complete, submit-and-verify.",
	PhaseVerify:  "Read-only checks: snapshots, inspect, extraction, screenshots, waits.",
}

// inPhase reports whether tool is advertised in phase.
func inPhase(tool string, phase Phase) bool {
	return slices.Contains(alwaysTools, tool) || slices.Contains(phaseTools[phase], tool)
}

// phasesDoc renders the bobby://phases resource.
func phasesDoc(start Phase) map[string]any {
	rows := []map[string]any{}
	for _, p := range Phases {
		rows = append(rows, map[string]any{
			"phase":       p,
			"description": phaseDescriptions[p],
			"tools":       phaseTools[p],
		})
	}
	return map[string]any{
		"uri":         "bobby://phases",
		"startPhase":  start,
		"alwaysTools": alwaysTools,
		"phases":      rows,
		"rules": []string{
			"toolset_select {phase} switches the advertised set and sends notifications/tools/list_changed to this session only; selecting the current phase sends nothing.",
			"A phase changes what is advertised, never what is permitted: hidden tools stay callable, capabilities are the only gate.",
			"tools/list shows a tool only when the principal holds its capability.",
		},
	}
}
