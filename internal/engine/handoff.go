package engine

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Handoff bounds (D-USE-06).
const (
	handoffMaxBytes = 10 << 10
	handoffMaxPaths = 20
)

// handoff is the output of a run stopped by its budget: what it has so far,
// where its artifacts are, and how to continue — never a bare counter line.
func (x *execution) handoff() string {
	var b strings.Builder
	b.WriteString("The run stopped because it reached its budget before finishing. Here is what it has so far.\n")
	if t := strings.TrimSpace(x.lastText); t != "" {
		b.WriteString("\nLatest progress from the agent:\n")
		b.WriteString(t)
		b.WriteString("\n")
	}
	if x.req.Store && x.e.o.WorkspaceDir != "" {
		matches, _ := filepath.Glob(filepath.Join(x.e.o.WorkspaceDir, ".delta", "spill", x.run.ID+".*"))
		sort.Strings(matches)
		if len(matches) > 0 {
			b.WriteString("\nFull tool results saved during this run (read them with read_file):\n")
			for i, m := range matches {
				if i == handoffMaxPaths {
					fmt.Fprintf(&b, "- … and %d more (list truncated at %d paths)\n", len(matches)-handoffMaxPaths, handoffMaxPaths)
					break
				}
				rel, err := filepath.Rel(x.e.o.WorkspaceDir, m)
				if err != nil {
					rel = m
				}
				fmt.Fprintf(&b, "- %s\n", filepath.ToSlash(rel))
			}
		}
	}
	b.WriteString("\nTo continue, narrow the question or split it into smaller tasks rather than repeating it; continue this session with previous_response_id to keep the context.")
	out := b.String()
	if len(out) > handoffMaxBytes {
		cut := handoffMaxBytes - 64
		for cut > 0 && !isRuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "\n… (handoff truncated at 10 KiB)"
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
