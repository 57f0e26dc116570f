package gateway

import (
	"fmt"
	"strings"
)

// engineRefusal is the unsupportedOnEngine error of a tool that does not
// run on the gateway's engine, nil when it does.
func (g *Gateway) engineRefusal(t *toolDef) *toolError {
	if t == nil || t.runsOn(g.eng.name()) {
		return nil
	}
	msg := fmt.Sprintf("%s runs on %s, not on %s (this runtime's [browser] engine)", t.name, strings.Join(t.enginesOf(), ", "), g.eng.name())
	if t.engineGap != "" {
		msg += ": " + t.engineGap
	}
	return errorf(CodeUnsupportedOnEngine, "%s; use a tool tools/list advertises or set [browser] engine = \"chromium\"", msg)
}

// advertisedOn reports whether tools/list shows the tool on the gateway's
// engine.
func (g *Gateway) advertisedOn(name string) bool {
	t, ok := toolIndex[name]
	return ok && t.runsOn(g.eng.name())
}
