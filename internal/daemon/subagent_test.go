package daemon

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/tool/subagent"
)

// delegation wires the built-in tools plus the delegation tools as build
// does, for a process configured by env.
func delegation(t *testing.T, env map[string]string) (config.Config, *toolStatus) {
	t.Helper()
	b := builtins(t, env)
	logger := slog.New(slog.DiscardHandler)
	provider, err := newCascade(b.cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	addSubagent(b.cfg, b.ws.Dir(), b.st, provider, model.Prices(nil), b.reg, b.ts, logger)
	return b.cfg, b.ts
}

func TestDelegationToolsTrustedTierAtDepthZeroOnly(t *testing.T) {
	both := []string{subagent.Name, subagent.EvalName}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		profile string
		offered bool // both tools in the run's envelope
		omitted string
	}{
		{"trusted parent", map[string]string{}, "trusted", true, ""},
		{"safe run", map[string]string{}, "safe", false, ""},
		{"safe mode", map[string]string{"DELTA_SAFE_MODE": "1"}, "trusted", false, ""},
		{"allowlist without them", map[string]string{"DELTA_ALLOWED_TOOLS": "read_file"}, "trusted", false, ""},
		{"child", map[string]string{"DELTA_SUBAGENT_DEPTH": "1"}, "trusted", false, "subagents do not nest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := delegation(t, tc.env)
			names := ts.names(tc.profile)
			omitted := ts.view()["omitted"].(map[string]string)
			for _, n := range both {
				if got := slices.Contains(names, n); got != tc.offered {
					t.Errorf("%s offered = %v, want %v (envelope %v)", n, got, tc.offered, names)
				}
				_, registered := ts.reg.Get(n)
				if tc.omitted != "" && (registered || !strings.Contains(omitted[n], tc.omitted)) {
					t.Errorf("%s: registered %v, omitted %q; want omitted for %q", n, registered, omitted[n], tc.omitted)
				}
				if tc.omitted == "" && !registered {
					t.Errorf("%s not registered", n)
				}
			}
		})
	}
}

// TestJudgeIsTheUtilityLanePriced: the judge asks the configured utility
// model, and a reply without a provider-reported cost is priced from the
// table so the parent is charged dollars.
func TestJudgeIsTheUtilityLanePriced(t *testing.T) {
	fake, err := modeltest.Start(func(modeltest.ChatRequest) modeltest.Reply {
		return modeltest.Reply{Text: `{"winner":"A","reason":"r"}`, Usage: &modeltest.Usage{PromptTokens: 1_000_000, CompletionTokens: 0}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cfg, err := config.Load(func(k string) (string, bool) {
		v, ok := map[string]string{"MODEL_BASE_URL": fake.URL(), "MODEL_API_KEY": "k", "DELTA_MODEL_PRIMARY": "scripted/main",
			"DELTA_UTILITY_MODEL": "openai/gpt-4o-mini", "DELTA_WORKSPACE": t.TempDir()}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCascade(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := judge(c, model.Prices(nil))(context.Background(), model.Request{
		System: []string{"judge"}, Messages: []model.Message{{Role: model.RoleUser, Content: "pick"}}})
	if err != nil {
		t.Fatal(err)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || reqs[0].Model != "openai/gpt-4o-mini" {
		t.Fatalf("judge requests = %+v, want one to the utility model openai/gpt-4o-mini", reqs)
	}
	// 1M fresh input tokens of gpt-4o-mini at $0.15 per million.
	if resp.Usage.CostUSD < 0.1499 || resp.Usage.CostUSD > 0.1501 {
		t.Errorf("judge cost = $%v, want $0.15 from the price table", resp.Usage.CostUSD)
	}
}
