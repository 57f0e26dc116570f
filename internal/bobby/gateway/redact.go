package gateway

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Redaction of credentials in tool results.
//
// A form whose method is GET puts what was typed into the page URL, so a
// password bobby typed would come back in every result that reports a URL
// (page_list, navigation outcomes, snapshots, network_log, wait_for's
// observed URL, error messages). Every tool result therefore passes
// through redactResult before it leaves the gateway:
//
//   - the value of a query or fragment parameter whose name looks like a
//     credential (password, passwd, pwd, token, secret, api_key, apikey)
//     becomes redactedMarker, and so does the password of a URL's userinfo;
//   - a value bobby itself typed into a password field (type_text,
//     control_action setText, intent_fill, intent_complete_form) is
//     replaced wherever it appears, raw, percent-encoded as a query value
//     (url.QueryEscape, form encoding) or as a path segment
//     (url.PathEscape), and in the JSON spelling of each.
//
// Typed secrets are remembered per principal, in memory only, never
// logged, and forgotten oldest-first beyond maxSecretsPerPrincipal.

// redactedMarker replaces a redacted value. It needs no escaping in a URL,
// in JSON or in text, so a redacted URL stays one.
const redactedMarker = "REDACTED"

// minSecretRunes is the shortest typed secret redacted by value: a shorter
// one would rewrite ordinary text all over the results (it is still
// redacted by parameter name).
const minSecretRunes = 4

// maxSecretsPerPrincipal bounds the typed secrets a principal keeps.
const maxSecretsPerPrincipal = 64

// credentialParam matches a query or fragment parameter named like a
// credential, with its (non-empty) value. The separator may be JSON's
// escape of "&" (encoding/json writes \u0026). The name may carry a prefix
// or suffix (new_password, access_token, user[password]). The value ends
// where a URL query value ends, or at a quote, backslash or space of the
// text around it.
var credentialParam = regexp.MustCompile(`(?i)((?:[?&#;]|\\u0026)[A-Za-z0-9_.\-\[\]%]*(?:password|passwd|pwd|token|secret|api_key|apikey|api-key)[A-Za-z0-9_.\-\[\]%]*=)([^&#\s"'\\<>]+)`)

// userinfoPassword matches the password of a URL's userinfo
// (scheme://user:password@host).
var userinfoPassword = regexp.MustCompile(`(://[^/?#@\s:"'\\]+:)([^/?#@\s"'\\]+)@`)

// redactString applies both redactions to s.
func redactString(s string, secrets []string) string {
	for _, v := range secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redactedMarker)
		}
	}
	if strings.Contains(s, "=") {
		s = credentialParam.ReplaceAllStringFunc(s, func(m string) string {
			sub := credentialParam.FindStringSubmatch(m)
			if sub[2] == redactedMarker {
				return m
			}
			return sub[1] + redactedMarker
		})
	}
	if strings.Contains(s, "@") {
		s = userinfoPassword.ReplaceAllString(s, "${1}"+redactedMarker+"@")
	}
	return s
}

// secretSpellings returns the forms a typed secret can take in a result:
// itself, percent-encoded as a query value and as a path segment, and the
// JSON string spelling of each. Longest first, so a longer spelling is
// replaced before a shorter one inside it.
func secretSpellings(v string) []string {
	var out []string
	for _, s := range []string{
		v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		formEncode(v), strings.ReplaceAll(formEncode(v), "+", "%20"),
	} {
		b, _ := json.Marshal(s)
		for _, sp := range []string{s, string(b[1 : len(b)-1])} {
			if sp != "" && !slices.Contains(out, sp) {
				out = append(out, sp)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// formEncode encodes v as a browser encodes a form value in a GET URL
// (application/x-www-form-urlencoded): ASCII letters, digits and "*-._"
// stay, a space is "+", every other byte is %XX. It differs from
// url.QueryEscape on "*" and "~".
func formEncode(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '*', c == '-', c == '.', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// secretBook remembers, per principal, the secrets bobby typed for it.
type secretBook struct {
	mu sync.Mutex
	// by holds each principal's secrets, oldest first.
	by map[string][]string
}

// remember records v as a secret of principal. Too short values are not
// kept (see minSecretRunes).
func (b *secretBook) remember(principal, v string) {
	if utf8.RuneCountInString(v) < minSecretRunes {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string][]string{}
	}
	list := b.by[principal]
	if i := slices.Index(list, v); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	list = append(list, v)
	if len(list) > maxSecretsPerPrincipal {
		list = list[len(list)-maxSecretsPerPrincipal:]
	}
	b.by[principal] = list
}

// spellings returns every spelling of principal's secrets, longest first.
func (b *secretBook) spellings(principal string) []string {
	b.mu.Lock()
	list := slices.Clone(b.by[principal])
	b.mu.Unlock()
	var out []string
	for _, v := range list {
		out = append(out, secretSpellings(v)...)
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactResult redacts credentials in a tool result's structured content
// and text content, in place. The structured content is redacted string by
// string after decoding (a JSON spelling can escape any character, so
// matching its bytes would miss some); it is re-encoded only when a string
// changed, and then with its object keys in sorted order.
func redactResult(res *mcp.CallToolResult, secrets []string) {
	if res == nil {
		return
	}
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		if red, changed := redactJSON(raw, secrets); changed {
			res.StructuredContent = red
		}
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = redactString(t.Text, secrets)
		}
	}
}

// redactJSON redacts every string (keys and values) of a JSON document;
// changed is false, and raw returned as is, when nothing needed it.
func redactJSON(raw json.RawMessage, secrets []string) (out json.RawMessage, changed bool) {
	if !mayNeedRedaction(raw, secrets) {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON (never the case for a result bobby encoded): redact it
		// as text rather than pass it through.
		b, _ := json.Marshal(redactString(string(raw), secrets))
		return b, true
	}
	v, changed = redactValue(v, secrets)
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(redactString(string(raw), secrets))
	}
	return b, true
}

// mayNeedRedaction is false when no string of the JSON document raw can
// need redacting, so the common result is passed on without being decoded:
// no secret is typed, and raw holds neither "=" (a credential parameter)
// nor "@" (a URL's userinfo) nor a \u escape that could spell either.
func mayNeedRedaction(raw []byte, secrets []string) bool {
	return len(secrets) > 0 || bytes.ContainsAny(raw, "=@") || bytes.Contains(raw, []byte(`\u`))
}

func redactValue(v any, secrets []string) (any, bool) {
	switch t := v.(type) {
	case string:
		r := redactString(t, secrets)
		return r, r != t
	case []any:
		changed := false
		for i := range t {
			var c bool
			t[i], c = redactValue(t[i], secrets)
			changed = changed || c
		}
		return t, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(t))
		for k, e := range t {
			rk := redactString(k, secrets)
			re, c := redactValue(e, secrets)
			changed = changed || c || rk != k
			out[rk] = re
		}
		return out, changed
	}
	return v, false
}
