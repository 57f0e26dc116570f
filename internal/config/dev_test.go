package config

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

func TestDevEnv(t *testing.T) {
	bundle := t.TempDir()
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{
			"DELTA_WORKSPACE":     bundle,
			"DELTA_DB":            filepath.Join(bundle, ".delta", "delta.db"),
			"DELTA_BIND":          "127.0.0.1",
			"DELTA_INSPECT_WRITE": "1",
			"DELTA_CAPTURE_CALLS": "1",
			"PORT":                "4321",
		}
		maps.Copy(m, extra)
		return m
	}
	for _, tt := range []struct {
		name      string
		inherited map[string]string
		file      map[string]string
		want      map[string]string
	}{
		{"defaults", nil, nil, base(nil)},
		{"inherited passes through", map[string]string{"HOME": "/root", "PATH": "/bin"}, nil,
			base(map[string]string{"HOME": "/root", "PATH": "/bin"})},
		{"file overlays inherited", map[string]string{"DELTA_AGENT_ID": "shell", "X": "1"}, map[string]string{"DELTA_AGENT_ID": "file"},
			base(map[string]string{"DELTA_AGENT_ID": "file", "X": "1"})},
		{"inherited workspace and db ignored", map[string]string{"DELTA_WORKSPACE": "/prod/ws", "DELTA_DB": "/prod/delta.db"}, nil, base(nil)},
		{"file workspace relative", nil, map[string]string{"DELTA_WORKSPACE": "work"},
			base(map[string]string{"DELTA_WORKSPACE": filepath.Join(bundle, "work")})},
		{"file db relative", map[string]string{"DELTA_DB": "/prod/delta.db"}, map[string]string{"DELTA_DB": "state/d.db"},
			base(map[string]string{"DELTA_DB": filepath.Join(bundle, "state", "d.db")})},
		{"file absolute paths", nil, map[string]string{"DELTA_WORKSPACE": "/srv/ws/", "DELTA_DB": "/srv/db/x.db"},
			base(map[string]string{"DELTA_WORKSPACE": "/srv/ws", "DELTA_DB": "/srv/db/x.db"})},
		{"file dot-dot relative", nil, map[string]string{"DELTA_WORKSPACE": "../shared"},
			base(map[string]string{"DELTA_WORKSPACE": filepath.Join(filepath.Dir(bundle), "shared")})},
		{"empty file workspace keeps default", nil, map[string]string{"DELTA_WORKSPACE": ""}, base(nil)},
		{"inherited bind beats default", map[string]string{"DELTA_BIND": "0.0.0.0"}, nil, base(map[string]string{"DELTA_BIND": "0.0.0.0"})},
		{"file bind beats inherited", map[string]string{"DELTA_BIND": "0.0.0.0"}, map[string]string{"DELTA_BIND": "::1"},
			base(map[string]string{"DELTA_BIND": "::1"})},
		{"empty bind gets loopback", map[string]string{"DELTA_BIND": ""}, nil, base(nil)},
		{"inherited inspect write off", map[string]string{"DELTA_INSPECT_WRITE": "0"}, nil, base(map[string]string{"DELTA_INSPECT_WRITE": "0"})},
		{"file capture off", nil, map[string]string{"DELTA_CAPTURE_CALLS": "off"}, base(map[string]string{"DELTA_CAPTURE_CALLS": "off"})},
		{"explicit empty capture counts as set", nil, map[string]string{"DELTA_CAPTURE_CALLS": ""}, base(map[string]string{"DELTA_CAPTURE_CALLS": ""})},
		{"port always replaced", map[string]string{"PORT": "80"}, map[string]string{"PORT": "9999"}, base(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inCopy, fileCopy := maps.Clone(tt.inherited), maps.Clone(tt.file)
			got := DevEnv(bundle, tt.inherited, tt.file, 4321)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("DevEnv\n got %q\nwant %q", got, tt.want)
			}
			if !maps.Equal(inCopy, tt.inherited) || !maps.Equal(fileCopy, tt.file) {
				t.Fatal("DevEnv modified its inputs")
			}
		})
	}
}

// The child's environment must load as a valid Config with the dev defaults.
func TestDevEnvLoads(t *testing.T) {
	bundle := t.TempDir()
	env := DevEnv(bundle, map[string]string{"OPENROUTER_API_KEY": "k"}, map[string]string{"DELTA_AGENT_ID": "a"}, 5555)
	c, err := Load(mapLookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 5555 || c.Workspace != bundle || c.DB != filepath.Join(bundle, ".delta", "delta.db") ||
		c.Bind != "127.0.0.1" || !c.InspectWrite || !c.CaptureCalls || c.AgentID != "a" || c.ModelAPIKey != "k" {
		t.Fatalf("dev config = %+v", c)
	}
}

func TestDevEnvRelativeBundle(t *testing.T) {
	got := DevEnv("my-agent", nil, nil, 1)
	if !filepath.IsAbs(got["DELTA_WORKSPACE"]) || filepath.Base(got["DELTA_WORKSPACE"]) != "my-agent" {
		t.Fatalf("workspace %q: want an absolute path ending in my-agent", got["DELTA_WORKSPACE"])
	}
}

func TestEnvironAndEnvList(t *testing.T) {
	t.Setenv("DELTA_H1_TEST_VAR", "a=b")
	env := Environ()
	if env["DELTA_H1_TEST_VAR"] != "a=b" {
		t.Fatalf("Environ lost a value containing '=': %q", env["DELTA_H1_TEST_VAR"])
	}
	got := EnvList(map[string]string{"B": "2", "A": "x=y", "C": ""})
	if want := []string{"A=x=y", "B=2", "C="}; !slices.Equal(got, want) {
		t.Fatalf("EnvList = %q, want %q", got, want)
	}
}
