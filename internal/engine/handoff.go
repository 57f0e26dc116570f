package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Handoff bounds.
const (
	handoffMaxBytes = 10 << 10
	handoffMaxPaths = 20
)

// artifactFamilies are the folders whose files a run names after itself
// (<runID>.<callID>.<ext>), each listed under its own heading and bounded
// at handoffMaxPaths on its own.
var artifactFamilies = []struct{ dir, heading string }{
	{".delta/spill", "Full tool results saved during this run (read them with read_file):"},
	{".delta/research", "Research findings written during this run (read them with read_file):"},
}

// handoff is the output of a run stopped by its budget: what it has so far,
// where its artifacts are, and how to continue — never a bare counter line.
// Artifacts are enumerated from disk under the run's own id, so nothing
// stale or another run's can enter; an ephemeral (store: false) run gets no
// paths, because its artifacts do not outlive it.
func (x *execution) handoff() string {
	var b strings.Builder
	b.WriteString("The run stopped because it reached its budget before finishing. Here is what it has so far.\n")
	if t := strings.TrimSpace(x.lastText); t != "" {
		b.WriteString("\nLatest progress from the agent:\n")
		b.WriteString(t)
		b.WriteString("\n")
	}
	if note := x.selfWriteNote(); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if x.req.Store && x.e.o.WorkspaceDir != "" {
		for _, f := range artifactFamilies {
			writeArtifacts(&b, x.e.o.WorkspaceDir, f.dir, f.heading, x.run.ID)
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

// writeArtifacts lists root/dir/<runID>.* under heading, at most
// handoffMaxPaths of them, naming the truncation.
func writeArtifacts(b *strings.Builder, root, dir, heading, runID string) {
	matches, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), globEscape(runID)+".*"))
	if len(matches) == 0 {
		return
	}
	sort.Strings(matches)
	b.WriteString("\n" + heading + "\n")
	for i, m := range matches {
		if i == handoffMaxPaths {
			fmt.Fprintf(b, "- … and %d more (list truncated at %d paths)\n", len(matches)-handoffMaxPaths, handoffMaxPaths)
			break
		}
		rel, err := filepath.Rel(root, m)
		if err != nil {
			rel = m
		}
		fmt.Fprintf(b, "- %s\n", filepath.ToSlash(rel))
	}
}

// globEscape quotes the pattern characters of s so a run id only ever
// matches itself.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Self-file writes as the journal records them: the remember tool's name
// and the opening of its answer to a content-changing write.
const (
	selfWriteTool   = "remember"
	selfWriteAnswer = "DELTA.md rewritten"
)

// selfWriteNote says that this run already committed a DELTA.md write,
// which outlives the failed run (ephemeral or not), so a retry does not
// write the lesson twice; "" when it did not.
func (x *execution) selfWriteNote() string {
	journal, err := x.e.o.Store.Journal(context.WithoutCancel(context.Background()), x.run.ID)
	if err != nil {
		return ""
	}
	writes := 0
	for _, j := range journal {
		if j.Name == selfWriteTool && j.Done && !j.IsError && strings.HasPrefix(j.Result, selfWriteAnswer) {
			writes++
		}
	}
	if writes == 0 {
		return ""
	}
	return fmt.Sprintf("This run already rewrote DELTA.md (%d committed write(s)), and the file keeps it: do not write the same lesson again; "+
		"a later change starts from the current file.", writes)
}
