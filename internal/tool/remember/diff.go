package remember

import (
	"fmt"
	"strings"
)

// diffMaxCells bounds the line-by-line comparison (lines of one × lines of
// the other); past it Diff says the files differ without listing how. A
// self-file within its cap is a few hundred lines at most.
const diffMaxCells = 4 << 20

// Diff is a unified diff (three lines of context) from old to new, labelled
// with their names; "" when they are equal.
func Diff(oldName, old, newName, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	if len(a)*len(b) > diffMaxCells {
		return fmt.Sprintf("--- %s\n+++ %s\n(the files differ; at %d and %d lines they are too long to compare line by line)\n", oldName, newName, len(a), len(b))
	}
	ops := lineOps(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is within 2×context of the next.
		start := max(0, i-context)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(len(ops), end+context+1)
		oldStart, newStart, oldN, newN := ops[start].a, ops[start].b, 0, 0
		for _, op := range ops[start:stop] {
			if op.kind != '+' {
				oldN++
			}
			if op.kind != '-' {
				newN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(oldStart, oldN), span(newStart, newN))
		for _, op := range ops[start:stop] {
			out.WriteByte(op.kind)
			out.WriteString(op.text)
			out.WriteByte('\n')
		}
		i = stop
	}
	return out.String()
}

// span is a hunk range: 1-based start and count, the start one before the
// hunk when it is empty, as diff -u writes it.
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

type lineOp struct {
	kind byte // ' ', '-' or '+'
	text string
	a, b int // index of the line in old and new where this op stands
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineOps is the edit script of a longest common subsequence of lines.
func lineOps(a, b []string) []lineOp {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			ops = append(ops, lineOp{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
