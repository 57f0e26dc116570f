package research_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/file"
	"github.com/deltaharness/delta/internal/tool/research"
	"github.com/deltaharness/delta/internal/workspace"
)

const runID = "resp_0123abcd"

// rig is the research tool over a real workspace.
type rig struct {
	ws    *workspace.Root
	tool  tool.Tool
	calls atomic.Int32
}

func newRig(t testing.TB, fn research.ExplorerFunc) *rig {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{ws: ws}
	counted := research.ExplorerFunc(func(ctx context.Context, runID, q string) (research.Finding, error) {
		r.calls.Add(1)
		return fn(ctx, runID, q)
	})
	r.tool = research.New(research.Options{Explorer: counted, Write: ws.WriteFile})
	return r
}

func (r *rig) run(t testing.TB, callID, args string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.tool.Run(ctx, tool.Call{RunID: runID, SessionID: "sess_1", CallID: callID, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// answer is an explorer that answers every question the same way.
func answer(text, summary string) research.ExplorerFunc {
	return func(_ context.Context, _ string, q string) (research.Finding, error) {
		return research.Finding{Text: text + " (" + q + ")", Summary: summary + " (" + q + ")", Steps: 2, Usage: model.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}
}

func TestToolShape(t *testing.T) {
	r := newRig(t, answer("a", "s"))
	spec := r.tool.Spec()
	if spec.Name != research.Name || !strings.Contains(spec.Description, "question to answer rather than a change to make") {
		t.Fatalf("spec = %+v", spec)
	}
	if r.tool.ReadOnly() {
		t.Fatal("research is read-only: an interrupted call would be re-run and spend the budget twice")
	}
}

func TestBadInput(t *testing.T) {
	long := strings.Repeat("q", 4001)
	for _, tt := range []struct{ name, args, want string }{
		{"no field", `{}`, `missing required field "questions"`},
		{"null", `{"questions":null}`, `"questions" is null`},
		{"zero questions", `{"questions":[]}`, "give 1 to 3 questions"},
		{"four questions", `{"questions":["a","b","c","d"]}`, "at most 3 questions per call, got 4"},
		{"empty string", `{"questions":[""]}`, "question 1 is empty"},
		{"blank string", `{"questions":["fine","  \n"]}`, "question 2 is empty"},
		{"a string, not an array", `{"questions":"what?"}`, "expected array of string"},
		{"numbers", `{"questions":[1,2]}`, "questions"},
		{"an object", `{"questions":{"q":"x"}}`, "expected array of string"},
		{"unknown field", `{"questions":["a"],"depth":2}`, `unknown field "depth"`},
		{"not JSON", `{"questions":[`, "not valid JSON"},
		{"too long", `{"questions":["` + long + `"]}`, "over the 4000-character limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, answer("a", "s"))
			res := r.run(t, "c1", tt.args)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result = %+v, want an error containing %q", res, tt.want)
			}
			if r.calls.Load() != 0 {
				t.Fatal("a child was started for bad input")
			}
			if m, _ := filepath.Glob(filepath.Join(r.ws.Dir(), ".delta", "research", "*")); len(m) != 0 {
				t.Fatalf("findings written for bad input: %v", m)
			}
		})
	}
}

func TestChildrenRunConcurrently(t *testing.T) {
	// A barrier: each child waits until all three have started. Run one
	// after another, the first would wait forever (until ctx gives up).
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var seen sync.Map
	r := newRig(t, func(ctx context.Context, gotRun, q string) (research.Finding, error) {
		seen.Store(q, gotRun)
		arrived.Done()
		select {
		case <-all:
			return research.Finding{Text: "answer to " + q, Summary: "short " + q}, nil
		case <-ctx.Done():
			return research.Finding{}, ctx.Err()
		}
	})
	res := r.run(t, "c1", `{"questions":["one","two","three"]}`)
	if res.IsError || strings.Contains(res.Text, "Error:") {
		t.Fatalf("result = %q", res.Text)
	}
	for _, q := range []string{"one", "two", "three"} {
		if got, _ := seen.Load(q); got != runID {
			t.Fatalf("question %q ran for run %v, want %s", q, got, runID)
		}
		if !strings.Contains(res.Text, "short "+q) {
			t.Fatalf("summary of %q missing from %q", q, res.Text)
		}
	}
}

func TestFindingsFile(t *testing.T) {
	r := newRig(t, func(_ context.Context, _ string, q string) (research.Finding, error) {
		switch q {
		case "where is the config?":
			return research.Finding{Text: "It is in config.go, line 12.\n\nSummary: config.go", Summary: "config.go", Steps: 3,
				Usage: model.Usage{InputTokens: 1000, CacheReadTokens: 400, OutputTokens: 50, CostUSD: 0.0125}}, nil
		case "what broke?":
			return research.Finding{Text: "Partial: the log shows a timeout.", Note: "stopped: the run's budget is exhausted"}, nil
		default:
			return research.Finding{Text: "half an answer"}, errors.New("research model call: bad key")
		}
	})
	res := r.run(t, "call_7", `{"questions":["where is the config?","  what broke?  ","who knows?"]}`)
	rel := ".delta/research/" + runID + ".call_7.md"
	if res.IsError || !strings.Contains(res.Text, rel) {
		t.Fatalf("result = %+v, want it to name %s", res, rel)
	}
	b, err := os.ReadFile(filepath.Join(r.ws.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"## Question 1\n\nwhere is the config?\n\n### Answer\n\nIt is in config.go, line 12.\n\nSummary: config.go\n",
		"_3 model call(s), 650 fresh tokens, $0.0125_",
		"## Question 2\n\nwhat broke?\n", // trimmed
		"Partial: the log shows a timeout.",
		"> Note: stopped: the run's budget is exhausted",
		"## Question 3\n\nwho knows?\n",
		"half an answer",
		"> Error: research model call: bad key",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("findings file lacks %q:\n%s", want, got)
		}
	}
	// The model sees summaries, notes and errors, not the full answers.
	if strings.Contains(res.Text, "line 12") || !strings.Contains(res.Text, "config.go") ||
		!strings.Contains(res.Text, "Note: stopped") || !strings.Contains(res.Text, "Error: research model call: bad key") {
		t.Fatalf("result = %q", res.Text)
	}
	// read_file can read the findings back (.delta/ is write-protected, not hidden).
	read, err := file.Read(r.ws).Run(context.Background(), tool.Call{Args: json.RawMessage(`{"path":"` + rel + `"}`)})
	if err != nil || read.IsError || !strings.Contains(read.Text, "It is in config.go, line 12.") {
		t.Fatalf("read_file: %+v, %v", read, err)
	}
	// ...and the file tools cannot forge or change one.
	if err := r.ws.CheckWritable(rel); !errors.Is(err, workspace.ErrProtected) {
		t.Fatalf("CheckWritable(%s) = %v, want ErrProtected", rel, err)
	}
}

func TestSummaryClipping(t *testing.T) {
	long := strings.Repeat("word ", 2000) // 10,000 characters
	for _, tt := range []struct {
		name     string
		f        research.Finding
		clipped  bool
		wantHead string
	}{
		{"short summary whole", research.Finding{Text: long + "\nSummary: brief", Summary: "brief"}, false, "brief"},
		{"long summary clipped", research.Finding{Text: long, Summary: long}, true, "word word"},
		{"no summary: the text stands in", research.Finding{Text: "only text"}, false, "only text"},
		{"long text without summary clipped", research.Finding{Text: long}, true, "word word"},
		{"multibyte", research.Finding{Text: "x", Summary: strings.Repeat("é", 3000)}, true, "ééé"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, func(context.Context, string, string) (research.Finding, error) { return tt.f, nil })
			res := r.run(t, "c9", `{"questions":["q1","q2"]}`)
			sections := strings.Split(res.Text, "\n## ")[1:]
			if len(sections) != 2 {
				t.Fatalf("want 2 sections: %q", res.Text)
			}
			for _, s := range sections {
				_, body, _ := strings.Cut(s, "\n")
				body = strings.TrimSuffix(body, "\n")
				if n := utf8.RuneCountInString(body); n > research.SummaryMax {
					t.Fatalf("summary is %d characters, over %d", n, research.SummaryMax)
				}
				if !strings.HasPrefix(body, tt.wantHead) {
					t.Fatalf("summary starts %q", body[:min(len(body), 40)])
				}
				if marked := strings.Contains(body, "summary clipped; the full answer is in .delta/research/"); marked != tt.clipped {
					t.Fatalf("clipped marker present = %v, want %v: %q", marked, tt.clipped, body[max(0, len(body)-120):])
				}
			}
			// The file keeps the whole answer.
			b, _ := os.ReadFile(filepath.Join(r.ws.Dir(), ".delta", "research", runID+".c9.md"))
			if !strings.Contains(string(b), strings.TrimSpace(tt.f.Text)) {
				t.Fatal("the findings file lost the full answer")
			}
		})
	}
}

func TestFailures(t *testing.T) {
	t.Run("every child failed", func(t *testing.T) {
		r := newRig(t, func(context.Context, string, string) (research.Finding, error) {
			return research.Finding{}, errors.New("explore for run x: the run is done, not running")
		})
		res := r.run(t, "c1", `{"questions":["a","b"]}`)
		if !res.IsError || strings.Count(res.Text, "Error: explore for run x") != 2 {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("a panicking child is its question's error", func(t *testing.T) {
		r := newRig(t, func(_ context.Context, _ string, q string) (research.Finding, error) {
			if q == "bad" {
				panic("boom")
			}
			return research.Finding{Text: "fine", Summary: "fine"}, nil
		})
		res := r.run(t, "c1", `{"questions":["bad","good"]}`)
		if res.IsError || !strings.Contains(res.Text, "internal error") || !strings.Contains(res.Text, "fine") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("unwritable findings come inline", func(t *testing.T) {
		ex := answer("the full answer text", "short")
		tl := research.New(research.Options{Explorer: ex, Write: func(string, []byte) error { return errors.New("disk full") }})
		res, err := tl.Run(context.Background(), tool.Call{RunID: runID, CallID: "c1", Args: json.RawMessage(`{"questions":["q"]}`)})
		if err != nil || res.IsError || !strings.Contains(res.Text, "disk full") || !strings.Contains(res.Text, "the full answer text (q)") {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
	t.Run("no run", func(t *testing.T) {
		r := newRig(t, answer("a", "s"))
		res, err := r.tool.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"questions":["q"]}`)})
		if err != nil || !res.IsError || r.calls.Load() != 0 {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		r := newRig(t, func(ctx context.Context, _, _ string) (research.Finding, error) {
			<-ctx.Done()
			return research.Finding{Text: "partial"}, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.tool.Run(ctx, tool.Call{RunID: runID, CallID: "c1", Args: json.RawMessage(`{"questions":["q"]}`)}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		// What the children had is kept on disk.
		if b, err := os.ReadFile(filepath.Join(r.ws.Dir(), ".delta", "research", runID+".c1.md")); err != nil || !strings.Contains(string(b), "partial") {
			t.Fatalf("findings after cancel: %q, %v", b, err)
		}
	})
}

func TestFileName(t *testing.T) {
	for _, tt := range []struct{ run, call, want string }{
		{"resp_abc", "call_1", ".delta/research/resp_abc.call_1.md"},
		{"resp_abc", "", ".delta/research/resp_abc.call.md"},
		{"resp_abc", "../../etc/passwd", ""}, // cleaned and hashed: checked below
		{"resp_abc", "a/b", ""},
	} {
		got := research.FileName(tt.run, tt.call)
		if tt.want != "" && got != tt.want {
			t.Fatalf("FileName(%q, %q) = %q, want %q", tt.run, tt.call, got, tt.want)
		}
		dir, base := filepath.Split(got)
		if dir != ".delta/research/" || !strings.HasPrefix(base, tt.run+".") || strings.ContainsAny(base, `/\`) || strings.Contains(base, "..") {
			t.Fatalf("FileName(%q, %q) = %q escapes or loses the run prefix", tt.run, tt.call, got)
		}
	}
	if research.FileName("r", "a/b") == research.FileName("r", "a_b") {
		t.Fatal("two call ids that clean alike share a file")
	}
}

func FuzzResearchArgs(f *testing.F) {
	for _, s := range []string{`{"questions":["a"]}`, `{"questions":[]}`, `{"questions":["a","b","c","d"]}`, `{"questions":[""]}`,
		`{"questions":"x"}`, `[]`, `null`, `"{\"questions\":[\"a\"]}"`, `{"questions":[null]}`, `{`} {
		f.Add(s)
	}
	ws, err := workspace.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	tl := research.New(research.Options{Explorer: answer("a", "s"), Write: ws.WriteFile})
	f.Fuzz(func(t *testing.T, args string) {
		res, err := tl.Run(context.Background(), tool.Call{RunID: runID, CallID: "fz", Args: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("infrastructure error for %q: %v", args, err)
		}
		if !res.IsError && !strings.HasPrefix(res.Text, "Research finished for") {
			t.Fatalf("neither an error nor a research result for %q: %q", args, res.Text)
		}
	})
}
