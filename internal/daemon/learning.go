package daemon

import (
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool/remember"
)

// learningStatus is the learning block of /v1/status: whether the agent
// can rewrite its self-file, under which cap, and how many revisions an
// operator can restore from. Names and numbers only.
func learningStatus(cfg config.Config, tools *toolStatus, p *parts) map[string]any {
	_, registered := tools.reg.Get(remember.Name)
	self := map[string]any{
		"remember":       registered,
		"max_bytes":      cfg.SelfMaxTokens * bundle.BytesPerToken,
		"revisions_kept": store.SelfRevisionsKept,
	}
	if reason, ok := tools.omitted[remember.Name]; ok {
		self["omitted"] = reason
	}
	return map[string]any{"self_file": self}
}
