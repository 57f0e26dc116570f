package config

import (
	"errors"
	"strings"
	"testing"
)

func TestTelemetryURL(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // "" with ok=false = refuses to boot
		ok   bool
	}{
		{map[string]string{}, "", true},
		{map[string]string{"TELEMETRY_URL": "https://c.example/telemetry/ingest"}, "https://c.example/telemetry/ingest", true},
		{map[string]string{"TELEMETRY_URL": "http://127.0.0.1:9/telemetry/ingest"}, "http://127.0.0.1:9/telemetry/ingest", true},
		{map[string]string{"TELEMETRY_URL": "http://localhost:9/x"}, "http://localhost:9/x", true},
		{map[string]string{"TELEMETRY_URL": "http://[::1]:9/x"}, "http://[::1]:9/x", true},
		{map[string]string{"TELEMETRY_URL": "http://c.example/x"}, "", false},
		{map[string]string{"TELEMETRY_URL": "http://10.0.0.5/x"}, "", false},
		{map[string]string{"TELEMETRY_URL": "http://c.example/x", "TELEMETRY_ALLOW_INSECURE": "1"}, "http://c.example/x", true},
		{map[string]string{"TELEMETRY_URL": "ftp://c.example/x"}, "", false},
		{map[string]string{"TELEMETRY_URL": "/telemetry"}, "", false},
	} {
		c, err := Load(mapLookup(tc.env))
		if tc.ok != (err == nil) {
			t.Errorf("%v: err %v, want ok=%v", tc.env, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "TELEMETRY_URL") {
				t.Errorf("%v: error %v does not name TELEMETRY_URL", tc.env, err)
			}
			continue
		}
		if c.TelemetryURL != tc.want {
			t.Errorf("%v: TelemetryURL %q, want %q", tc.env, c.TelemetryURL, tc.want)
		}
	}
}

func TestTelemetryTokenFallsBackToControlTokenWithAWarning(t *testing.T) {
	c := mustLoad(t, map[string]string{"TELEMETRY_URL": "https://c.example/i", "DELTA_CONTROL_TOKEN": "ctl-secret"})
	if c.TelemetryToken != "ctl-secret" {
		t.Fatalf("token %q, want the control token", c.TelemetryToken)
	}
	warned := false
	for _, w := range c.Warnings {
		if strings.Contains(w, "TELEMETRY_TOKEN") && strings.Contains(w, "DELTA_CONTROL_TOKEN") {
			warned = true
		}
		if strings.Contains(w, "ctl-secret") {
			t.Fatalf("a warning echoes the token: %q", w)
		}
	}
	if !warned {
		t.Fatalf("no boot warning about the fallback: %q", c.Warnings)
	}
	c = mustLoad(t, map[string]string{"TELEMETRY_URL": "https://c.example/i", "DELTA_CONTROL_TOKEN": "ctl", "TELEMETRY_TOKEN": "tel"})
	if c.TelemetryToken != "tel" || len(c.Warnings) != 0 {
		t.Fatalf("dedicated token: %q, warnings %q", c.TelemetryToken, c.Warnings)
	}
	c = mustLoad(t, map[string]string{"DELTA_CONTROL_TOKEN": "ctl"})
	if c.TelemetryToken != "" || len(c.Warnings) != 0 {
		t.Fatalf("exporter off still took the control token: %q %q", c.TelemetryToken, c.Warnings)
	}
	if !mustLoad(t, map[string]string{"DELTA_CAPTURE_PAYLOADS": "1"}).CapturePayloads {
		t.Fatal("DELTA_CAPTURE_PAYLOADS=1 not read")
	}
}
