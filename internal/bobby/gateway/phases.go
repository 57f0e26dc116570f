package gateway

// Phase narrows what tools/list advertises (each tool's phases are in the
// tool table). It never changes what a
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

var phaseDescriptions = map[Phase]string{
	PhaseExplore: "Startup phase: start a workflow, look at the page, and run the whole form loop.",
	PhaseAct:     "Low-level actions: click, type, control_action, dialogs, waits, JavaScript, command_execute.",
	PhaseIntent:  "Intent-level form work: locate, fill, complete, submit-and-verify.",
	PhaseVerify:  "Read-only checks: snapshots, inspect, extraction, screenshots, waits.",
}

// phasesDoc renders the bobby://phases resource.
func phasesDoc(start Phase) map[string]any {
	rows := []map[string]any{}
	for _, p := range Phases {
		rows = append(rows, map[string]any{
			"phase":       p,
			"description": phaseDescriptions[p],
			"tools":       phaseTools(p),
		})
	}
	return map[string]any{
		"uri":         "bobby://phases",
		"startPhase":  start,
		"alwaysTools": alwaysTools(),
		"phases":      rows,
		"rules": []string{
			"toolset_select {phase} switches the advertised set and sends notifications/tools/list_changed to this session only; selecting the current phase sends nothing.",
			"A phase changes what is advertised, never what is permitted: hidden tools stay callable, capabilities are the only gate.",
			"tools/list shows a tool only when the principal holds its capability.",
		},
	}
}
