package bundle

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

var testTools = []model.ToolSpec{
	{Name: "write_file", Description: "Write a file in the workspace.\nLong details that stay out of the index."},
	{Name: "read_file", Description: "Read a file."},
	{Name: "crm__propose_change", Description: ""},
}

func TestSystemOrder(t *testing.T) {
	const stableDoc = "## Stable\nEngine {{engine.version}} | agent {{agent.id}}\n## Turn\nModel {{model}} at {{now.iso}}"
	const self = "# Persona\n\nMeridian, a research operator.\n"
	const policy = "# Policy\n\n- Cite sources.\n"
	for _, tt := range []struct {
		name    string
		files   map[string]string
		rail    bool
		self    string
		tools   []model.ToolSpec
		headers []string // the first line of each block, in order
		checks  []string // each must appear in the block at the same index
	}{
		{
			name:    "all five",
			files:   map[string]string{ContextFile: stableDoc, PolicyFile: policy},
			self:    self,
			tools:   testTools,
			headers: []string{firstLineOf(BasePrompt()), "# Deployment context", "# Your self-file (DELTA.md)", "# Operator policy (POLICY.md)", "# Tools available now"},
			checks: []string{"autonomous agent", "Engine 1.0.0 | agent meridian", "Meridian, a research operator.", "- Cite sources.",
				"- write_file: Write a file in the workspace.\n- read_file: Read a file.\n- crm__propose_change"},
		},
		{
			name:    "base only",
			headers: []string{firstLineOf(BasePrompt())},
			checks:  []string{"Honesty"},
		},
		{
			name:    "embedded policy when rail and no file",
			rail:    true,
			self:    self,
			headers: []string{firstLineOf(BasePrompt()), "# Your self-file (DELTA.md)", "# Operator policy (POLICY.md)"},
			checks:  []string{"", "Meridian", "`propose_change`"},
		},
		{
			name:    "blank self omitted",
			files:   map[string]string{PolicyFile: policy},
			self:    " \n\t",
			tools:   testTools[:1],
			headers: []string{firstLineOf(BasePrompt()), "# Operator policy (POLICY.md)", "# Tools available now"},
			checks:  []string{"", "Cite sources", "- write_file: Write a file in the workspace."},
		},
		{
			name:    "stable without turn vars",
			files:   map[string]string{ContextFile: stableDoc},
			headers: []string{firstLineOf(BasePrompt()), "# Deployment context"},
			checks:  []string{"", "{{"}, // placeholder-free check below
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			b, err := Load(Options{Dir: dir, EngineVersion: "1.0.0", AgentID: "meridian", Profile: "trusted", HasWriteRail: tt.rail})
			if err != nil {
				t.Fatal(err)
			}
			blocks := b.System(tt.self, tt.tools)
			var got []string
			for _, blk := range blocks {
				got = append(got, firstLineOf(blk))
			}
			if !slices.Equal(got, tt.headers) {
				t.Fatalf("block headers\n got %q\nwant %q", got, tt.headers)
			}
			for i, want := range tt.checks {
				if want == "{{" {
					if strings.Contains(blocks[i], "{{") {
						t.Errorf("block %d has an unrendered placeholder: %q", i, blocks[i])
					}
					continue
				}
				if !strings.Contains(blocks[i], want) {
					t.Errorf("block %d lacks %q:\n%s", i, want, blocks[i])
				}
			}
			for i, blk := range blocks {
				if strings.Contains(blk, "Long details") {
					t.Errorf("block %d carries a tool's full description", i)
				}
			}
		})
	}
}

// The system spine must be byte-identical across the turns of a run so the
// provider's prompt cache keeps hitting, while the per-turn block changes.
func TestStablePrefixAcrossTurns(t *testing.T) {
	dir := t.TempDir()
	if _, err := Scaffold(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ContextFile, "## Stable\nEngine {{engine.version}} | agent {{agent.id}} | profile {{profile}}\n"+
		"## Turn\nModel {{model}} | {{now.iso}} | city {{request.city}}")
	b, err := Load(Options{Dir: dir, EngineVersion: "1.0.0", AgentID: "meridian", Profile: "trusted", HasWriteRail: true})
	if err != nil {
		t.Fatal(err)
	}
	self := b.ReadSelf() // once per attempt
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	models := []string{"primary/model", "fallback/model", "primary/model"}
	var first []string
	var turns []string
	for i, m := range models {
		sys := b.System(self, testTools)
		if i == 0 {
			first = sys
		} else if !slices.Equal(sys, first) {
			t.Fatalf("turn %d: system spine changed", i)
		}
		turns = append(turns, b.Turn(m, start.Add(time.Duration(i)*time.Minute), map[string]any{"city": "Paris"}))
	}
	joined := strings.Join(first, "\n")
	for _, volatile := range []string{"2026", "primary/model", "Paris", "{{"} {
		if strings.Contains(joined, volatile) {
			t.Errorf("system spine contains volatile %q", volatile)
		}
	}
	if turns[0] == turns[1] || turns[1] == turns[2] {
		t.Fatalf("turn blocks did not change with time or model: %q", turns)
	}
	if turns[1] != "Model fallback/model | 2026-01-02T03:05:05Z | city Paris" {
		t.Fatalf("turn 1 = %q", turns[1])
	}
	// Rewriting DELTA.md mid-attempt does not change this attempt's spine.
	writeFile(t, dir, SelfFile, "# Persona\n\nSomeone else.\n")
	if !slices.Equal(b.System(self, testTools), first) {
		t.Fatal("spine changed after a mid-attempt DELTA.md edit")
	}
	if slices.Equal(b.System(b.ReadSelf(), testTools), first) {
		t.Fatal("the next attempt does not see the DELTA.md edit")
	}
}

func TestToolIndexLine(t *testing.T) {
	got := firstLine("  " + strings.Repeat("word ", 100) + "\nsecond")
	if strings.Contains(got, "second") || len([]rune(got)) > toolLineMax {
		t.Fatalf("firstLine = %q", got)
	}
}

func BenchmarkSystem(b *testing.B) {
	dir := b.TempDir()
	if _, err := Scaffold(dir); err != nil {
		b.Fatal(err)
	}
	bd, err := Load(Options{Dir: dir, HasWriteRail: true})
	if err != nil {
		b.Fatal(err)
	}
	self := bd.ReadSelf()
	tools := make([]model.ToolSpec, 40)
	for i := range tools {
		tools[i] = model.ToolSpec{Name: "tool_" + string(rune('a'+i%26)), Description: "Does one thing well.\nMore."}
	}
	for b.Loop() {
		bd.System(self, tools)
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The self block names the version of the snapshot it shows, so a rewrite
// can say which content it edited.
func TestSystemShowsTheSelfVersion(t *testing.T) {
	b, err := Load(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const self = "# Persona\n\nMeridian.\n"
	blocks := b.System(self, nil)
	if len(blocks) != 2 || !strings.Contains(blocks[1], "(version "+SelfVersion(self)+":") {
		t.Fatalf("self block = %q, want the version %s", blocks[len(blocks)-1], SelfVersion(self))
	}
	if SelfVersion(self) == SelfVersion(self+" ") || len(SelfVersion(self)) != 12 {
		t.Fatalf("SelfVersion(%q) = %q: want 12 hex digits that change with the content", self, SelfVersion(self))
	}
}
