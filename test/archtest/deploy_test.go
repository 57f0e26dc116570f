package archtest

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// tomlKeys reads the flat shape of a TOML file: "section.key" → raw value,
// with [[array]] headers treated as sections. Enough for fly.toml.sample.
func tomlKeys(t *testing.T, path string) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]string{}
	var sections []string
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			sections = append(sections, section)
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not a key = value line: %q", path, line)
		}
		name := strings.TrimSpace(k)
		if section != "" {
			name = section + "." + name
		}
		keys[name] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys, sections
}

// The Fly sample is the documented topology: one shared CPU, 512 MB, the
// delta_state volume at /data, a /healthz check every 15 s (2 s timeout,
// 5 s grace), listening on all interfaces, no Fly Proxy service and no
// secret values.
func TestFlySampleTopology(t *testing.T) {
	keys, sections := tomlKeys(t, "../../fly.toml.sample")
	want := map[string]string{
		"vm.memory": "512mb", "vm.cpus": "1", "vm.cpu_kind": "shared",
		"mounts.source": "delta_state", "mounts.destination": "/data",
		"checks.delta_health.type": "http", "checks.delta_health.port": "8080", "checks.delta_health.method": "get",
		"checks.delta_health.path": "/healthz", "checks.delta_health.interval": "15s",
		"checks.delta_health.timeout": "2s", "checks.delta_health.grace_period": "5s",
		"env.PORT": "8080", "env.DELTA_BIND": "0.0.0.0", "env.DELTA_DB": "/data/delta.db", "env.DELTA_WORKSPACE": "/data/workspace",
	}
	for k, v := range want {
		if keys[k] != v {
			t.Errorf("fly.toml.sample %s = %q, want %q", k, keys[k], v)
		}
	}
	for _, s := range sections {
		if s == "services" || strings.HasPrefix(s, "services.") || s == "http_service" {
			t.Errorf("fly.toml.sample declares [%s]: the sample has no Fly Proxy service", s)
		}
	}
	for k := range keys {
		name := strings.TrimPrefix(k, "env.")
		for _, suffix := range []string{"_KEY", "_TOKEN", "_SECRET", "_AUTH"} {
			if strings.HasSuffix(name, suffix) {
				t.Errorf("fly.toml.sample sets %s: credentials belong in Fly secrets", k)
			}
		}
	}
}

// The checked-in Litestream template keeps one-second sync, hourly
// snapshots and seven days of retention, in the keys Litestream 0.5 reads.
func TestLitestreamTemplate(t *testing.T) {
	b, err := os.ReadFile("../../etc/litestream.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{"snapshot:\n  interval: 1h\n  retention: 168h\n", "  - path: ${DELTA_DB}\n    replica:\n", "      sync-interval: 1s\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("etc/litestream.yml lacks %q", want)
		}
	}
}
