// Package search is progressive tool loading: a large connector surface
// should not put hundreds of schemas in every prompt. Each turn a run is
// offered its resident set — every built-in tool, the pinned tools
// (DELTA_PINNED_TOOLS), the MCP tools whose suffix is a vocab core verb, and
// the tools activated earlier in the run. Every other tool the envelope
// allows stays searchable through the search_tools tool, which activates at
// most five matches per call. Activations are kept by the store per run id,
// so a resumed run gets them back.
//
// Search never widens the envelope: it only ranks, activates and offers
// names the envelope (Options.Allowed) already grants to the run's profile.
package search

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/tool"
)

// Name is the search tool's name.
const Name = "search_tools"

// MaxActivations is how many tools one search_tools call activates at most.
const MaxActivations = 5

// Guardrail is the 60-name threshold: an envelope this small is resident
// whole (nothing to search), and a requested pinned set larger than this
// falls back to the built-ins plus the core verbs (not capped again).
const Guardrail = 60

// Lookup finds a registered tool by name (a *tool.Registry).
type Lookup interface {
	Get(name string) (tool.Tool, bool)
}

// Options wires a Loader.
type Options struct {
	Tools Lookup
	// Allowed is the run's tool envelope for a profile, in index order.
	Allowed func(profile string) []string
	// Profile returns the profile a run was placed at, so search_tools
	// ranks inside that run's envelope.
	Profile   func(ctx context.Context, runID string) (string, error)
	Pinned    []string // DELTA_PINNED_TOOLS
	CoreVerbs []string // vocab.coreVerbs: MCP tool suffixes pinned in the core
	Logger    *slog.Logger
	Now       func() time.Time
}

// Activations keeps the tools activated per run (*store.Store).
// ToolActivations lists them oldest first; ActivateTools records names in
// the order given, leaving those already active as they were.
type Activations interface {
	ToolActivations(ctx context.Context, runID string) ([]string, error)
	ActivateTools(ctx context.Context, runID string, names []string, at time.Time) error
}

// Loader decides a run's resident tools and serves search_tools.
type Loader struct {
	st     Activations
	o      Options
	warned sync.Map // profile → the pinned-set guardrail warning was logged
}

// New fills defaults.
func New(st Activations, o Options) *Loader {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Loader{st: st, o: o}
}

// IsMCP reports whether name is an MCP tool (<server>__<tool>); every other
// registered tool is a built-in.
func IsMCP(name string) bool { return strings.Contains(name, "__") }

// Resident returns the tools offered to the run this turn, in envelope
// order. A failure to read the activations is logged and the run gets the
// pinned set: the model can search again.
func (l *Loader) Resident(ctx context.Context, runID, profile string) []string {
	allowed := l.o.Allowed(profile)
	if len(allowed) <= Guardrail {
		return withoutSearch(allowed)
	}
	active, err := l.Activated(ctx, runID)
	if err != nil {
		l.o.Logger.Warn("read tool activations; offering the pinned set", "run", runID, "err", err)
	}
	keep := l.pinned(profile, allowed)
	for _, n := range active {
		keep[n] = true
	}
	out := make([]string, 0, len(keep))
	for _, n := range allowed {
		if keep[n] {
			out = append(out, n)
		}
	}
	return out
}

// withoutSearch drops search_tools from an envelope that is resident whole:
// there is nothing left to find.
func withoutSearch(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == Name })
}

// pinned is the pinned set inside allowed: built-ins, DELTA_PINNED_TOOLS and
// core-verb MCP tools. Past the guardrail it warns once per profile and
// falls back to built-ins plus core verbs.
func (l *Loader) pinned(profile string, allowed []string) map[string]bool {
	base := make(map[string]bool)
	for _, n := range allowed {
		if !IsMCP(n) || l.coreVerb(n) {
			base[n] = true
		}
	}
	want := make(map[string]bool, len(base))
	for n := range base {
		want[n] = true
	}
	for _, n := range l.o.Pinned {
		if slices.Contains(allowed, n) {
			want[n] = true
		}
	}
	if len(want) <= Guardrail {
		return want
	}
	if _, seen := l.warned.LoadOrStore(profile, true); !seen {
		l.o.Logger.Warn("pinned tool set exceeds the guardrail; falling back to built-ins plus vocab core verbs",
			"profile", profile, "requested", len(want), "guardrail", Guardrail, "fallback", len(base))
	}
	return base
}

func (l *Loader) coreVerb(name string) bool {
	for _, v := range l.o.CoreVerbs {
		if v != "" && strings.HasSuffix(name, "__"+v) {
			return true
		}
	}
	return false
}

// Activated lists the tools activated for a run, oldest first.
func (l *Loader) Activated(ctx context.Context, runID string) ([]string, error) {
	return l.st.ToolActivations(ctx, runID)
}

// Match is one tool a search activated.
type Match struct {
	Name        string
	Description string // first line only
}

// Search ranks the run's allowed-but-not-resident tools against query,
// activates the best MaxActivations and returns them, best first.
func (l *Loader) Search(ctx context.Context, runID, profile, query string) ([]Match, error) {
	q := tokens(query)
	if len(q) == 0 {
		return nil, nil
	}
	allowed := l.o.Allowed(profile)
	resident := make(map[string]bool)
	for _, n := range l.Resident(ctx, runID, profile) {
		resident[n] = true
	}
	type scored struct {
		m     Match
		score int
	}
	var cands []scored
	for _, n := range allowed {
		if resident[n] || n == Name {
			continue
		}
		t, ok := l.o.Tools.Get(n)
		if !ok {
			continue
		}
		desc := t.Spec().Description
		if s := score(q, n, desc); s > 0 {
			cands = append(cands, scored{Match{Name: n, Description: firstLine(desc)}, s})
		}
	}
	// Stable: ties keep envelope order, so the same query activates the same tools.
	slices.SortStableFunc(cands, func(a, b scored) int { return b.score - a.score })
	if len(cands) > MaxActivations {
		cands = cands[:MaxActivations]
	}
	if len(cands) == 0 {
		return nil, nil
	}
	out := make([]Match, 0, len(cands))
	names := make([]string, 0, len(cands))
	for _, c := range cands {
		out = append(out, c.m)
		names = append(names, c.m.Name)
	}
	if err := l.st.ActivateTools(ctx, runID, names, l.o.Now()); err != nil {
		return nil, err
	}
	return out, nil
}

// score weighs a query token found in the tool's name twice one found only
// in its description.
func score(q []string, name, desc string) int {
	nt, dt := tokenSet(name), tokenSet(desc)
	s := 0
	for _, w := range q {
		switch {
		case nt[w]:
			s += 2
		case dt[w]:
			s++
		}
	}
	return s
}

// tokens splits s into distinct lowercase words (letters and digits), with
// a trailing plural "s" dropped so "notes" finds "note".
func tokens(s string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		f = stem(f)
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

func stem(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

func tokenSet(s string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range tokens(s) {
		m[w] = true
	}
	return m
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"words describing the capability you need, e.g. 'create calendar event'"`
}

// Tool is search_tools. It is read-only: re-running it after an
// interruption only activates the same tools again.
func (l *Loader) Tool() tool.Tool {
	return tool.Func(Name, "Find and load tools that are allowed in this run but not yet offered. "+
		"Give a few words describing the capability you need; up to 5 matching tools are loaded and "+
		"become callable from your next step.", true,
		func(ctx context.Context, c tool.Call, a searchArgs) (tool.Result, error) {
			if len(tokens(a.Query)) == 0 {
				return tool.Errorf("query is empty: give a few words describing the tool you need"), nil
			}
			profile, err := l.o.Profile(ctx, c.RunID)
			if err != nil {
				return tool.Result{}, fmt.Errorf("profile of run %s: %w", c.RunID, err)
			}
			ms, err := l.Search(ctx, c.RunID, profile, a.Query)
			if err != nil {
				return tool.Result{}, err
			}
			if len(ms) == 0 {
				return tool.Text(fmt.Sprintf("No further tools match %q. Try other words; the tools you already have stay available.", a.Query)), nil
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Loaded %d tool(s); call them from your next step:\n", len(ms))
			for _, m := range ms {
				fmt.Fprintf(&b, "- %s: %s\n", m.Name, m.Description)
			}
			return tool.Text(b.String()), nil
		})
}
