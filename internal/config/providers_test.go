package config

import (
	"errors"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseProviders(t *testing.T) {
	lookup := env(map[string]string{"BACKUP_OPENAI_KEY": "sk-backup", "BROKER_B": "bb", "EMPTY": ""})
	for _, tt := range []struct {
		name   string
		raw    string
		want   []ProviderSpec
		warns  []string // substrings, in order
		errSub string
	}{
		{"unset", "", nil, nil, ""},
		{"seed example",
			`[{"label":"openai","baseUrl":"https://api.openai.com/v1","api":"responses","models":["gpt-5"],"apiKeyEnv":"BACKUP_OPENAI_KEY"}]`,
			[]ProviderSpec{{Label: "openai", BaseURL: "https://api.openai.com/v1", API: APIResponses, Models: []string{"gpt-5"}, APIKey: "sk-backup", APIKeyEnv: "BACKUP_OPENAI_KEY"}}, nil, ""},
		{"models as one string, default label, unknown api is chat",
			`[{"baseUrl":"https://gw.example/v1","models":"m1","api":"gemini"}]`,
			[]ProviderSpec{{Label: "gw.example", BaseURL: "https://gw.example/v1", API: APIChat, Models: []string{"m1"}}}, nil, ""},
		{"no models reuses the primary list; inline empty key wins over apiKeyEnv",
			`[{"baseUrl":"https://api.anthropic.com/v1","api":"ANTHROPIC","apiKey":"","apiKeyEnv":"BACKUP_OPENAI_KEY","models":[" ",""]}]`,
			[]ProviderSpec{{Label: "api.anthropic.com", BaseURL: "https://api.anthropic.com/v1", API: APIAnthropic, APIKeyEnv: "BACKUP_OPENAI_KEY"}}, nil, ""},
		{"null and malformed entries skipped by name, the rest kept",
			`[null, 7, {"models":["x"]}, {"baseUrl":"ftp://x"}, {"baseUrl":"https://ok.example","models":[1]}, {"baseUrl":"https://ok.example"}]`,
			[]ProviderSpec{{Label: "ok.example", BaseURL: "https://ok.example", API: APIChat}},
			[]string{"[0] skipped: want a JSON object", "[1] skipped: want a JSON object", "[2] skipped: \"baseUrl\" is required",
				"[3] skipped: \"baseUrl\" is required", "[4] skipped: \"models\""}, ""},
		{"headers and unknown keys warned",
			`[{"baseUrl":"https://ok.example","headers":{"x":"y"},"color":"red"}]`,
			[]ProviderSpec{{Label: "ok.example", BaseURL: "https://ok.example", API: APIChat}},
			[]string{"[0]: unknown key \"color\"", "[0]: \"headers\" ignored"}, ""},
		{"missing key variable warned",
			`[{"baseUrl":"https://ok.example","apiKeyEnv":"NOPE_KEY"}]`,
			[]ProviderSpec{{Label: "ok.example", BaseURL: "https://ok.example", API: APIChat, APIKeyEnv: "NOPE_KEY"}},
			[]string{"apiKeyEnv NOPE_KEY is not set"}, ""},
		{"broker endpoint",
			`[{"baseUrl":"https://chatgpt.com/backend-api/codex","api":"responses","brokerMintUrl":"https://ctl.example/mint","brokerAuthEnv":"BROKER_B"}]`,
			[]ProviderSpec{{Label: "chatgpt.com", BaseURL: "https://chatgpt.com/backend-api/codex", API: APIResponses,
				BrokerMintURL: "https://ctl.example/mint", BrokerAuth: "bb", BrokerAuthEnv: "BROKER_B"}}, nil, ""},
		{"invalid JSON drops the list", `[{"baseUrl":`, nil, []string{"DELTA_PROVIDERS ignored"}, ""},
		{"not an array drops the list", `{"baseUrl":"https://x"}`, nil, []string{"DELTA_PROVIDERS ignored"}, ""},
		{"cleartext broker refuses to boot", `[{"baseUrl":"https://x.example","brokerMintUrl":"http://ctl.example/mint"}]`, nil, nil, "must be https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, warns, err := ParseProviders(tt.raw, lookup)
			if tt.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSub) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err %v, want %q", err, tt.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d specs %+v, want %+v", len(got), got, tt.want)
			}
			for i := range got {
				if !specEqual(got[i], tt.want[i]) {
					t.Errorf("spec %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
			if len(warns) != len(tt.warns) {
				t.Fatalf("warnings %q, want %d like %q", warns, len(tt.warns), tt.warns)
			}
			for i, w := range tt.warns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warns[i], w)
				}
			}
		})
	}
}

func specEqual(a, b ProviderSpec) bool {
	if len(a.Models) != len(b.Models) {
		return false
	}
	for i := range a.Models {
		if a.Models[i] != b.Models[i] {
			return false
		}
	}
	return a.Label == b.Label && a.BaseURL == b.BaseURL && a.API == b.API && a.APIKey == b.APIKey && a.APIKeyEnv == b.APIKeyEnv &&
		a.BrokerMintURL == b.BrokerMintURL && a.BrokerAuth == b.BrokerAuth && a.BrokerAuthEnv == b.BrokerAuthEnv
}

func TestParseModelHeaders(t *testing.T) {
	for _, tt := range []struct {
		raw    string
		want   map[string]string
		errSub string
	}{
		{``, nil, ""},
		{`{"originator":"codex_cli_rs","X-Title":"delta"}`, map[string]string{"originator": "codex_cli_rs", "X-Title": "delta"}, ""},
		{`{"chatgpt-account-id":"acct"}`, nil, "may not set the reserved header 'chatgpt-account-id'"},
		{`{"Authorization":"Bearer x"}`, nil, "reserved header 'authorization'"},
		{`{"x-api-key":"k"}`, nil, "reserved header 'x-api-key'"},
		{`{"Cookie":"a=b"}`, nil, "reserved header 'cookie'"},
		{`{"Transfer-Encoding":"chunked"}`, nil, "reserved header 'transfer-encoding'"},
		{`{"anthropic-version":"2020"}`, nil, "reserved header 'anthropic-version'"},
		{`{"bad name":"x"}`, nil, "not a valid header name"},
		{`{"x-a":"line\r\nInjected: 1"}`, nil, "line breaks"},
		{`{"x-a":1}`, nil, "want a string"},
		{`["x"]`, nil, "want a JSON object"},
		{`null`, nil, "want a JSON object"},
	} {
		got, err := ParseModelHeaders(tt.raw)
		if tt.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errSub) {
				t.Errorf("%s: err %v, want %q", tt.raw, err, tt.errSub)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("%s: got %v, %v", tt.raw, got, err)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.raw, k, got[k], v)
			}
		}
	}
}

func TestParseBroker(t *testing.T) {
	for _, tt := range []struct {
		name   string
		env    map[string]string
		hosts  string
		errSub string
	}{
		{"defaults", map[string]string{}, "chatgpt.com", ""},
		{"https broker, extra host", map[string]string{"DELTA_BROKER_TOKEN_URL": "https://ctl.example/t", "DELTA_BROKER_ALLOWED_HOSTS": "chatgpt.com, Codex.Example "}, "chatgpt.com,codex.example", ""},
		{"loopback http", map[string]string{"DELTA_BROKER_TOKEN_URL": "http://127.0.0.1:9000/t"}, "chatgpt.com", ""},
		{"cleartext broker", map[string]string{"DELTA_BROKER_TOKEN_URL": "http://ctl.example/t"}, "", "DELTA_BROKER_TOKEN_URL"},
		{"host with scheme", map[string]string{"DELTA_BROKER_ALLOWED_HOSTS": "https://chatgpt.com"}, "", "exact host names"},
		{"wildcard", map[string]string{"DELTA_BROKER_ALLOWED_HOSTS": "*.chatgpt.com"}, "", "exact host names"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBroker(env(tt.env))
			if tt.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSub) {
					t.Fatalf("err %v, want %q", err, tt.errSub)
				}
				return
			}
			if err != nil || strings.Join(b.AllowedHosts, ",") != tt.hosts {
				t.Fatalf("got %+v, %v; want hosts %s", b, err, tt.hosts)
			}
		})
	}
}

// TestBrokerAuthNeverEchoed: the broker bearer stays out of errors.
func TestBrokerAuthNeverEchoed(t *testing.T) {
	_, err := ParseBroker(env(map[string]string{"DELTA_BROKER_TOKEN_URL": "http://ctl.example/t", "DELTA_BROKER_AUTH": "s3cret-bearer"}))
	if err == nil || strings.Contains(err.Error(), "s3cret-bearer") {
		t.Fatalf("err %v", err)
	}
	l := &loader{lookup: env(map[string]string{"MODEL_HEADERS": `{"Authorization":"Bearer s3cret"}`})}
	l.modelHeaders("MODEL_HEADERS")
	if len(l.errs) != 1 || strings.Contains(l.errs[0].Error(), "s3cret") {
		t.Fatalf("errs %v", l.errs)
	}
}

func FuzzParseProviders(f *testing.F) {
	f.Add(`[{"label":"openai","baseUrl":"https://api.openai.com/v1","api":"responses","models":["gpt-5"],"apiKeyEnv":"K"}]`)
	f.Add(`[null,{"baseUrl":"https://x","models":"m"}]`)
	f.Add(`{"x":1}`)
	f.Add(`[{"baseUrl":"http://:0"}]`)
	f.Add(`[{"baseUrl":"http://x","brokerMintUrl":"http://[::1]:1/t"}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		specs, _, err := ParseProviders(raw, env(nil))
		if err != nil {
			return
		}
		for _, s := range specs {
			if s.BaseURL == "" || s.Label == "" || (s.API != APIChat && s.API != APIAnthropic && s.API != APIResponses) {
				t.Fatalf("accepted an unusable spec %+v", s)
			}
		}
	})
}

func FuzzParseModelHeaders(f *testing.F) {
	f.Add(`{"originator":"codex_cli_rs"}`)
	f.Add(`{"Authorization":"x"}`)
	f.Add(`{"a":"b\nc"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := ParseModelHeaders(raw)
		if err != nil {
			return
		}
		for k, v := range h {
			if reservedHeaders[strings.ToLower(k)] || strings.ContainsAny(v, "\r\n") {
				t.Fatalf("accepted %q: %q", k, v)
			}
		}
	})
}
