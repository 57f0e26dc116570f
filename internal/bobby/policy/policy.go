// Package policy holds bobby's principals and capabilities: who a bearer
// token is, what that principal may do, and until when.
//
// A Principal is an authenticated identity with a capability Set and an
// optional expiry. Registry authenticates bearer tokens by comparing the
// SHA-256 of the presented token with every configured hash in constant
// time, so neither a token's validity nor its position leaks through timing.
// Capabilities are the only authority in bobby: the gateway advertises a tool
// only to principals holding its capability and re-checks on every call.
package policy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Capability is one principal scope.
type Capability string

// The capabilities bobby knows.
const (
	// BrowserMutate covers navigation and every page-changing action.
	BrowserMutate Capability = "browser:mutate"
	// PageRead covers reading page context: snapshots, inspect, retained answers.
	PageRead Capability = "page:read"
	// ArtifactCapture covers screenshots (which become artifact:// resources).
	ArtifactCapture Capability = "artifact:capture"
	// ArtifactRead covers reading artifact:// resources.
	ArtifactRead Capability = "artifact:read"
	// FileUpload covers setting files on file inputs.
	FileUpload Capability = "file:upload"
	// BrowserFingerprint covers sessions with fingerprint protection.
	BrowserFingerprint Capability = "browser:fingerprint"
	// BrowserHumanize covers sessions with humanized input timing.
	BrowserHumanize Capability = "browser:humanize"
)

// All lists every capability in a stable order.
var All = []Capability{BrowserMutate, PageRead, ArtifactCapture, ArtifactRead, FileUpload, BrowserFingerprint, BrowserHumanize}

// DefaultLocal is the capability set of an unconfigured local stdio
// principal: enough to browse, read and capture, but not to upload files or
// change the browser's fingerprint, which must be granted explicitly.
var DefaultLocal = []Capability{BrowserMutate, PageRead, ArtifactCapture, ArtifactRead}

// Errors.
var (
	ErrUnknownCapability = errors.New("unknown capability")
	ErrInvalidToken      = errors.New("invalid bearer token")
	ErrExpired           = errors.New("credential expired")
)

// ParseCapability validates a capability name.
func ParseCapability(s string) (Capability, error) {
	c := Capability(strings.TrimSpace(s))
	if slices.Contains(All, c) {
		return c, nil
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownCapability, s, joinCaps(All))
}

func joinCaps(cs []Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}

// Set is an immutable set of capabilities.
type Set struct{ bits uint16 }

func bit(c Capability) uint16 {
	i := slices.Index(All, c)
	if i < 0 {
		return 0
	}
	return 1 << i
}

// NewSet builds a set; unknown capabilities are ignored (parse first).
func NewSet(cs ...Capability) Set {
	var s Set
	for _, c := range cs {
		s.bits |= bit(c)
	}
	return s
}

// ParseSet parses capability names; the first unknown name is an error.
func ParseSet(names []string) (Set, error) {
	var s Set
	for _, n := range names {
		c, err := ParseCapability(n)
		if err != nil {
			return Set{}, err
		}
		s.bits |= bit(c)
	}
	return s, nil
}

// Has reports whether every given capability is in the set. Has() with no
// arguments is true: a tool with no requirement is open to every principal.
func (s Set) Has(cs ...Capability) bool {
	for _, c := range cs {
		b := bit(c)
		if b == 0 || s.bits&b == 0 {
			return false
		}
	}
	return true
}

// Intersect returns the capabilities in both sets.
func (s Set) Intersect(o Set) Set { return Set{bits: s.bits & o.bits} }

// List returns the capabilities in All's order.
func (s Set) List() []Capability {
	out := []Capability{}
	for _, c := range All {
		if s.bits&bit(c) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Strings returns the capability names in All's order.
func (s Set) Strings() []string {
	out := []string{}
	for _, c := range s.List() {
		out = append(out, string(c))
	}
	return out
}

// Missing returns the capabilities of want not in s.
func (s Set) Missing(want ...Capability) []Capability {
	var out []Capability
	for _, c := range want {
		if !s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Principal is an authenticated identity.
type Principal struct {
	Name         string
	Capabilities Set
	// ExpiresAt is when the credential stops working; zero means never.
	ExpiresAt time.Time
	// tokenHash is the SHA-256 of the bearer token (zero when none).
	tokenHash [32]byte
	hasToken  bool
}

// NewPrincipal builds a principal. tokenSHA256Hex may be empty (a local
// stdio principal with no token).
func NewPrincipal(name string, caps Set, expiresAt time.Time, tokenSHA256Hex string) (Principal, error) {
	if name == "" {
		return Principal{}, errors.New("principal name is empty")
	}
	p := Principal{Name: name, Capabilities: caps, ExpiresAt: expiresAt}
	if tokenSHA256Hex != "" {
		raw, err := hex.DecodeString(tokenSHA256Hex)
		if err != nil || len(raw) != sha256.Size {
			return Principal{}, fmt.Errorf("principal %s: token hash must be 64 hex digits", name)
		}
		copy(p.tokenHash[:], raw)
		p.hasToken = true
	}
	return p, nil
}

// Expired reports whether the credential has expired at now.
func (p Principal) Expired(now time.Time) bool {
	return !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt)
}

// ExpiresWithin reports whether the credential expires (or has expired)
// within d of now. A credential with no expiry never does.
func (p Principal) ExpiresWithin(now time.Time, d time.Duration) bool {
	return !p.ExpiresAt.IsZero() && p.ExpiresAt.Sub(now) < d
}

// MatchesToken reports, in constant time, whether token is this principal's.
func (p Principal) MatchesToken(token string) bool {
	sum := HashToken(token)
	return p.hasToken && subtle.ConstantTimeCompare(sum[:], p.tokenHash[:]) == 1
}

// HashToken is the SHA-256 of a bearer token.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// HashTokenHex is HashToken as lowercase hex, the form config files hold.
func HashTokenHex(token string) string {
	sum := HashToken(token)
	return hex.EncodeToString(sum[:])
}

// Registry authenticates bearer tokens against configured principals.
// It is immutable and safe for concurrent use.
type Registry struct {
	principals []Principal
}

// NewRegistry checks names and token hashes are unique.
func NewRegistry(ps []Principal) (*Registry, error) {
	names := map[string]bool{}
	hashes := map[[32]byte]bool{}
	for _, p := range ps {
		if names[p.Name] {
			return nil, fmt.Errorf("duplicate principal %q", p.Name)
		}
		names[p.Name] = true
		if !p.hasToken {
			return nil, fmt.Errorf("principal %q has no token", p.Name)
		}
		if hashes[p.tokenHash] {
			return nil, fmt.Errorf("principal %q shares a token with another principal", p.Name)
		}
		hashes[p.tokenHash] = true
	}
	return &Registry{principals: slices.Clone(ps)}, nil
}

// Authenticate maps a bearer token to its principal. Every configured hash
// is compared, whatever matched first, so timing says nothing about which
// principal (if any) the token belongs to. An expired credential returns the
// principal together with ErrExpired.
func (r *Registry) Authenticate(token string, now time.Time) (Principal, error) {
	sum := HashToken(token)
	found := -1
	for i := range r.principals {
		p := &r.principals[i]
		if subtle.ConstantTimeCompare(sum[:], p.tokenHash[:]) == 1 {
			found = i
		}
	}
	if token == "" || found < 0 {
		return Principal{}, ErrInvalidToken
	}
	p := r.principals[found]
	if p.Expired(now) {
		return p, ErrExpired
	}
	return p, nil
}

// Lookup returns the principal named name.
func (r *Registry) Lookup(name string) (Principal, bool) {
	for _, p := range r.principals {
		if p.Name == name {
			return p, true
		}
	}
	return Principal{}, false
}

// Principals returns a copy of every principal.
func (r *Registry) Principals() []Principal { return slices.Clone(r.principals) }

// Len is the number of principals.
func (r *Registry) Len() int { return len(r.principals) }

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal carried by ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// SameCredential reports whether q is p with the same token, capabilities
// and expiry: a reload that keeps a principal this way keeps its sessions.
func (p Principal) SameCredential(q Principal) bool {
	return p.Name == q.Name && p.hasToken == q.hasToken && p.tokenHash == q.tokenHash &&
		p.Capabilities == q.Capabilities && p.ExpiresAt.Equal(q.ExpiresAt)
}
