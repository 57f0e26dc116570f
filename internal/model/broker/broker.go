// Package broker holds the short-lived subscription credential of the Codex
// sign-in lane: a bearer token and account id minted by a
// trusted broker service, cached until five minutes before it expires, and
// attached only to requests bound for allowlisted HTTPS hosts.
//
// A mint is a GET of the broker URL with an optional bearer, bounded by 15 s.
// Concurrent callers that find no usable token share one mint. The broker
// URL must be HTTPS except on loopback, where development brokers live.
//
// Transport wraps an http.RoundTripper so that a wire client (the Responses
// client) carries the token without knowing about it. When minting fails
// with a broker status, the transport answers with that status so the
// cascade applies its rules: 401/403 re-auth once, 409 moves to the next
// provider, 429 cools the shared credential.
package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/clip"
)

// Defaults applied by New.
const (
	DefaultTimeout     = 15 * time.Second
	DefaultMargin      = 5 * time.Minute
	DefaultAllowedHost = "chatgpt.com"
	// AccountHeader carries the account id next to the bearer.
	AccountHeader = "chatgpt-account-id"
	maxMintBody   = 64 << 10
)

// Options configure a Broker.
type Options struct {
	URL          string   // DELTA_BROKER_TOKEN_URL (or a provider's brokerMintUrl)
	Auth         string   // DELTA_BROKER_AUTH: bearer presented to the broker; "" = none
	AllowedHosts []string // DELTA_BROKER_ALLOWED_HOSTS; default chatgpt.com
	HTTPClient   *http.Client
	Timeout      time.Duration // one mint; default 15 s
	Margin       time.Duration // a token must outlive now+Margin; default 5 min
	Now          func() time.Time
	Logger       *slog.Logger
}

// Token is one minted subscription credential.
type Token struct {
	AccessToken string
	AccountID   string
	ExpiresAt   time.Time
}

// MintError is a broker that answered with an HTTP error status.
type MintError struct {
	Status  int
	Message string
}

func (e *MintError) Error() string {
	return fmt.Sprintf("mint subscription token: broker answered http %d: %s", e.Status, e.Message)
}

// ErrHostNotAllowed refuses to send the subscription token to a host outside
// the allowlist, or over plain HTTP.
var ErrHostNotAllowed = errors.New("subscription token refused: host not in DELTA_BROKER_ALLOWED_HOSTS or not HTTPS")

// Broker mints, caches and hands out the subscription token. It is safe for
// concurrent use.
type Broker struct {
	o       Options
	url     string
	allowed map[string]bool

	mu       sync.Mutex
	cached   *Token
	inflight *mint
	mints    int
}

// mint is one broker request that several callers wait on.
type mint struct {
	waiters int // callers sharing it (tests watch it to prove coalescing)
	done    chan struct{}
	tok     Token
	err     error
}

// New validates o and fills defaults. It does not contact the broker.
func New(o Options) (*Broker, error) {
	u, err := url.Parse(strings.TrimSpace(o.URL))
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("broker token URL %q: want an absolute https URL", o.URL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("broker token URL %q: must be https (plain http only on loopback)", redact(u))
		}
	default:
		return nil, fmt.Errorf("broker token URL %q: want an absolute https URL", redact(u))
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Margin <= 0 {
		o.Margin = DefaultMargin
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	hosts := o.AllowedHosts
	if len(hosts) == 0 {
		hosts = []string{DefaultAllowedHost}
	}
	b := &Broker{o: o, url: u.String(), allowed: map[string]bool{}}
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			b.allowed[h] = true
		}
	}
	return b, nil
}

// Mints is the number of broker requests made so far.
func (b *Broker) Mints() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mints
}

// Token returns the cached token while it outlives now+Margin, else mints
// one. Concurrent callers share a single mint; a caller whose ctx ends stops
// waiting without cancelling the mint the others wait on.
func (b *Broker) Token(ctx context.Context) (Token, error) {
	b.mu.Lock()
	if t := b.cached; t != nil && t.ExpiresAt.After(b.o.Now().Add(b.o.Margin)) {
		b.mu.Unlock()
		return *t, nil
	}
	m := b.inflight
	if m == nil {
		m = &mint{done: make(chan struct{})}
		b.inflight = m
		b.mints++
		go b.run(context.WithoutCancel(ctx), m)
	}
	m.waiters++
	b.mu.Unlock()
	select {
	case <-m.done:
		return m.tok, m.err
	case <-ctx.Done():
		return Token{}, fmt.Errorf("mint subscription token: %w", ctx.Err())
	}
}

func (b *Broker) run(ctx context.Context, m *mint) {
	m.tok, m.err = b.fetch(ctx)
	b.mu.Lock()
	if m.err == nil {
		t := m.tok
		b.cached = &t
	}
	b.inflight = nil
	b.mu.Unlock()
	if m.err != nil {
		b.o.Logger.Warn("subscription token mint failed", "err", m.err)
	}
	close(m.done)
}

// Invalidate drops the cached token: the backend refused it (401/403), so
// the next Token mints afresh.
func (b *Broker) Invalidate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cached = nil
}

// drop forgets tok if it is still the cached one, so that a refusal of an
// old token does not throw away a fresh one minted meanwhile.
func (b *Broker) drop(access string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cached != nil && b.cached.AccessToken == access {
		b.cached = nil
	}
}

func (b *Broker) fetch(ctx context.Context) (Token, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return Token{}, fmt.Errorf("mint subscription token: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if b.o.Auth != "" {
		req.Header.Set("Authorization", "Bearer "+b.o.Auth)
	}
	res, err := b.o.HTTPClient.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("mint subscription token: %s", b.scrub(err.Error()))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxMintBody))
	if err != nil {
		return Token{}, fmt.Errorf("mint subscription token: read reply: %s", b.scrub(err.Error()))
	}
	if res.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		msg = clip.Bytes(strings.ToValidUTF8(msg, "\uFFFD"), 200)
		return Token{}, &MintError{Status: res.StatusCode, Message: b.scrub(msg)}
	}
	return parseToken(body, b.o.Now().Add(b.o.Margin), b.o.Margin)
}

// parseToken accepts a broker reply only with a non-empty accessToken and
// accountId and an ISO 8601 expiresAt after notBefore.
func parseToken(body []byte, notBefore time.Time, margin time.Duration) (Token, error) {
	var doc struct {
		AccessToken string `json:"accessToken"`
		AccountID   string `json:"accountId"`
		ExpiresAt   string `json:"expiresAt"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Token{}, errors.New("mint subscription token: broker reply is not a JSON token object")
	}
	t := Token{AccessToken: strings.TrimSpace(doc.AccessToken), AccountID: strings.TrimSpace(doc.AccountID)}
	if t.AccessToken == "" || t.AccountID == "" {
		return Token{}, errors.New("mint subscription token: broker reply lacks accessToken or accountId")
	}
	exp, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(doc.ExpiresAt))
	if err != nil {
		return Token{}, fmt.Errorf("mint subscription token: expiresAt %q is not an ISO 8601 time", clip.Bytes(doc.ExpiresAt, 64))
	}
	if !exp.After(notBefore) {
		return Token{}, fmt.Errorf("mint subscription token: token expires at %s, less than %s from now", exp.UTC().Format(time.RFC3339), margin)
	}
	t.ExpiresAt = exp
	return t, nil
}

// scrub keeps the broker's own credential out of messages.
func (b *Broker) scrub(s string) string {
	if b.o.Auth != "" {
		s = strings.ReplaceAll(s, b.o.Auth, "[redacted]")
	}
	return s
}

// Allowed reports whether the token may be sent to u: HTTPS, and a host
// name exactly in the allowlist (no suffix or subdomain matching).
func (b *Broker) Allowed(u *url.URL) bool {
	if u == nil || u.Scheme != "https" {
		return false
	}
	return b.allowed[strings.ToLower(u.Hostname())]
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact drops the userinfo and query of a URL shown in an error.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}
