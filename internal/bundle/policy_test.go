package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPolicy(t *testing.T) {
	embedded := EmbeddedPolicy(NeutralVocab())
	for _, tt := range []struct {
		name       string
		content    *string // nil = no file
		dir        bool    // POLICY.md is a directory (unreadable)
		rail       bool
		wantSource string
		wantText   string
		wantWarn   bool
	}{
		{name: "missing with rail", rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "missing without rail", wantSource: PolicyNone},
		{name: "empty with rail", content: ptr(""), rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "heading only", content: ptr("# Policy\n\n## Rules\n  \n"), rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "comment only", content: ptr("<!--\n- never do X\n-->\n"), rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "heading and comment", content: ptr("# Policy\n<!-- rules go here -->\n"), rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "unclosed comment", content: ptr("# Policy\n<!-- - draft rule\n"), rail: true, wantSource: PolicyEmbedded, wantText: embedded},
		{name: "comment only without rail", content: ptr("<!-- x -->"), wantSource: PolicyNone},
		{name: "unreadable with rail", dir: true, rail: true, wantSource: PolicyEmbedded, wantText: embedded, wantWarn: true},
		{name: "custom", content: ptr("# Policy\n\n- Cite sources.\n"), rail: true, wantSource: PolicyCustom, wantText: "# Policy\n\n- Cite sources."},
		{name: "custom without rail", content: ptr("- Cite sources."), wantSource: PolicyCustom, wantText: "- Cite sources."},
		{name: "custom comments stripped", content: ptr("<!-- note -->\n# Policy\n- Ask first.<!-- why -->\n"), wantSource: PolicyCustom, wantText: "# Policy\n- Ask first."},
		{name: "custom at exact budget", content: ptr(strings.Repeat("a", 800*4)), wantSource: PolicyCustom, wantText: strings.Repeat("a", 800*4)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(Options{Dir: bundleWith(t, PolicyFile, tt.content, tt.dir), HasWriteRail: tt.rail})
			if err != nil {
				t.Fatal(err)
			}
			if b.PolicySource() != tt.wantSource || b.Policy() != tt.wantText {
				t.Fatalf("policy = %s %q, want %s %q", b.PolicySource(), clipText(b.Policy()), tt.wantSource, clipText(tt.wantText))
			}
			if got := len(b.Warnings()) > 0; got != tt.wantWarn {
				t.Fatalf("warnings %q, want some: %v", b.Warnings(), tt.wantWarn)
			}
		})
	}
}

func TestPolicyOverBudgetRefusesToBoot(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size      int
		maxTokens int
		wantTok   int
	}{
		{"default budget", 800*4 + 1, 0, 801},
		{"custom budget", 101 * 4, 100, 101},
		{"far over", 10_000, 0, 2500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, PolicyFile, "# Policy\n"+strings.Repeat("r", tt.size-len("# Policy\n")))
			b, err := Load(Options{Dir: dir, PolicyMaxTokens: tt.maxTokens, HasWriteRail: true})
			if err == nil {
				t.Fatalf("Load accepted an over-budget policy: %s", b.PolicySource())
			}
			if !errors.Is(err, ErrPolicyTooLarge) {
				t.Fatalf("error %v does not wrap ErrPolicyTooLarge", err)
			}
			limit := tt.maxTokens
			if limit == 0 {
				limit = DefaultPolicyMaxTokens
			}
			for _, want := range []string{filepath.Join(dir, PolicyFile), strconv.Itoa(tt.wantTok) + " tokens", strconv.Itoa(limit) + "-token limit"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
	// A huge file is refused without being read whole.
	dir := t.TempDir()
	writeFile(t, dir, PolicyFile, strings.Repeat("x", policyReadLimit+1))
	if _, err := Load(Options{Dir: dir}); !errors.Is(err, ErrPolicyTooLarge) {
		t.Fatalf("huge policy: err = %v", err)
	}
	// Comments do not count against the budget: only what is sent does.
	writeFile(t, dir, PolicyFile, "<!-- "+strings.Repeat("c", 10_000)+" -->\n- one rule\n")
	if b, err := Load(Options{Dir: dir}); err != nil || b.Policy() != "- one rule" {
		t.Fatalf("commented policy: %v", err)
	}
}

func TestEmbeddedPolicy(t *testing.T) {
	v := NeutralVocab()
	v.WriteVerbSuffix, v.WriteNoun, v.TaskNoun, v.ItemNoun = "crm__propose_change", "CRM", "deal review", "change item"
	p := EmbeddedPolicy(v)
	for _, want := range []string{"`crm__propose_change`", "the CRM", "deal review", "change item", "ONE proposal"} {
		if !strings.Contains(p, want) {
			t.Errorf("embedded policy lacks %q", want)
		}
	}
	if strings.Contains(p, "{{") {
		t.Errorf("embedded policy has an unrendered placeholder:\n%s", p)
	}
	if tok := EstimateTokens(p); tok > DefaultPolicyMaxTokens {
		t.Errorf("embedded policy is %d tokens, over the default budget", tok)
	}
}

func ptr(s string) *string { return &s }

// bundleWith is a fresh bundle directory holding name with content (none
// for nil), or a directory in its place when asDir.
func bundleWith(t *testing.T, name string, content *string, asDir bool) string {
	t.Helper()
	dir := t.TempDir()
	if content != nil {
		writeFile(t, dir, name, *content)
	}
	if asDir {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func clipText(s string) string { return capChars(s, 80) }

// The reviewed-write rail is decided from the tools registered after boot:
// the embedded policy follows a …propose_change tool while POLICY.md holds
// no rules, and a custom policy never changes.
func TestWithWriteTools(t *testing.T) {
	empty := t.TempDir()
	b, err := Load(Options{Dir: empty})
	if err != nil {
		t.Fatal(err)
	}
	if b.PolicySource() != PolicyNone {
		t.Fatalf("before MCP: %s", b.PolicySource())
	}
	with := b.WithWriteTools([]string{"read_file", "crm__propose_change"})
	if with.PolicySource() != PolicyEmbedded || with.Policy() != EmbeddedPolicy(NeutralVocab()) {
		t.Fatalf("with a write tool: %s %q", with.PolicySource(), clipText(with.Policy()))
	}
	if b.PolicySource() != PolicyNone {
		t.Fatalf("WithWriteTools changed its receiver: %s", b.PolicySource())
	}
	if without := with.WithWriteTools([]string{"read_file"}); without.PolicySource() != PolicyNone || without.Policy() != "" {
		t.Fatalf("without a write tool: %s", without.PolicySource())
	}
	custom := t.TempDir()
	writeFile(t, custom, PolicyFile, "- Cite sources.\n")
	c, err := Load(Options{Dir: custom})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.WithWriteTools([]string{"crm__propose_change"}); got.PolicySource() != PolicyCustom || got.Policy() != "- Cite sources." {
		t.Fatalf("custom policy replaced: %s %q", got.PolicySource(), got.Policy())
	}
	s, err := Load(Options{Dir: empty, SafeMode: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.WithWriteTools([]string{"crm__propose_change"}); got.PolicySource() != PolicyNone {
		t.Fatalf("safe mode got a policy: %s", got.PolicySource())
	}
}
