package config

import "strings"

// Capability tiers. The daemon's Profile is a ceiling: a request may narrow
// trusted to safe, never widen.
const (
	ProfileTrusted = "trusted"
	ProfileSafe    = "safe"
)

// Budget is the loop guard for one run: successful main-loop model calls,
// fresh tokens (fresh input + output) and recorded model dollars.
type Budget struct {
	Steps   int
	Tokens  int64
	CostUSD float64
}

// Profile defaults, reported by /v1/status.
var profileBudgets = map[string]Budget{
	ProfileTrusted: {Steps: 100, Tokens: 2_000_000, CostUSD: 5},
	ProfileSafe:    {Steps: 30, Tokens: 250_000, CostUSD: 1},
}

// ProfileDefaults returns the built-in budget of a canonical profile name.
func ProfileDefaults(profile string) Budget { return profileBudgets[profile] }

// CanonicalProfile maps a profile name or its pre-0.2.7 alias (work, chat)
// to trusted or safe. ok is false for anything else.
func CanonicalProfile(s string) (profile string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case ProfileTrusted, "work":
		return ProfileTrusted, true
	case ProfileSafe, "chat":
		return ProfileSafe, true
	}
	return "", false
}

// rank orders tiers by permission: a higher rank may use more.
func rank(p string) int {
	if p == ProfileTrusted {
		return 1
	}
	return 0
}

// Placement returns the tier a request runs at: the requested one when it is
// known and no wider than the daemon's ceiling, otherwise the ceiling. An
// empty, unknown or wider request stays at the ceiling.
func (c Config) Placement(requested string) string {
	ceiling := c.Profile
	if _, ok := profileBudgets[ceiling]; !ok {
		ceiling = ProfileSafe // a zero Config fails closed
	}
	p, ok := CanonicalProfile(requested)
	if !ok || rank(p) > rank(ceiling) {
		return ceiling
	}
	return p
}

// PlaceRequest is Placement for a request's metadata.profile: known is
// false when requested is neither empty nor a profile name (safe, trusted,
// or their aliases chat, work), so a typo is refused instead of running
// the request at the ceiling it meant to narrow.
func (c Config) PlaceRequest(requested string) (tier string, known bool) {
	_, ok := CanonicalProfile(requested)
	return c.Placement(requested), ok || strings.TrimSpace(requested) == ""
}

// Budget returns the effective budget for a run requesting profile (placed
// with Placement). At the ceiling it is the profile default overridden by
// DELTA_MAX_STEPS/TOKENS/COST_USD. A narrower placement takes, per axis, the
// smaller of its own default and the ceiling's effective budget, so narrowing
// can never raise a limit the operator lowered.
func (c Config) Budget(profile string) Budget {
	ceiling := c.Placement("")
	top := profileBudgets[ceiling]
	if c.MaxSteps != nil {
		top.Steps = max(*c.MaxSteps, 1)
	}
	if c.MaxTokens != nil {
		top.Tokens = *c.MaxTokens
	}
	if c.MaxCostUSD != nil {
		top.CostUSD = *c.MaxCostUSD
	}
	placed := c.Placement(profile)
	if placed == ceiling {
		return top
	}
	own := profileBudgets[placed]
	return Budget{
		Steps:   min(own.Steps, top.Steps),
		Tokens:  min(own.Tokens, top.Tokens),
		CostUSD: min(own.CostUSD, top.CostUSD),
	}
}
