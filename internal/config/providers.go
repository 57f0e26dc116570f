package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/deltaharness/delta/internal/clip"
)

// DefaultBrokerAllowedHost is where subscription tokens may go when
// DELTA_BROKER_ALLOWED_HOSTS is unset.
const DefaultBrokerAllowedHost = "chatgpt.com"

// ProviderSpec is one DELTA_PROVIDERS fallback endpoint, with its
// credentials resolved through the lookup it was parsed with.
type ProviderSpec struct {
	Label         string   // "label", default the base URL's host
	BaseURL       string   // "baseUrl", required, absolute http(s)
	API           string   // APIAnthropic, APIResponses or APIChat ("api"; any other value = chat)
	Models        []string // "models" (string or array); nil = the primary's model list
	APIKey        string   // inline "apiKey" (even "") wins over the variable named by "apiKeyEnv"
	APIKeyEnv     string   // the variable name, for messages; never its value
	BrokerMintURL string   // "brokerMintUrl": this endpoint's credential comes from a broker
	BrokerAuth    string   // value of the variable named by "brokerAuthEnv"
	BrokerAuthEnv string
}

// BrokerSpec is the primary endpoint's subscription broker
// (DELTA_BROKER_TOKEN_URL, DELTA_BROKER_AUTH, DELTA_BROKER_ALLOWED_HOSTS).
type BrokerSpec struct {
	TokenURL     string   // "" = no broker
	Auth         string   // secret
	AllowedHosts []string // exact host names; default chatgpt.com
}

// providerFields are the keys a DELTA_PROVIDERS entry may carry.
var providerFields = map[string]bool{
	"baseUrl": true, "models": true, "api": true, "label": true,
	"apiKey": true, "apiKeyEnv": true, "brokerMintUrl": true, "brokerAuthEnv": true,
}

// ParseProviders parses DELTA_PROVIDERS. A null or malformed entry is
// skipped with a warning naming it, and the others stay: one bad fallback
// must not take the healthy ones down. Invalid JSON, or JSON that is not an
// array, drops the whole list with a warning. Unknown keys (static headers
// among them: fallbacks never carry any) are ignored with a warning. The
// error is reserved for a broker mint URL that would leak the broker
// credential: plain HTTP to a non-loopback host refuses to boot.
func ParseProviders(raw string, lookup func(string) (string, bool)) ([]ProviderSpec, []string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return nil, []string{fmt.Sprintf("DELTA_PROVIDERS ignored: want a JSON array of endpoint objects: %v", err)}, nil
	}
	var (
		out   []ProviderSpec
		warns []string
		errs  []error
	)
	for i, e := range entries {
		spec, w, err := parseProvider(e, lookup)
		for _, s := range w {
			warns = append(warns, fmt.Sprintf("DELTA_PROVIDERS[%d]: %s", i, s))
		}
		if err != nil {
			var fatal *brokerURLError
			if errors.As(err, &fatal) {
				errs = append(errs, &FieldError{Var: "DELTA_PROVIDERS", Err: fmt.Errorf("%w: entry %d: %v", ErrInvalid, i, err)})
				continue
			}
			warns = append(warns, fmt.Sprintf("DELTA_PROVIDERS[%d] skipped: %v", i, err))
			continue
		}
		out = append(out, spec)
	}
	if len(errs) > 0 {
		return nil, warns, errors.Join(errs...)
	}
	return out, warns, nil
}

type brokerURLError struct{ msg string }

func (e *brokerURLError) Error() string { return e.msg }

func parseProvider(doc json.RawMessage, lookup func(string) (string, bool)) (ProviderSpec, []string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil || fields == nil {
		return ProviderSpec{}, nil, errors.New("want a JSON object")
	}
	var warns []string
	var unknown []string
	for k := range fields {
		if !providerFields[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if strings.EqualFold(k, "headers") {
			warns = append(warns, "\"headers\" ignored: fallback providers send no static headers")
			continue
		}
		warns = append(warns, fmt.Sprintf("unknown key %q ignored", k))
	}
	str := func(k string) (string, bool, error) {
		v, ok := fields[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, fmt.Errorf("%q: want a string", k)
		}
		return s, true, nil
	}
	var p ProviderSpec
	base, ok, err := str("baseUrl")
	if err != nil {
		return p, warns, err
	}
	base = strings.TrimSpace(base)
	u, perr := url.Parse(base)
	if !ok || base == "" || perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return p, warns, errors.New("\"baseUrl\" is required: an absolute http or https URL")
	}
	p.BaseURL = base
	label, _, err := str("label")
	if err != nil {
		return p, warns, err
	}
	if p.Label = strings.TrimSpace(label); p.Label == "" {
		p.Label = u.Hostname()
	}
	api, _, err := str("api")
	if err != nil {
		return p, warns, err
	}
	switch strings.ToLower(strings.TrimSpace(api)) {
	case APIAnthropic:
		p.API = APIAnthropic
	case APIResponses:
		p.API = APIResponses
	default:
		p.API = APIChat
	}
	if p.Models, err = parseModels(fields["models"]); err != nil {
		return p, warns, err
	}
	key, inline, err := str("apiKey")
	if err != nil {
		return p, warns, err
	}
	if p.APIKeyEnv, _, err = str("apiKeyEnv"); err != nil {
		return p, warns, err
	}
	p.APIKeyEnv = strings.TrimSpace(p.APIKeyEnv)
	if _, present := fields["apiKey"]; present && !inline {
		inline = true // an explicit null counts as an inline empty key
	}
	switch {
	case inline:
		p.APIKey = strings.TrimSpace(key)
	case p.APIKeyEnv != "":
		v, found := lookup(p.APIKeyEnv)
		if !found {
			warns = append(warns, fmt.Sprintf("apiKeyEnv %s is not set; the endpoint gets no key", p.APIKeyEnv))
		}
		p.APIKey = strings.TrimSpace(v)
	}
	mint, _, err := str("brokerMintUrl")
	if err != nil {
		return p, warns, err
	}
	if mint = strings.TrimSpace(mint); mint != "" {
		if err := checkBrokerURL(mint); err != nil {
			return p, warns, &brokerURLError{msg: "\"brokerMintUrl\": " + err.Error()}
		}
		p.BrokerMintURL = mint
	}
	if p.BrokerAuthEnv, _, err = str("brokerAuthEnv"); err != nil {
		return p, warns, err
	}
	if p.BrokerAuthEnv = strings.TrimSpace(p.BrokerAuthEnv); p.BrokerAuthEnv != "" {
		v, found := lookup(p.BrokerAuthEnv)
		if !found {
			warns = append(warns, fmt.Sprintf("brokerAuthEnv %s is not set; the broker gets no bearer", p.BrokerAuthEnv))
		}
		p.BrokerAuth = strings.TrimSpace(v)
	}
	return p, warns, nil
}

// parseModels accepts one string or an array of strings; blanks drop out,
// and nothing left means "the primary's list" (nil).
func parseModels(v json.RawMessage) ([]string, error) {
	if len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one = strings.TrimSpace(one); one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil {
		return nil, errors.New("\"models\": want a string or an array of strings")
	}
	var out []string
	for _, m := range many {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out, nil
}

// checkBrokerURL: HTTPS, or plain HTTP on loopback for development.
func checkBrokerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return errors.New("want an absolute https URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); strings.EqualFold(h, "localhost") || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return errors.New("must be https (plain http only on loopback)")
	}
	return errors.New("want an absolute https URL")
}

// reservedHeaders are the names MODEL_HEADERS may not set: authentication,
// account, protocol, cookie and hop-by-hop headers belong to the wire
// client and the credential.
var reservedHeaders = map[string]bool{
	// authentication and account
	"authorization": true, "proxy-authorization": true, "x-api-key": true, "api-key": true,
	"chatgpt-account-id": true, "openai-organization": true, "openai-project": true,
	// protocol
	"host": true, "content-type": true, "content-length": true, "content-encoding": true,
	"accept": true, "accept-encoding": true, "anthropic-version": true, "expect": true,
	// cookies
	"cookie": true, "set-cookie": true,
	// hop-by-hop
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true,
}

// ParseModelHeaders parses MODEL_HEADERS: a JSON object of header name →
// string value for the primary endpoint only. A reserved name, an invalid
// name or a value with a line break refuses to boot.
func ParseModelHeaders(raw string) (map[string]string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || doc == nil {
		return nil, errors.New("want a JSON object of header name → string value")
	}
	names := make([]string, 0, len(doc))
	for k := range doc {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(doc))
	for _, k := range names {
		name := strings.TrimSpace(k)
		if !validHeaderName(name) {
			return nil, fmt.Errorf("%q is not a valid header name", clip.Runes(k, 60))
		}
		if reservedHeaders[strings.ToLower(name)] {
			return nil, fmt.Errorf("may not set the reserved header '%s'", strings.ToLower(name))
		}
		var v string
		if err := json.Unmarshal(doc[k], &v); err != nil {
			return nil, fmt.Errorf("header '%s': want a string value", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("header '%s': value may not contain line breaks", name)
		}
		out[name] = v
	}
	return out, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// ParseBroker reads the primary endpoint's broker variables through lookup.
func ParseBroker(lookup func(string) (string, bool)) (BrokerSpec, error) {
	get := func(name string) string { v, _ := lookup(name); return strings.TrimSpace(v) }
	b := BrokerSpec{TokenURL: get("DELTA_BROKER_TOKEN_URL"), Auth: get("DELTA_BROKER_AUTH")}
	var errs []error
	if b.TokenURL != "" {
		if err := checkBrokerURL(b.TokenURL); err != nil {
			errs = append(errs, &FieldError{Var: "DELTA_BROKER_TOKEN_URL", Value: b.TokenURL, Err: fmt.Errorf("%w: %v", ErrInvalid, err)})
		}
	}
	for part := range strings.SplitSeq(get("DELTA_BROKER_ALLOWED_HOSTS"), ",") {
		h := strings.ToLower(strings.TrimSpace(part))
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/:@ *") {
			errs = append(errs, &FieldError{Var: "DELTA_BROKER_ALLOWED_HOSTS", Value: h,
				Err: fmt.Errorf("%w: want exact host names such as chatgpt.com (no scheme, port, path or wildcard)", ErrInvalid)})
			continue
		}
		b.AllowedHosts = append(b.AllowedHosts, h)
	}
	if len(b.AllowedHosts) == 0 {
		b.AllowedHosts = []string{DefaultBrokerAllowedHost}
	}
	if len(errs) > 0 {
		return BrokerSpec{}, errors.Join(errs...)
	}
	return b, nil
}

// providers is DELTA_PROVIDERS for Load: entries, plus warnings for Config.Warnings.
func (l *loader) providers(name string) ([]ProviderSpec, []string) {
	v, _ := l.lookup(name)
	specs, warns, err := ParseProviders(v, l.lookup)
	if err != nil {
		l.errs = append(l.errs, err)
	}
	return specs, warns
}

// modelHeaders is MODEL_HEADERS for Load.
func (l *loader) modelHeaders(name string) map[string]string {
	v, _ := l.get(name)
	h, err := ParseModelHeaders(v)
	if err != nil {
		l.fail(name, "", "%v", err) // header values may hold credentials: never echoed
		return nil
	}
	return h
}

// broker is the DELTA_BROKER_* group for Load.
func (l *loader) broker() BrokerSpec {
	b, err := ParseBroker(l.lookup)
	if err != nil {
		l.errs = append(l.errs, err)
	}
	return b
}
