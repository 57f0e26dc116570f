package bundle

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"
	"unicode/utf8"
)

func TestSplitContext(t *testing.T) {
	for _, tt := range []struct {
		name, doc, stable, turn string
	}{
		{"both", "## Stable\nS1\n\n## Turn\nT1\n", "S1", "T1"},
		{"turn first", "## Turn\nT\n## Stable\nS", "S", "T"},
		{"only stable", "## Stable\nS", "S", ""},
		{"none", "# Title\nloose text", "", ""},
		{"preamble ignored", "intro\n## Stable\nS", "S", ""},
		{"case and blanks", "  ## STABLE  \nS\n##   turn\nnot a heading\n## turn\nT", "S\n##   turn\nnot a heading", "T"},
		{"other headings are content", "## Turn\nT\n### Details\nD\n## Notes\nN", "", "T\n### Details\nD\n## Notes\nN"},
		{"comments stripped", "<!-- ## Stable\nX -->\n## Turn\nT <!-- c -->\n", "", "T"},
		{"repeated section appends", "## Stable\nA\n## Turn\nT\n## Stable\nB", "A\nB", "T"},
		{"crlf", "## Stable\r\nS\r\n## Turn\r\nT\r\n", "S", "T"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, tu := SplitContext(tt.doc)
			if s != tt.stable || tu != tt.turn {
				t.Fatalf("SplitContext = %q, %q; want %q, %q", s, tu, tt.stable, tt.turn)
			}
		})
	}
}

func TestStableContext(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"vars", "## Stable\nEngine {{engine.version}} | agent {{agent.id}} | profile {{profile}}", "Engine 0.9.0 | agent meridian | profile safe"},
		{"blanks inside braces", "## Stable\n{{ agent.id }}", "meridian"},
		{"turn vars stay literal", "## Stable\n{{model}} {{now.date}} {{request.city}}", "{{model}} {{now.date}} {{request.city}}"},
		{"unknown literal", "## Stable\n{{nope}} {{", "{{nope}} {{"},
		{"capped", "## Stable\n" + strings.Repeat("s", 3000), strings.Repeat("s", StableMaxChars-1) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, ContextFile, tt.doc)
			b, err := Load(Options{Dir: dir, EngineVersion: "0.9.0", AgentID: "meridian", Profile: "safe"})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.StableContext(); got != tt.want {
				t.Fatalf("stable = %q, want %q", clipText(got), clipText(tt.want))
			}
		})
	}
}

func TestContextFileLimits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, ContextFile, "## Stable\nS\n## Turn\nT\n<!--"+strings.Repeat("x", ContextMaxFileBytes)+"-->")
	b, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.StableContext() != "" || b.HasTurnContext() {
		t.Fatal("an over-100 KiB PROMPT_CONTEXT.md must be ignored")
	}
	if w := b.Warnings(); len(w) != 1 || !strings.Contains(w[0], ContextFile) {
		t.Fatalf("warnings %q", w)
	}
	// Just under the limit is read.
	writeFile(t, dir, ContextFile, "## Stable\nS\n<!--"+strings.Repeat("x", ContextMaxFileBytes-20)+"-->")
	if b, _ = Load(Options{Dir: dir}); b.StableContext() != "S" {
		t.Fatalf("stable = %q", b.StableContext())
	}
}

func TestTurn(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris") // time/tzdata makes this work anywhere
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, paris)
	req := map[string]any{
		"city":      "Paris",
		"country":   "FR",
		"multiline": "line one\n\tline two\r\n  three",
		"num":       float64(42.5),
		"flag":      true,
		"nothing":   nil,
		"obj":       map[string]any{"a": []any{1.0, "b"}},
		"long":      strings.Repeat("L", 500),
		"bad key!":  "dropped",
		"inject":    "{{model}}",
	}
	for _, tt := range []struct {
		name, tmpl, want string
	}{
		{"time and model", "Model {{model}} | {{now.iso}} | {{now.date}} | {{now.tz}}", "Model m-1 | 2026-03-14T15:09:26+01:00 | 2026-03-14 | Europe/Paris"},
		{"request values", "{{request.city}}, {{request.country}}", "Paris, FR"},
		{"flattened to one line", "[{{request.multiline}}]", "[line one line two three]"},
		{"scalars", "{{request.num}} {{request.flag}} [{{request.nothing}}]", "42.5 true []"},
		{"object as json", "{{request.obj}}", `{"a":[1,"b"]}`},
		{"value capped at 200", "{{request.long}}", strings.Repeat("L", 199) + "…"},
		{"unsafe key not rendered", "{{request.bad key!}}", "{{request.bad key!}}"},
		{"unknown key literal", "{{request.zip}}", "{{request.zip}}"},
		{"unknown var literal", "{{weather}} {{engine.version}}", "{{weather}} {{engine.version}}"},
		{"no re-expansion", "{{request.inject}}", "{{model}}"},
		{"stable vars not in turn", "{{agent.id}}", "{{agent.id}}"},
		{"no turn section", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.tmpl != "" {
				writeFile(t, dir, ContextFile, "## Turn\n"+tt.tmpl)
			}
			b, err := Load(Options{Dir: dir, AgentID: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Turn("m-1", now, req); got != tt.want {
				t.Fatalf("Turn = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTurnCapAndUTC(t *testing.T) {
	got := renderTurn(strings.Repeat("{{request.v}}", 40), "m", time.Unix(0, 0).UTC(), map[string]any{"v": strings.Repeat("é", 200)})
	if utf8.RuneCountInString(got) != TurnMaxChars || !strings.HasSuffix(got, "…") {
		t.Fatalf("turn is %d chars", utf8.RuneCountInString(got))
	}
	if got := renderTurn("{{now.tz}} {{now.iso}}", "m", time.Unix(0, 0).UTC(), nil); got != "UTC 1970-01-01T00:00:00Z" {
		t.Fatalf("UTC turn = %q", got)
	}
}

func TestBoundContext(t *testing.T) {
	ctx := map[string]any{}
	for i := range 40 {
		ctx[fmt.Sprintf("k%02d", i)] = i
	}
	ctx["has space"] = "x"
	ctx[strings.Repeat("k", 65)] = "too long key"
	ctx[""] = "empty key"
	ctx["ok.key-1_A"] = "fine"
	got := BoundContext(ctx)
	if len(got) != MaxRequestKeys {
		t.Fatalf("%d keys kept, want %d", len(got), MaxRequestKeys)
	}
	// Sorted selection: "k00".."k23" sort before "ok.key-1_A", so it is out.
	for i := range MaxRequestKeys {
		if _, ok := got[fmt.Sprintf("k%02d", i)]; !ok {
			t.Errorf("k%02d missing", i)
		}
	}
	for _, k := range []string{"has space", strings.Repeat("k", 65), "", "k24", "ok.key-1_A"} {
		if _, ok := got[k]; ok {
			t.Errorf("key %q kept", k)
		}
	}
	if got["k07"] != "7" {
		t.Errorf("k07 = %q", got["k07"])
	}
	if got := BoundContext(nil); len(got) != 0 {
		t.Fatalf("nil context gave %v", got)
	}
}

func FuzzRenderTurn(f *testing.F) {
	f.Add("Model {{model}} | {{now.date}} | {{request.city}}", "city", "Paris\nFR", "m")
	f.Add("{{request.}}{{ request.a }}{{{{}}}}", "a", "{{request.a}}", "")
	f.Add(strings.Repeat("{{request.k}}", 50), "k", strings.Repeat("v", 300), "x")
	f.Add("\xff\xfe {{now.tz}}", "bad key", "\x00\u2028", "\xff")
	f.Fuzz(func(t *testing.T, tmpl, key, value, modelName string) {
		out := renderTurn(tmpl, modelName, time.Unix(1_700_000_000, 0).UTC(), map[string]any{key: value, "n": json.Number("1")})
		if utf8.RuneCountInString(out) > TurnMaxChars {
			t.Fatalf("turn is %d chars", utf8.RuneCountInString(out))
		}
		if tmpl == "" && out != "" {
			t.Fatalf("empty template rendered %q", out)
		}
		b := BoundContext(map[string]any{key: value})
		for k, v := range b {
			if !safeKey.MatchString(k) || utf8.RuneCountInString(v) > MaxRequestValueLen || strings.ContainsAny(v, "\r\n\t") {
				t.Fatalf("unbounded context %q=%q", k, v)
			}
		}
	})
}

func BenchmarkTurn(b *testing.B) {
	now := time.Now()
	req := map[string]any{"city": "Paris", "country": "FR", "user": "u_123"}
	tmpl := "Model {{model}} | date {{now.date}} | timezone {{now.tz}}\nRequester: {{request.city}}, {{request.country}} ({{request.user}})"
	for b.Loop() {
		renderTurn(tmpl, "anthropic/claude-sonnet-4.5", now, req)
	}
}
