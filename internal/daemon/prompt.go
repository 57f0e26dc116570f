package daemon

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/model"
)

// livePrompt is the bundle as the engine sees it, with its policy block
// decided from the tools registered so far. The bundle is loaded before the
// MCP servers connect, and a server can connect later (a credential arrives
// in the vault, a server reveals tools), so the decision is made again
// whenever tools join the registry; an execution attempt reads the spine
// when it starts.
type livePrompt struct {
	b      atomic.Pointer[bundle.Bundle]
	logger *slog.Logger
}

func newLivePrompt(b *bundle.Bundle, logger *slog.Logger) *livePrompt {
	p := &livePrompt{logger: logger}
	p.b.Store(b)
	return p
}

// bindTools decides the review policy from the registered tool names.
func (p *livePrompt) bindTools(names []string) {
	for {
		old := p.b.Load()
		next := old.WithWriteTools(names)
		if next == old {
			return
		}
		if p.b.CompareAndSwap(old, next) {
			if name, n := next.Vocab().WriteTool(names); n > 1 {
				p.logger.Warn("several tools end in the reviewed-write suffix; the review policy names the suffix, make it more specific in vocab.json",
					"suffix", next.Vocab().WriteVerbSuffix, "first", name, "matches", n)
			}
			p.logger.Info("policy decided from the connected tools", "policy", next.PolicySource())
			return
		}
	}
}

func (p *livePrompt) ReadSelf() string { return p.b.Load().ReadSelf() }

func (p *livePrompt) System(self string, tools []model.ToolSpec) []string {
	return p.b.Load().System(self, tools)
}

func (p *livePrompt) Turn(modelName string, now time.Time, reqContext map[string]any) string {
	return p.b.Load().Turn(modelName, now, reqContext)
}
