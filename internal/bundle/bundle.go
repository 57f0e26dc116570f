// Package bundle loads an agent's five-file bundle and assembles the prompt
// spine from it.
//
// The bundle is delta.env (launch settings, read only by `delta dev` through
// package config), vocab.json (product bindings), DELTA.md (the agent's
// writable self-file), POLICY.md (fixed operator rules) and
// PROMPT_CONTEXT.md (stable and per-turn context templates). Scaffold writes
// starters for `delta init`; Load reads what the daemon needs at boot.
//
// Reload rules: POLICY.md, vocab.json and PROMPT_CONTEXT.md are
// read once by Load, so editing them needs a daemon restart. DELTA.md is read
// by ReadSelf, which the engine calls once per execution attempt, so an edit
// shows up in the next fresh or resumed attempt.
//
// System returns the cache-friendly stable prefix: nothing in it depends on
// time or on the request, so it is byte-identical across the turns of a run.
// Volatile values go through Turn, which the engine sends as a user-role
// block. A *Bundle is immutable after Load and safe for concurrent use.
package bundle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// The five bundle files, in the order Scaffold writes them.
const (
	EnvFile     = "delta.env"
	VocabFile   = "vocab.json"
	SelfFile    = "DELTA.md"
	PolicyFile  = "POLICY.md"
	ContextFile = "PROMPT_CONTEXT.md"
)

// Files returns the five bundle file names.
func Files() []string { return []string{EnvFile, VocabFile, SelfFile, PolicyFile, ContextFile} }

// Limits from the guide.
const (
	// BytesPerToken is the estimate used for every token budget here: about
	// four bytes of English text per token. It is deliberately simple so an
	// operator can predict it (800 tokens = 3,200 bytes).
	BytesPerToken = 4

	DefaultPolicyMaxTokens = 800
	DefaultSelfMaxTokens   = 800

	// SelfMaxFileBytes: a DELTA.md above this loads as empty.
	SelfMaxFileBytes = 1 << 20
	// ContextMaxFileBytes: a PROMPT_CONTEXT.md above this is ignored
	// (the guide's "100 KB", taken as 100 KiB).
	ContextMaxFileBytes = 100 << 10
	// StableMaxChars and TurnMaxChars cap the rendered blocks, in characters
	// (Unicode code points).
	StableMaxChars = 2000
	TurnMaxChars   = 4000
)

// ErrPolicyTooLarge is wrapped by Load when a custom POLICY.md exceeds its
// token budget: the daemon must refuse to boot rather than truncate rules.
var ErrPolicyTooLarge = errors.New("policy over budget")

// Options configure Load. Zero token caps take the defaults.
type Options struct {
	Dir             string // the workspace holding the bundle files
	PolicyMaxTokens int    // DELTA_POLICY_MAX_TOKENS
	SelfMaxTokens   int    // DELTA_SELF_MAX_TOKENS
	VocabOverride   string // DELTA_VOCAB: raw JSON that wins over vocab.json
	EngineVersion   string // {{engine.version}}
	AgentID         string // {{agent.id}}
	Profile         string // {{profile}}
	// HasWriteRail reports that a reviewed-write tool (a tool whose name ends
	// in the vocabulary's writeVerbSuffix) is connected; only then does a
	// missing or empty POLICY.md fall back to the embedded review policy.
	// Vocab.WriteTool finds it. The daemon loads the bundle before its MCP
	// servers connect, so it decides the rail later with WithWriteTools.
	HasWriteRail bool
	// SafeMode is the recovery boot (DELTA_SAFE_MODE=1): the workspace prompt
	// layers (DELTA.md, POLICY.md, PROMPT_CONTEXT.md) and vocab.json are not
	// read, so a poisoned bundle cannot influence the agent, and the spine
	// says so in place of the configured identity.
	SafeMode bool
}

// Policy sources reported by PolicySource.
const (
	PolicyCustom   = "custom"   // POLICY.md has real rules
	PolicyEmbedded = "embedded" // the embedded review policy
	PolicyNone     = "none"     // no policy block
)

// Bundle is a loaded bundle.
type Bundle struct {
	dir          string
	selfMaxBytes int
	vocab        Vocab
	policy       string
	policySource string
	// policyFallback: POLICY.md holds no rules, so the policy block is the
	// embedded review policy exactly when a reviewed-write tool exists.
	policyFallback bool
	stable         string // rendered at Load
	turn           string // template, rendered by Turn
	warnings       []string
	safeMode       bool
}

// Load reads POLICY.md, PROMPT_CONTEXT.md and vocab.json from o.Dir. Missing
// files are normal. The only error is a custom policy over its budget (or
// one too large to read): everything else degrades to defaults and is
// reported by Warnings.
func Load(o Options) (*Bundle, error) {
	if o.PolicyMaxTokens <= 0 {
		o.PolicyMaxTokens = DefaultPolicyMaxTokens
	}
	if o.SelfMaxTokens <= 0 {
		o.SelfMaxTokens = DefaultSelfMaxTokens
	}
	b := &Bundle{dir: o.Dir, selfMaxBytes: o.SelfMaxTokens * BytesPerToken}
	if o.SafeMode {
		b.safeMode, b.vocab, b.policySource = true, NeutralVocab(), PolicyNone
		b.warnings = append(b.warnings, "DELTA_SAFE_MODE=1: DELTA.md, POLICY.md, PROMPT_CONTEXT.md and vocab.json are not loaded")
		return b, nil
	}

	var warn []string
	b.vocab, warn = loadVocab(filepath.Join(o.Dir, VocabFile), o.VocabOverride)
	b.warnings = append(b.warnings, warn...)

	pol, src, w, err := loadPolicy(filepath.Join(o.Dir, PolicyFile), o.PolicyMaxTokens, o.HasWriteRail, b.vocab)
	if err != nil {
		return nil, err
	}
	b.policy, b.policySource = pol, src
	b.policyFallback = src != PolicyCustom
	if w != "" {
		b.warnings = append(b.warnings, w)
	}

	stableTmpl, turnTmpl, w := loadPromptContext(filepath.Join(o.Dir, ContextFile))
	if w != "" {
		b.warnings = append(b.warnings, w)
	}
	b.stable = renderStable(stableTmpl, map[string]string{
		"engine.version": o.EngineVersion,
		"agent.id":       o.AgentID,
		"profile":        o.Profile,
	})
	b.turn = turnTmpl
	return b, nil
}

// WithWriteTools decides the policy block from the tools actually
// registered: when POLICY.md holds no rules, the embedded review policy
// applies exactly when one of names is the reviewed-write tool (its name
// ends in the vocabulary's writeVerbSuffix). A custom policy, and the safe
// mode's absence of policy, stay as they are. It returns b itself when
// nothing changes, otherwise a copy: a Bundle is never modified.
func (b *Bundle) WithWriteTools(names []string) *Bundle {
	if !b.policyFallback || b.safeMode {
		return b
	}
	text, source := "", PolicyNone
	if name, _ := b.vocab.WriteTool(names); name != "" {
		text, source = EmbeddedPolicy(b.vocab), PolicyEmbedded
	}
	if source == b.policySource {
		return b
	}
	c := *b
	c.policy, c.policySource = text, source
	c.warnings = slices.Clone(b.warnings)
	return &c
}

// Dir is the bundle directory.
func (b *Bundle) Dir() string { return b.dir }

// Vocab is the effective vocabulary.
func (b *Bundle) Vocab() Vocab { return b.vocab }

// MemoryNamespace is the local memory namespace derived from the
// vocabulary's writeNoun. DELTA_MEMORY_NAMESPACE, when set, wins over it; the
// caller applies that.
func (b *Bundle) MemoryNamespace() string { return b.vocab.Namespace() }

// Policy is the policy text placed in the spine ("" when there is none).
func (b *Bundle) Policy() string { return b.policy }

// PolicySource is PolicyCustom, PolicyEmbedded or PolicyNone.
func (b *Bundle) PolicySource() string { return b.policySource }

// StableContext is the rendered ## Stable block ("" when there is none).
func (b *Bundle) StableContext() string { return b.stable }

// HasTurnContext reports whether PROMPT_CONTEXT.md has a ## Turn template.
func (b *Bundle) HasTurnContext() bool { return b.turn != "" }

// SelfMaxBytes is the DELTA.md byte ceiling: the prompt budget for ReadSelf
// and the write cap for the self-file tool.
func (b *Bundle) SelfMaxBytes() int { return b.selfMaxBytes }

// SelfPath is the path of DELTA.md.
func (b *Bundle) SelfPath() string { return filepath.Join(b.dir, SelfFile) }

// Warnings are non-fatal problems found by Load, for the boot log.
func (b *Bundle) Warnings() []string { return append([]string(nil), b.warnings...) }

// readCapped reads at most limit bytes of a regular file. tooBig reports a
// file larger than limit (nothing is returned then).
func readCapped(path string, limit int64) (data []byte, tooBig bool, err error) {
	// Stat before Open: opening a FIFO for reading would block forever.
	st, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("read %s: not a regular file", path)
	}
	if st.Size() > limit {
		return nil, true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	// The file may grow between Stat and Read: read one byte past the limit
	// to notice.
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, true, nil
	}
	return data, false, nil
}
