package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// OTLPConfig is the OTLP trace exporter's part of the standard OTEL_*
// variables, parsed here so the exporter is given every value explicitly.
type OTLPConfig struct {
	// TracesURL is where spans are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// as is, or OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended; empty
	// = the exporter is off.
	TracesURL string
	// Headers go with every request (OTEL_EXPORTER_OTLP_HEADERS); they
	// usually hold the backend's credential.
	Headers map[string]string
	// ServiceName is the resource's service.name (OTEL_SERVICE_NAME,
	// default delta).
	ServiceName string
	// Resource holds the extra resource attributes (OTEL_RESOURCE_ATTRIBUTES).
	Resource map[string]string
	// Gzip compresses request bodies (OTEL_EXPORTER_OTLP_COMPRESSION=gzip;
	// none by default, as in the OTLP exporter specification).
	Gzip bool
	// CAFile, CertFile and KeyFile are PEM files for TLS to the receiver
	// (OTEL_EXPORTER_OTLP_CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY; the
	// _TRACES_ variants win): the roots to trust instead of the system's,
	// and a client certificate.
	CAFile, CertFile, KeyFile string
	// CAVar, CertVar and KeyVar name the variable each file came from (the
	// _TRACES_ variant or the general one), for the exporter's errors.
	CAVar, CertVar, KeyVar string
}

// DefaultOTLPServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultOTLPServiceName = "delta"

// otlp reads the OTLP variables. Header values are never echoed in an
// error, since they usually carry a credential.
func (l *loader) otlp(insecure bool) OTLPConfig {
	var c OTLPConfig
	if v, ok := l.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ok {
		c.TracesURL = l.otlpURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v, false)
	} else if v, ok := l.get("OTEL_EXPORTER_OTLP_ENDPOINT"); ok {
		c.TracesURL = l.otlpURL("OTEL_EXPORTER_OTLP_ENDPOINT", v, true)
	}
	if v, ok := l.get("OTEL_EXPORTER_OTLP_HEADERS"); ok {
		h, err := ParseOTLPPairs(v)
		if err == nil {
			err = checkHeaders(h)
		}
		if err != nil {
			l.fail("OTEL_EXPORTER_OTLP_HEADERS", "", "%v", err)
			h = nil
		}
		c.Headers = h
	}
	if v, ok := l.get("OTEL_RESOURCE_ATTRIBUTES"); ok {
		r, err := ParseOTLPPairs(v)
		if err != nil {
			l.fail("OTEL_RESOURCE_ATTRIBUTES", v, "%v", err)
		}
		c.Resource = r
	}
	switch v, _ := l.get("OTEL_EXPORTER_OTLP_COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		c.Gzip = true
	default:
		l.fail("OTEL_EXPORTER_OTLP_COMPRESSION", v, "want gzip or none")
	}
	c.CAFile, c.CAVar = l.otlpFile("CERTIFICATE")
	c.CertFile, c.CertVar = l.otlpFile("CLIENT_CERTIFICATE")
	c.KeyFile, c.KeyVar = l.otlpFile("CLIENT_KEY")
	if c.TracesURL != "" {
		// A client certificate without its key (or the reverse) can
		// present nothing: refuse at boot naming what is missing.
		switch {
		case c.CertFile != "" && c.KeyFile == "":
			l.fail(c.CertVar, c.CertFile, "a client certificate needs its key: set OTEL_EXPORTER_OTLP_CLIENT_KEY (or OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY) to the PEM file of its private key")
		case c.KeyFile != "" && c.CertFile == "":
			l.fail(c.KeyVar, c.KeyFile, "a client key needs its certificate: set OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE (or OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE) to the PEM file of the certificate")
		}
	}
	c.ServiceName = l.str("OTEL_SERVICE_NAME", "")
	if c.ServiceName == "" {
		c.ServiceName = c.Resource["service.name"]
	}
	if c.ServiceName == "" {
		c.ServiceName = DefaultOTLPServiceName
	}
	if c.TracesURL != "" && len(c.Headers) > 0 && !insecure {
		u, _ := url.Parse(c.TracesURL)
		if h := u.Hostname(); u.Scheme == "http" && !loopbackHost(h) {
			name := "OTEL_EXPORTER_OTLP_ENDPOINT"
			if _, ok := l.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ok {
				name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
			}
			l.fail(name, c.TracesURL, "plain http to a non-loopback host would send OTEL_EXPORTER_OTLP_HEADERS in clear text; use https or set TELEMETRY_ALLOW_INSECURE=1")
			c.TracesURL = ""
		}
	}
	return c
}

// otlpFile is OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>, with the variable it came from (both empty
// when neither is set); the exporter reads the file at boot.
func (l *loader) otlpFile(name string) (path, from string) {
	if v, ok := l.get("OTEL_EXPORTER_OTLP_TRACES_" + name); ok {
		return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
	}
	if v, ok := l.get("OTEL_EXPORTER_OTLP_" + name); ok {
		return v, "OTEL_EXPORTER_OTLP_" + name
	}
	return "", ""
}

// otlpURL checks an endpoint: an absolute http or https URL without a
// query; base endpoints get the traces path appended.
func (l *loader) otlpURL(name, v string, base bool) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		l.fail(name, v, "want an absolute http or https URL")
		return ""
	}
	if base {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		u.RawPath = ""
	}
	return u.String()
}

// checkHeaders refuses a header that no HTTP request can carry: accepted,
// it would fail every export for the life of the daemon instead of once at
// boot. The error names the header, never its value.
func checkHeaders(h map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("%q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces)", k)
		}
		if !httpguts.ValidHeaderFieldValue(h[k]) {
			return fmt.Errorf("the value of %s holds a control character (a percent-encoded line break?), which no HTTP header may carry", k)
		}
	}
	return nil
}

// ParseOTLPPairs parses the W3C-baggage-like list the OTEL_*_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES variables use: key=value pairs separated by
// commas, blanks around each trimmed, values percent-decoded. An empty
// list is nil; a pair without "=", an empty key or a bad escape is an
// error that names the pair's position, not its content.
func ParseOTLPPairs(s string) (map[string]string, error) {
	var out map[string]string
	for i, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("pair %d: want key=value", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("pair %d (%s): value is not percent-encoded correctly", i+1, k)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = dv
	}
	return out, nil
}
