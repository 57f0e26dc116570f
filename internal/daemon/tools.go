package daemon

import (
	"log/slog"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/code"
	"github.com/deltaharness/delta/internal/tool/file"
	"github.com/deltaharness/delta/internal/tool/grep"
	"github.com/deltaharness/delta/internal/tool/web"
	"github.com/deltaharness/delta/internal/workspace"
)

// toolStatus is what /v1/status says about tools: what is registered, what
// is registered but cannot work right now, and what was left out and why.
type toolStatus struct {
	reg      *tool.Registry
	unusable []interface{ Unusable() (string, bool) }
	omitted  map[string]string
}

// buildTools assembles the built-in tools explicitly, in index order.
func buildTools(cfg config.Config, ws *workspace.Root, logger *slog.Logger) (*tool.Registry, *toolStatus) {
	reg := tool.NewRegistry()
	st := &toolStatus{reg: reg, omitted: map[string]string{}}
	reg.Add(file.All(ws)...)
	reg.Add(grep.New(ws, grep.Options{}))
	reg.Add(web.Fetch(web.FetchOptions{AllowPrivate: cfg.FetchAllowPrivate}))
	search := web.Search(web.SearchOptions{APIKey: cfg.ExaAPIKey})
	reg.Add(search)
	st.unusable = append(st.unusable, search)
	c := code.New(ws, code.Config{CLI: cfg.CodeCLI, Env: config.PlumbingEnv()})
	if reason, omitted := c.Omitted(); omitted {
		st.omitted[code.Name] = reason
		logger.Info("tool omitted", "tool", code.Name, "reason", reason)
	} else {
		reg.Add(c)
	}
	return reg, st
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
	return map[string]any{"registered": s.reg.Names(), "unusable": unusable, "omitted": s.omitted}
}
