package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestOTLP(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want OTLPConfig
		bad  string // the variable a refusal names; "" = loads
	}{
		{name: "off", env: map[string]string{}, want: OTLPConfig{ServiceName: "delta"}},
		{name: "base endpoint gets the traces path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:4318"},
			want: OTLPConfig{TracesURL: "https://otel.example:4318/v1/traces", ServiceName: "delta"}},
		{name: "base endpoint with a path and a slash", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example/otlp/"},
			want: OTLPConfig{TracesURL: "https://otel.example/otlp/v1/traces", ServiceName: "delta"}},
		{name: "traces endpoint as is and winning", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://a.example", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b.example/custom"},
			want: OTLPConfig{TracesURL: "https://b.example/custom", ServiceName: "delta"}},
		{name: "headers, service and resource", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc, x-team = core ",
			"OTEL_SERVICE_NAME": "support-bot", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=ignored"},
			want: OTLPConfig{TracesURL: "https://otel.example/v1/traces", Headers: map[string]string{"Authorization": "Bearer abc", "x-team": "core"},
				ServiceName: "support-bot", Resource: map[string]string{"deployment.environment": "prod", "service.name": "ignored"}}},
		{name: "service.name from the resource when OTEL_SERVICE_NAME is unset", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-res"},
			want: OTLPConfig{ServiceName: "from-res", Resource: map[string]string{"service.name": "from-res"}}},
		{name: "plain http without headers anywhere", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.svc:4318"},
			want: OTLPConfig{TracesURL: "http://collector.svc:4318/v1/traces", ServiceName: "delta"}},
		{name: "plain http with headers to loopback", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"},
			want: OTLPConfig{TracesURL: "http://127.0.0.1:4318/v1/traces", Headers: map[string]string{"a": "b"}, ServiceName: "delta"}},
		{name: "plain http with headers elsewhere", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.svc:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"},
			bad: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "plain http with headers elsewhere, insecure allowed", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector.svc/t", "OTEL_EXPORTER_OTLP_HEADERS": "a=b", "TELEMETRY_ALLOW_INSECURE": "1"},
			want: OTLPConfig{TracesURL: "http://collector.svc/t", Headers: map[string]string{"a": "b"}, ServiceName: "delta"}},
		{name: "gzip", env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "GZIP"}, want: OTLPConfig{ServiceName: "delta", Gzip: true}},
		{name: "TLS files, the traces variants winning", env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/ca.pem", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/traces-ca.pem",
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "/k.pem"},
			want: OTLPConfig{ServiceName: "delta", CAFile: "/traces-ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem"}},
		{name: "bad compression", env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, bad: "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, bad: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "grpc scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://c:4317"}, bad: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{name: "malformed headers", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization"}, bad: "OTEL_EXPORTER_OTLP_HEADERS"},
		{name: "malformed resource", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "a=%zz"}, bad: "OTEL_RESOURCE_ATTRIBUTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(mapLookup(tc.env))
			if tc.bad != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err %v, want a refusal naming %s", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := c.OTLP
			if g.TracesURL != tc.want.TracesURL || g.ServiceName != tc.want.ServiceName || g.Gzip != tc.want.Gzip || !maps.Equal(g.Headers, tc.want.Headers) || !maps.Equal(g.Resource, tc.want.Resource) ||
				g.CAFile != tc.want.CAFile || g.CertFile != tc.want.CertFile || g.KeyFile != tc.want.KeyFile {
				t.Fatalf("OTLP = %+v, want %+v", g, tc.want)
			}
		})
	}
}

// A malformed OTEL_EXPORTER_OTLP_HEADERS never echoes its content: it
// usually holds the backend's credential.
func TestOTLPHeadersErrorHidesTheValue(t *testing.T) {
	_, err := Load(mapLookup(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%ZZsecret-value"}))
	if err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("err %v: want a refusal without the value", err)
	}
}

// A header no HTTP request can carry (a space in its name, a line break
// percent-encoded into its value) refuses to boot naming the variable and
// the header, not its value, instead of failing every export at runtime.
func TestOTLPHeadersRequestCannotCarryRefuseBoot(t *testing.T) {
	for _, tt := range []struct{ headers, want string }{
		{"x-api key=secret-value", `"x-api key" is not an HTTP header name`},
		{"Authorization=Bearer%20secret-value%0Ax-injected: 1", "the value of Authorization holds a control character"},
	} {
		_, err := Load(mapLookup(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example:4318", "OTEL_EXPORTER_OTLP_HEADERS": tt.headers}))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Var != "OTEL_EXPORTER_OTLP_HEADERS" || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("OTEL_EXPORTER_OTLP_HEADERS=%q: err = %v, want a refusal naming the variable and saying %q", tt.headers, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("the refusal shows the header's value: %v", err)
		}
	}
}

// A client certificate without its key, or a key without its certificate,
// refuses to boot naming the variable that is set and the one to set.
func TestOTLPClientPairRefusedNamingTheMissingHalf(t *testing.T) {
	for _, tt := range []struct {
		env        map[string]string
		set, unset string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/etc/otel/client.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "/etc/otel/client-key.pem"}, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
	} {
		tt.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "https://otlp.example:4318"
		_, err := Load(mapLookup(tt.env))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Var != tt.set || !strings.Contains(err.Error(), "set "+tt.unset) {
			t.Errorf("%v: err = %v, want a refusal naming %s and asking for %s", tt.env, err, tt.set, tt.unset)
		}
	}
}

func FuzzParseOTLPPairs(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", " a = b%20c ", "a", "=b", "a=%zz", ",,a=b,,", "a==b", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseOTLPPairs(s)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a result %v", err, m)
			}
			return
		}
		for k := range m {
			if k == "" || strings.TrimSpace(k) != k || strings.Contains(k, ",") || strings.Contains(k, "=") {
				t.Fatalf("%q: bad key %q", s, k)
			}
		}
	})
}
