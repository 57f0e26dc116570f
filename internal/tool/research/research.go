// Package research is the research tool: it hands one to three questions to
// in-process, read-only child agents that run in parallel, writes their full
// answers to a findings file in the workspace, and gives the calling model
// only a short summary per question plus that file's path — so the primary
// conversation absorbs the signal, not the exploration.
//
// The children themselves live behind Explorer (the engine, adapted by the
// daemon): this package only validates, fans out, writes and summarises.
// The tool is not read-only: it spends the run's budget, so an interrupted
// call is never re-run on recovery.
package research

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// Name is the tool's name.
const Name = "research"

// Limits of one call.
const (
	MaxQuestions = 3
	// SummaryMax bounds the summary of one answer the model sees, in
	// characters; the whole answer is in the findings file.
	SummaryMax = 1500
	// questionMax bounds one question, in characters: a question, not a
	// document to paste.
	questionMax = 4000
)

// Dir is the workspace folder of the findings files. It sits under .delta/,
// which file tools cannot write (so a findings file cannot be forged) and
// read_file can read; the budget handoff lists Dir/<runID>.* for a run.
const Dir = ".delta/research"

// Finding is one child's answer.
type Finding struct {
	Text    string      // the full answer
	Summary string      // its closing summary ("" = use Text)
	Note    string      // why the child stopped before answering, if it did
	Steps   int         // model calls the child made
	Usage   model.Usage // what it spent (already charged to the run)
}

// Explorer answers one question with a read-only child of the run runID.
// An early stop is a Finding with a Note; an error may still come with
// what the child had.
type Explorer interface {
	Explore(ctx context.Context, runID, question string) (Finding, error)
}

// ExplorerFunc adapts a function to Explorer.
type ExplorerFunc func(ctx context.Context, runID, question string) (Finding, error)

// Explore calls f.
func (f ExplorerFunc) Explore(ctx context.Context, runID, question string) (Finding, error) {
	return f(ctx, runID, question)
}

// Options wires the tool.
type Options struct {
	Explorer Explorer
	// Write stores a findings file at a workspace-relative path
	// (workspace.Root.WriteFile).
	Write  func(rel string, data []byte) error
	Logger *slog.Logger
}

type params struct {
	Questions []string `json:"questions" jsonschema:"1 to 3 self-contained questions, one child each; say what to look at and what to report"`
}

const description = "Give a child a question to answer rather than a change to make. " +
	"Runs one read-only research child per question (1 to 3, in parallel). Each child explores in its own bounded context " +
	"with your read-only tools only — it cannot write, edit, move or delete files, run code or delegate — and answers " +
	"with a short summary. You get each summary plus the path of a findings file holding the full answers (read it with " +
	"read_file). Use it for exploration that would bloat your own context. The children spend this run's budget."

// New returns the research tool. It panics when Explorer or Write is nil:
// that is a wiring mistake, found at boot.
func New(o Options) tool.Tool {
	if o.Explorer == nil || o.Write == nil {
		panic("research.New: Explorer and Write are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// No tool timeout: each child is bounded by its own model-call limit
	// and every model call by the model timeout.
	return tool.NoTimeout(tool.Func(Name, description, false, func(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
		return o.run(ctx, c, p)
	}))
}

// answer is one question's outcome.
type answer struct {
	question string
	f        Finding
	err      error
}

func (o Options) run(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
	if problem := check(p.Questions); problem != "" {
		return tool.Errorf("%s", problem), nil
	}
	if c.RunID == "" {
		return tool.Errorf("research runs children on behalf of a run, and this call has none"), nil
	}
	answers := make([]answer, len(p.Questions))
	var wg sync.WaitGroup
	for i, q := range p.Questions {
		q = strings.TrimSpace(q)
		answers[i].question = q
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A child's panic is this question's failure, not the daemon's.
				if r := recover(); r != nil {
					o.Logger.Error("research child panicked", "run", c.RunID, "panic", r)
					answers[i].err = fmt.Errorf("the research child failed with an internal error")
				}
			}()
			answers[i].f, answers[i].err = o.Explorer.Explore(ctx, c.RunID, q)
		}()
	}
	wg.Wait()
	// The file is written even when ctx has ended: the children's spend
	// is already charged, and what they found stays readable on disk.
	rel := FileName(c.RunID, c.CallID)
	werr := o.Write(rel, []byte(findings(answers)))
	if werr != nil {
		o.Logger.Warn("write research findings", "run", c.RunID, "path", rel, "err", werr)
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	return result(answers, rel, werr), nil
}

// check validates the questions, or says what is wrong for the model.
func check(qs []string) string {
	switch {
	case len(qs) == 0:
		return "questions is empty: give 1 to 3 questions, one per child"
	case len(qs) > MaxQuestions:
		return fmt.Sprintf("at most %d questions per call, got %d: merge related ones or make another call", MaxQuestions, len(qs))
	}
	for i, q := range qs {
		if strings.TrimSpace(q) == "" {
			return fmt.Sprintf("question %d is empty: each question must say what to find out", i+1)
		}
		if n := utf8.RuneCountInString(q); n > questionMax {
			return fmt.Sprintf("question %d is %d characters, over the %d-character limit: ask a question, and let the child read the material itself", i+1, n, questionMax)
		}
	}
	return ""
}

// FileName is the findings file of one research call:
// Dir/<runID>.<callID>.md, each id made file-name safe.
func FileName(runID, callID string) string {
	return path.Join(Dir, workspace.FileID(runID, "run")+"."+workspace.FileID(callID, "call")+".md")
}

// findings renders the findings file: every question with its full answer.
func findings(answers []answer) string {
	var b strings.Builder
	b.WriteString("# Research findings\n")
	for i, a := range answers {
		fmt.Fprintf(&b, "\n## Question %d\n\n%s\n\n### Answer\n\n", i+1, a.question)
		if t := strings.TrimSpace(a.f.Text); t != "" {
			b.WriteString(t + "\n")
		} else {
			b.WriteString("(no answer)\n")
		}
		if a.f.Note != "" {
			fmt.Fprintf(&b, "\n> Note: %s\n", a.f.Note)
		}
		if a.err != nil {
			fmt.Fprintf(&b, "\n> Error: %v\n", a.err)
		}
		fmt.Fprintf(&b, "\n_%d model call(s), %d fresh tokens, $%.4f_\n", a.f.Steps, a.f.Usage.Fresh(), a.f.Usage.CostUSD)
	}
	return b.String()
}

// result is what the model sees: a short summary per question and the
// findings file's path. If the file could not be written the full answers
// come inline instead (the engine spills them if they are large), so the
// spend is not lost.
func result(answers []answer, rel string, werr error) tool.Result {
	var b strings.Builder
	failed := 0
	fmt.Fprintf(&b, "Research finished for %d question(s).", len(answers))
	if werr == nil {
		fmt.Fprintf(&b, " Full answers: %s (read it with read_file if you need more than these summaries).\n", rel)
	} else {
		fmt.Fprintf(&b, " The findings file could not be saved (%v), so the full answers follow.\n", werr)
	}
	for i, a := range answers {
		fmt.Fprintf(&b, "\n## %d. %s\n", i+1, clip(a.question, 300, ""))
		text := a.f.Summary
		if strings.TrimSpace(text) == "" {
			text = a.f.Text
		}
		if werr != nil {
			text = a.f.Text
		}
		switch t := strings.TrimSpace(text); {
		case t != "" && werr == nil:
			b.WriteString(clip(t, SummaryMax, " …[summary clipped; the full answer is in "+rel+"]") + "\n")
		case t != "":
			b.WriteString(t + "\n")
		default:
			b.WriteString("(no answer)\n")
		}
		if a.f.Note != "" {
			fmt.Fprintf(&b, "Note: %s\n", a.f.Note)
		}
		if a.err != nil {
			failed++
			fmt.Fprintf(&b, "Error: %v\n", a.err)
		}
	}
	return tool.Result{Text: b.String(), IsError: failed == len(answers)}
}

// clip keeps s within n characters, ending in tail when it cuts.
func clip(s string, n int, tail string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := max(n-utf8.RuneCountInString(tail), 0)
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:keep]), func(r rune) bool { return r == ' ' || r == '\n' }) + tail
}
