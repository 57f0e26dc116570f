package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/model"
)

// The two ledgers every summary carries. They are built from the replaced
// messages by code, not by the summarizer, so they cannot be lost in a
// summary: the spill paths of the large results the compaction covered
// (each one read_file away), and the calls it summarized — built-in calls
// with their arguments, deduplicated and newest first, and MCP tools by
// name and count — because the costliest failure after a cut is the agent
// running again what it already ran.

// Bounds of the ledgers: at their fullest they fit ledgerBytes, the room
// the window reserves for them beside the note at a large dial; under a
// smaller one the byte shares shrink in proportion to the room left
// (ledgerRoom), while the headings and the closing lines (ledgerFrame)
// stay whole.
// Each section has a count and a byte share; a spill path is listed whole
// (a cut path cannot be read back), so its section stops early instead.
const (
	ledgerSpills     = 30  // spill paths listed
	ledgerCalls      = 30  // distinct built-in calls listed
	ledgerMCP        = 20  // MCP tools listed
	ledgerArgBytes   = 120 // a call's arguments as listed
	ledgerNameMax    = 64  // a tool name as listed
	ledgerSpillShare = 2400
	ledgerCallShare  = 4200
	ledgerMCPShare   = 1100
	ledgerBytes      = 8192 // the shares, the headings, the "… more" lines and the recall line
	ledgerFrame      = ledgerBytes - ledgerSpillShare - ledgerCallShare - ledgerMCPShare
)

// recallLine closes every summary.
const recallLine = "To read an earlier turn or result back in full, call recall with words from it " +
	"instead of repeating a call listed above."

// reSpill finds the path of a spilled result in its inline text.
var reSpill = regexp.MustCompile(`\.delta/spill/[^\s)\]]+\.txt`)

// ledgers is the ledger text of msgs and how many entries each holds.
type ledgers struct {
	text                string
	spills, calls, mcps int
}

// Headings of the ledger sections, which the next compaction reads back
// to carry the entries forward.
const (
	spillHeading = "\n\nLarge results this summary covers, saved whole (read_file reads them):"
	callsHeading = "\n\nCalls already made in the turns this summary covers (newest first):"
)

// buildLedgers builds the ledgers of msgs, carrying forward the entries of
// the previous summary's ledgers (prior) after the new ones: a summary
// covers every turn before its tail, not only the ones it replaced. They
// fit room bytes (ledgerBytes at most).
func buildLedgers(msgs []model.Message, prior string, room int) ledgers {
	share := func(full int) int {
		return full * max(min(room, ledgerBytes)-ledgerFrame, 0) / (ledgerBytes - ledgerFrame)
	}
	var l ledgers
	var spills []string
	seenSpill := map[string]bool{}
	var calls []string
	seenCall := map[string]bool{}
	mcp := map[string]int{}
	for i := len(msgs) - 1; i >= 0; i-- { // newest first
		m := msgs[i]
		if m.Role == model.RoleTool {
			for _, p := range reSpill.FindAllString(m.Content, -1) {
				if !seenSpill[p] {
					seenSpill[p] = true
					spills = append(spills, p)
				}
			}
			continue
		}
		for j := len(m.ToolCalls) - 1; j >= 0; j-- {
			c := m.ToolCalls[j]
			if isMCP(c.Name) {
				mcp[c.Name]++
				continue
			}
			line := clip.Bytes(c.Name, ledgerNameMax) + " " + compactArgs(c.Arguments)
			if !seenCall[line] {
				seenCall[line] = true
				calls = append(calls, line)
			}
		}
	}
	pSpills, pCalls, pMCP := priorLedgers(prior)
	for _, p := range pSpills {
		if !seenSpill[p] {
			seenSpill[p] = true
			spills = append(spills, p)
		}
	}
	for _, c := range pCalls {
		if !seenCall[c] {
			seenCall[c] = true
			calls = append(calls, c)
		}
	}
	for n, k := range pMCP {
		mcp[n] += k
	}
	var b strings.Builder
	// section writes entries up to n of them and share bytes, then says
	// how many it left out.
	section := func(entries []string, n, share int, more string) int {
		used, written := 0, 0
		for i, e := range entries {
			line := "\n- " + e
			if i == n || used+len(line) > share {
				fmt.Fprintf(&b, "\n- … and %d more %s", len(entries)-i, more)
				break
			}
			b.WriteString(line)
			used += len(line)
			written++
		}
		return written
	}
	if len(spills) > 0 {
		b.WriteString(spillHeading)
		l.spills = section(spills, ledgerSpills, share(ledgerSpillShare), "under .delta/spill")
	}
	if len(calls) > 0 || len(mcp) > 0 {
		b.WriteString(callsHeading)
		l.calls = section(calls, ledgerCalls, share(ledgerCallShare), "distinct calls")
		names := make([]string, 0, len(mcp))
		for n := range mcp {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if mcp[names[i]] != mcp[names[j]] {
				return mcp[names[i]] > mcp[names[j]]
			}
			return names[i] < names[j]
		})
		lines := make([]string, len(names))
		for i, n := range names {
			lines[i] = fmt.Sprintf("%s ×%d", clip.Bytes(n, ledgerNameMax), mcp[n])
		}
		l.mcps = section(lines, ledgerMCP, share(ledgerMCPShare), "MCP tools")
	}
	b.WriteString("\n\n" + recallLine)
	l.text = b.String()
	return l
}

// priorLedgers reads the entries of a previous summary's ledgers back
// (the "… and N more" lines are not entries and are dropped).
func priorLedgers(summary string) (spills, calls []string, mcp map[string]int) {
	mcp = map[string]int{}
	section := func(heading string) []string {
		_, rest, ok := strings.Cut(summary, heading)
		if !ok {
			return nil
		}
		if i := strings.Index(rest, "\n\n"); i >= 0 {
			rest = rest[:i]
		}
		var out []string
		for _, line := range strings.Split(rest, "\n") {
			if e, ok := strings.CutPrefix(line, "- "); ok && !strings.HasPrefix(e, "… and ") {
				out = append(out, e)
			}
		}
		return out
	}
	spills = section(spillHeading)
	for _, e := range section(callsHeading) {
		if name, n, ok := strings.Cut(e, " ×"); ok && isMCP(name) && !strings.Contains(name, " ") {
			k, err := strconv.Atoi(n)
			if err == nil {
				mcp[name] += k
				continue
			}
		}
		calls = append(calls, e)
	}
	return spills, calls, mcp
}

// isMCP tells an MCP tool (named <server>__<tool>) from a built-in.
func isMCP(name string) bool { return strings.Contains(name, "__") }

// compactArgs is a call's arguments on one line, at most ledgerArgBytes.
func compactArgs(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := strings.Join(strings.Fields(buf.String()), " ")
	return clip.Bytes(s, ledgerArgBytes)
}
