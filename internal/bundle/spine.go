package bundle

import (
	_ "embed"
	"strings"

	"github.com/deltaharness/delta/internal/model"
)

//go:embed base_prompt.md
var basePrompt string

// BasePrompt is Delta's embedded base behaviour and operating norms, the
// first block of every spine. It holds no volatile values.
func BasePrompt() string { return strings.TrimSpace(basePrompt) }

// Headers of the spine blocks. They tell the model where each block comes
// from, which matters for precedence.
const (
	stableHeader = "# Deployment context\n\n"
	selfHeader   = "# Your self-file (DELTA.md)\n\n"
	policyHeader = "# Operator policy (POLICY.md)\n\nThese rules come from the operator and take precedence over everything above and over any request.\n\n"
	toolsHeader  = "# Tools available now\n\n"
)

// safeModeBlock replaces the deployment context, self-file and policy in a
// safe-mode boot, so the agent neither presents as its configured identity
// nor role-plays one from earlier conversation.
const safeModeBlock = "# Safe mode\n\nThis daemon was started in safe mode for recovery. The configured agent's name, persona, " +
	"deployment context, operator policy (POLICY.md) and learned self-file (DELTA.md) are NOT loaded, and you have only a " +
	"minimal, read-mostly tool set. Do not present yourself as the configured agent or adopt an identity or role from " +
	"earlier conversation. You are a neutral Delta agent helping the operator inspect and repair this deployment."

// toolLineMax caps one tool's description in the index; the full text and
// schema travel in the request's tools field.
const toolLineMax = 200

// System assembles the system spine for one model turn, in this order (the
// stable parts first, so the provider's prompt cache keeps them):
//
//  1. the embedded base behaviour and norms (BasePrompt);
//  2. the boot-rendered ## Stable context, when there is one;
//  3. the DELTA.md snapshot of this attempt (self, from ReadSelf), when not
//     empty, with its SelfVersion;
//  4. the POLICY.md policy (custom or embedded), when there is one: the last
//     instruction layer;
//  5. an index of the resident tools: name and first description line, in
//     the order given, when there are tools.
//
// Every input is fixed for an attempt, so the result is byte-identical across
// its turns and the provider's prompt cache keeps hitting. Conversation
// history and the per-turn blocks (Turn, request instructions, retrieved
// capabilities) follow as messages, never in here.
func (b *Bundle) System(self string, tools []model.ToolSpec) []string {
	blocks := make([]string, 0, 5)
	blocks = append(blocks, BasePrompt())
	if b.safeMode {
		blocks = append(blocks, safeModeBlock)
	}
	if b.stable != "" {
		blocks = append(blocks, stableHeader+b.stable)
	}
	if s := strings.TrimSpace(self); s != "" {
		// The version is of the snapshot as read, so a write based on an
		// elided snapshot never matches the whole file and is handed the
		// whole file to merge.
		blocks = append(blocks, selfHeader+"(version "+SelfVersion(self)+": name it as the base when you rewrite this file)\n\n"+s)
	}
	if b.policy != "" {
		blocks = append(blocks, policyHeader+b.policy)
	}
	if len(tools) > 0 {
		var sb strings.Builder
		sb.WriteString(toolsHeader)
		for i, t := range tools {
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString("- ")
			sb.WriteString(t.Name)
			if d := firstLine(t.Description); d != "" {
				sb.WriteString(": ")
				sb.WriteString(d)
			}
		}
		blocks = append(blocks, sb.String())
	}
	return blocks
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return capChars(oneLine(s), toolLineMax)
}
