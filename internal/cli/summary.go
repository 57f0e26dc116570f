package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/event"
)

// summarize renders one event's payload as a short human line for the
// demo. ok is false for events not worth a line (streamed text deltas,
// which the final answer repeats). Unknown events get their compact JSON,
// clipped, so nothing new is hidden.
func summarize(name string, payload json.RawMessage) (line string, ok bool) {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(payload, &p) // a nil map reads as empty below
	str := func(k string) string {
		var s string
		if json.Unmarshal(p[k], &s) == nil {
			return s
		}
		return ""
	}
	num := func(m map[string]json.RawMessage, k string) (float64, bool) {
		var f float64
		if json.Unmarshal(m[k], &f) == nil {
			return f, true
		}
		return 0, false
	}
	switch name {
	case event.TextDelta, event.ReasonDelta:
		return "", false
	case event.RunQueued:
		return "accepted; the queue row is durable", true
	case event.RunStarted:
		return "picked up by a worker", true
	case event.RunResumed:
		if n, ok := num(p, event.KeyAttempt); ok {
			return fmt.Sprintf("resumed after a restart (attempt %d)", int(n)), true
		}
		return "resumed after a restart", true
	case event.ModelCall:
		var parts []string
		if s, ok := num(p, "step"); ok {
			parts = append(parts, fmt.Sprintf("step %d", int(s)))
		}
		if m := str("model"); m != "" {
			parts = append(parts, m)
		}
		var u map[string]json.RawMessage
		if json.Unmarshal(p["usage"], &u) == nil {
			in, _ := num(u, "input_tokens")
			out, _ := num(u, "output_tokens")
			parts = append(parts, fmt.Sprintf("%d in / %d out tokens", int64(in), int64(out)))
		}
		if n, ok := num(p, "tool_calls"); ok && n > 0 {
			parts = append(parts, plural(int(n), "tool call"))
		}
		if ms, ok := num(p, "latency_ms"); ok {
			parts = append(parts, fmt.Sprintf("%d ms", int64(ms)))
		}
		if len(parts) > 0 {
			return strings.Join(parts, " · "), true
		}
	case event.TurnStarted:
		if t, ok := num(p, event.KeyTurn); ok {
			line := fmt.Sprintf("turn %d", int(t))
			if m := str("model"); m != "" {
				line += " · " + m
			}
			if n, ok := num(p, "tools"); ok {
				line += " · " + plural(int(n), "tool") + " offered"
			}
			return line, true
		}
	case event.Checkpoint:
		if st, ok := num(p, event.KeySteps); ok {
			line := fmt.Sprintf("saved durably: %s", plural(int(st), "step"))
			var u map[string]json.RawMessage
			if json.Unmarshal(p["usage"], &u) == nil {
				in, _ := num(u, "input_tokens")
				out, _ := num(u, "output_tokens")
				cost, _ := num(u, event.KeyCostUSD)
				line += fmt.Sprintf(", %d tokens and $%.4f so far", int64(in+out), cost)
			}
			return line, true
		}
	case event.Recall:
		if m := str("mode"); m != "" {
			n, _ := num(p, "hits")
			if q := str("query"); q != "" {
				return fmt.Sprintf("%s %q: %s", m, clip.Runes(q, 60), plural(int(n), "hit")), true
			}
			return fmt.Sprintf("%s: %s", m, plural(int(n), "item")), true
		}
	case event.Remember:
		switch str("outcome") {
		case "written":
			b, _ := num(p, "bytes")
			return fmt.Sprintf("DELTA.md rewritten: %d bytes, version %s", int(b), str("version")), true
		case "unchanged":
			return "DELTA.md already had this content", true
		case "refused":
			line := "DELTA.md write refused: " + strings.ReplaceAll(str("reason"), "_", " ")
			if over, _ := num(p, "over"); over > 0 {
				line += fmt.Sprintf(" (%d bytes over)", int(over))
			}
			return line, true
		}
	case event.SelfRestore:
		if r, ok := num(p, "restored"); ok {
			return fmt.Sprintf("DELTA.md restored from revision %d", int(r)), true
		}
	case event.SkillsIndexed:
		if n, ok := num(p, "skills"); ok {
			r, _ := num(p, "refused")
			return fmt.Sprintf("local skills re-read: %s, %d refused", plural(int(n), "skill"), int(r)), true
		}
	case event.ToolCall:
		if n := str("name"); n != "" {
			if path := writtenPathArg(p["arguments"]); path != "" {
				return n + " " + path, true
			}
			return n + " " + clip.Runes(compactJSON(string(p["arguments"])), 70), true
		}
	case event.ToolResult:
		if n := str("name"); n != "" {
			var isErr bool
			_ = json.Unmarshal(p["is_error"], &isErr)
			state := "ok"
			if isErr {
				state = "error"
			}
			line := n + " " + state
			pv := strings.Join(strings.Fields(str("preview")), " ")
			// The model reads an MCP result behind its untrusted-data
			// frame; the person watching is shown the result itself.
			if rest, ok := strings.CutPrefix(pv, "MCP result from server "); ok {
				if _, after, found := strings.Cut(rest, " (untrusted data): "); found {
					pv = after
				}
			}
			if pv != "" {
				line += ": " + clip.Runes(pv, 70)
			}
			return line, true
		}
	case event.RunFinished:
		if s := str(event.KeyStatus); s != "" {
			if e := str(event.KeyError); e != "" {
				return s + ": " + clip.Runes(e, 100), true
			}
			return s, true
		}
	}
	if len(payload) == 0 || string(payload) == "null" {
		return "", true
	}
	return clip.Runes(compactJSON(string(payload)), 100), true
}

// writtenPathArg is the "path" of a tool's JSON arguments, if any.
func writtenPathArg(raw json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) == nil {
		return a.Path
	}
	return ""
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
