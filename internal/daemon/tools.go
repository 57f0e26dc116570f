package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/code"
	"github.com/deltaharness/delta/internal/tool/file"
	"github.com/deltaharness/delta/internal/tool/grep"
	"github.com/deltaharness/delta/internal/tool/schedule"
	"github.com/deltaharness/delta/internal/tool/search"
	"github.com/deltaharness/delta/internal/tool/todo"
	"github.com/deltaharness/delta/internal/tool/web"
	"github.com/deltaharness/delta/internal/vault"
	"github.com/deltaharness/delta/internal/workspace"
)

// toolStatus is what /v1/status says about tools: what is registered, what
// is registered but cannot work right now, and what was left out and why.
type toolStatus struct {
	reg      *tool.Registry
	unusable []interface{ Unusable() (string, bool) }
	omitted  map[string]string
	cfg      config.Config
	loader   *search.Loader // nil until build wires progressive loading
}

// resident is the ceiling's resident set for a run with no activations.
func (s *toolStatus) resident() []string {
	if s.loader == nil {
		return s.names("")
	}
	return s.loader.Resident(context.Background(), "", "")
}

// names is the tool envelope of a run placed at profile: the tier's set
// (trusted: every tool; safe: the read-only ones), then intersected with
// DELTA_ALLOWED_TOOLS. The profile is placed again here, so a stored or
// forged wider profile still gets the ceiling; a set-but-unreadable
// allowlist gives the safe floor. The registry is read on every call
// because MCP tools can arrive after boot.
func (s *toolStatus) names(profile string) []string {
	placed := s.cfg.Placement(profile)
	if s.cfg.ToolFloor {
		placed = config.ProfileSafe
	}
	var out []string
	for _, n := range s.reg.Names() {
		t, ok := s.reg.Get(n)
		if !ok || (placed != config.ProfileTrusted && !t.ReadOnly()) {
			continue
		}
		if s.cfg.AllowedTools != nil && !s.cfg.ToolFloor && !slices.Contains(s.cfg.AllowedTools, n) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// buildTools assembles the built-in tools explicitly, in index order.
func buildTools(cfg config.Config, ws *workspace.Root, v *vault.Vault, plans *todo.Plans, images file.Images, logger *slog.Logger) (*tool.Registry, *toolStatus) {
	reg := tool.NewRegistry()
	st := &toolStatus{reg: reg, omitted: map[string]string{}, cfg: cfg}
	reg.Add(file.All(ws, images)...)
	reg.Add(grep.New(ws, grep.Options{}))
	reg.Add(web.Fetch(web.FetchOptions{AllowPrivate: cfg.FetchAllowPrivate}))
	so := web.SearchOptions{APIKey: cfg.ExaAPIKey}
	if cfg.ExaAPIKey == "" && v != nil {
		// The vault's EXA_API_KEY, asked on every call: it heals without a restart.
		so.Key = func() string {
			k, _ := v.Resolve(context.Background(), "EXA_API_KEY")
			return k
		}
	}
	search := web.Search(so)
	reg.Add(search)
	st.unusable = append(st.unusable, search)
	reg.Add(plans.Tool())
	c := code.New(ws, code.Config{CLI: cfg.CodeCLI, Env: config.PlumbingEnv()})
	if cfg.SafeMode {
		st.omitted[code.Name] = "DELTA_SAFE_MODE=1"
		logger.Info("tool omitted", "tool", code.Name, "reason", "safe mode")
	} else if reason, omitted := c.Omitted(); omitted {
		st.omitted[code.Name] = reason
		logger.Info("tool omitted", "tool", code.Name, "reason", reason)
	} else {
		reg.Add(c)
	}
	if v != nil {
		reg.Add(listSecrets(v))
	}
	if cfg.Scheduling() {
		// Delta keeps no alarm of its own: with a control plane configured
		// the agent asks it for wake-ups.
		reg.Add(schedule.New(schedule.Options{URL: cfg.ControlURL, Token: cfg.ControlToken, Agent: cfg.AgentID, Logger: logger}).Tools()...)
	}
	return reg, st
}

type noArgs struct{}

// listSecrets shows the model which secrets exist (names and purposes,
// never values); it is registered only when the vault is on.
func listSecrets(v *vault.Vault) tool.Tool {
	return tool.Func("list_secrets", "List the names and purposes of the secrets in the vault. Values are never shown; "+
		"refer to a secret as {{vault:NAME}} where a tool configuration accepts it.", true,
		func(ctx context.Context, _ tool.Call, _ noArgs) (tool.Result, error) {
			list, err := v.List(ctx)
			if err != nil {
				return tool.Result{}, err
			}
			if len(list) == 0 {
				return tool.Text("The vault holds no secrets."), nil
			}
			var b strings.Builder
			for _, s := range list {
				fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Purpose)
			}
			return tool.Text(b.String()), nil
		})
}

// view renders the tools block of /v1/status.
func (s *toolStatus) view() map[string]any {
	unusable := map[string]string{}
	for _, u := range s.unusable {
		if reason, bad := u.Unusable(); bad {
			if t, ok := u.(tool.Tool); ok {
				unusable[t.Spec().Name] = reason
			}
		}
	}
	pinned := []string{}
	for _, n := range s.cfg.PinnedTools {
		if slices.Contains(s.names(""), n) {
			pinned = append(pinned, n)
		}
	}
	// Tools that bound themselves run without DELTA_TOOL_TIMEOUT_MS; the
	// engine finds them by the same method.
	untimed := []string{}
	for _, n := range s.reg.Names() {
		if t, ok := s.reg.Get(n); ok {
			if u, ok := t.(interface{ Untimed() bool }); ok && u.Untimed() {
				untimed = append(untimed, n)
			}
		}
	}
	return map[string]any{
		"registered": s.reg.Names(), "unusable": unusable, "omitted": s.omitted, "untimed": untimed,
		// What a run at the ceiling may call, after the allowlist.
		"allowed": nonNil(s.names("")),
		// Pinning has effect only past the guardrail: a smaller envelope is
		// offered whole. "resident" is what a fresh run at the ceiling is
		// offered before any search_tools activation.
		"pinned": pinned, "pinning_effective": len(s.names("")) > search.Guardrail,
		"resident": nonNil(s.resident()),
	}
}
