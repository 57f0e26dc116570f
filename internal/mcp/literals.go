package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/vault"
)

// minLiteral is the shortest literal credential scrubbed: shorter values
// are rarely secrets and too often ordinary words.
const minLiteral = 8

// credentialEnv matches the env names whose values are credentials.
var credentialEnv = regexp.MustCompile(`(?i)token|key|secret|pass|pwd|auth|cred|cookie|session|private|signature|dsn`)

// plainHeaders are the headers whose values are not credentials; every
// other configured header is treated as one.
var plainHeaders = []string{"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Content-Type", "Mcp-Protocol-Version", "User-Agent"}

// literalSecrets builds the replacer of the credentials written literally
// in a server's entry, not as {{vault:NAME}} references (the vault scrubs
// those itself): header values, the values of env variables whose names
// read as credentials, and the URL's password, query values and the path
// segments that read as keys. Each
// becomes a marker naming where it came from, in its raw, percent-encoded
// and JSON-escaped forms — a careless server echoes them in any of those.
// nil when the entry holds none.
func literalSecrets(cfg config.MCPServer) *strings.Replacer {
	forms := map[string]string{}
	add := func(marker, v string) {
		if len(v) < minLiteral || len(vault.References(v)) > 0 {
			return
		}
		for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v), jsonEscape(v, true), jsonEscape(v, false)} {
			forms[f] = marker
		}
	}
	for k, v := range cfg.Headers {
		if slices.Contains(plainHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		marker := "[mcp:" + cfg.Name + " header " + k + "]"
		add(marker, v)
		if _, cred, ok := strings.Cut(v, " "); ok { // "Bearer <token>", "Basic <…>"
			add(marker, strings.TrimSpace(cred))
		}
	}
	for k, v := range cfg.Env {
		if credentialEnv.MatchString(k) {
			add("[mcp:"+cfg.Name+" env "+k+"]", v)
		} else if u, err := url.Parse(v); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok {
				add("[mcp:"+cfg.Name+" env "+k+"]", p) // postgres://user:password@…
			}
		}
	}
	if u, err := url.Parse(cfg.URL); err == nil && cfg.URL != "" {
		if p, ok := u.User.Password(); ok {
			add("[mcp:"+cfg.Name+" url]", p)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add("[mcp:"+cfg.Name+" url]", v)
			}
		}
		for seg := range strings.SplitSeq(u.Path, "/") {
			if keyLike(seg) {
				add("[mcp:"+cfg.Name+" url]", seg)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	keys := make([]string, 0, len(forms))
	for f := range forms {
		keys = append(keys, f)
	}
	// Longest first, so a value that contains another is replaced whole.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, forms[k])
	}
	return strings.NewReplacer(pairs...)
}

// keyLike reports whether a URL path segment reads as a credential:
// hosted MCP servers often put their key in the path
// (https://host/api/<key>/mcp). Sixteen characters or more with a digit
// among them: route names ("mcp", "v1", "streamable-http") are shorter or
// have none, keys and UUIDs have both.
func keyLike(seg string) bool {
	return len(seg) >= 16 && strings.ContainsAny(seg, "0123456789")
}

// jsonEscape is v as it appears inside a JSON string, without the quotes.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// redact scrubs a text a server produced or caused — a result, an error,
// a stderr line — of its literal credentials, then of every vault value.
func (s *server) redact(text string) string {
	if s.literals != nil {
		text = s.literals.Replace(text)
	}
	return s.m.o.Redact(text)
}

// redactHandler scrubs every log record of one server, the SDK's own
// included: errors there quote what the server answered.
type redactHandler struct {
	inner  slog.Handler
	redact func(string) string
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return redactHandler{inner: h.inner.WithAttrs(red), redact: h.redact}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{inner: h.inner.WithGroup(name), redact: h.redact}
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.redact(x.Error()))
		default:
			return slog.String(a.Key, h.redact(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
