package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/config"
)

func TestPlanBoot(t *testing.T) {
	const db, cfgFile = "/data/delta.db", "/etc/litestream.yml"
	for _, tt := range []struct {
		name      string
		ec        config.Entrypoint
		files     []string // paths that exist
		want      bootPlan // warnings compared by count
		warnings  int
		wantError string
	}{
		{name: "no backup", ec: config.Entrypoint{LitestreamConfig: cfgFile}, want: bootPlan{}},
		{name: "no backup: bootstrap has no effect", ec: config.Entrypoint{LitestreamConfig: cfgFile, Bootstrap: true}, warnings: 1},
		{name: "default config absent is no backup even with a database", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile}, files: []string{db}},
		{name: "explicit config missing is fatal", ec: config.Entrypoint{DB: db, LitestreamConfig: "/mnt/ls.yml", LitestreamConfigExplicit: true},
			wantError: "LITESTREAM_CONFIG=/mnt/ls.yml: no such file"},
		{name: "explicit config missing is fatal with a url too", ec: config.Entrypoint{DB: db, LitestreamConfig: "/mnt/ls.yml", LitestreamConfigExplicit: true, ReplicaURL: "file:///r"},
			wantError: "no such file"},
		{name: "config: local database wins", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile}, files: []string{db, cfgFile},
			want: bootPlan{backup: true, config: cfgFile}},
		{name: "config: local database wins over bootstrap", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile, Bootstrap: true}, files: []string{db, cfgFile},
			want: bootPlan{backup: true, config: cfgFile}, warnings: 1},
		{name: "config: database missing restores", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile}, files: []string{cfgFile},
			want: bootPlan{backup: true, config: cfgFile, restore: true}},
		{name: "config: database missing with bootstrap starts empty", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile, Bootstrap: true}, files: []string{cfgFile},
			want: bootPlan{backup: true, config: cfgFile}, warnings: 1},
		{name: "url: database missing restores", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile, ReplicaURL: "file:///r"},
			want: bootPlan{backup: true, generate: true, restore: true}},
		{name: "url: local database wins", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile, ReplicaURL: "file:///r"}, files: []string{db},
			want: bootPlan{backup: true, generate: true}},
		{name: "postgres: no backup, nothing to restore", ec: config.Entrypoint{DB: "postgres://h/db", Postgres: true, LitestreamConfig: cfgFile}},
		{name: "postgres: bootstrap has no effect", ec: config.Entrypoint{DB: "postgres://h/db", Postgres: true, LitestreamConfig: cfgFile, Bootstrap: true}, warnings: 1},
		{name: "postgres: a mounted configuration is refused", ec: config.Entrypoint{DB: "postgres://h/db", Postgres: true, LitestreamConfig: cfgFile}, files: []string{cfgFile},
			wantError: "Litestream backs up only a SQLite DELTA_DB"},
		{name: "postgres: a replica url is refused", ec: config.Entrypoint{DB: "postgres://h/db", Postgres: true, LitestreamConfig: cfgFile, ReplicaURL: "file:///r"},
			wantError: "unset LITESTREAM_REPLICA_URL"},
		{name: "config and url: config wins", ec: config.Entrypoint{DB: db, LitestreamConfig: cfgFile, ReplicaURL: "file:///r"}, files: []string{cfgFile},
			want: bootPlan{backup: true, config: cfgFile, restore: true}, warnings: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planBoot(tt.ec, func(p string) bool { return slices.Contains(tt.files, p) })
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.warnings) != tt.warnings {
				t.Errorf("warnings = %q, want %d", got.warnings, tt.warnings)
			}
			got.warnings = nil
			if got.backup != tt.want.backup || got.config != tt.want.config || got.generate != tt.want.generate || got.restore != tt.want.restore {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestSeedBundle(t *testing.T) {
	for _, tt := range []struct {
		name     string
		existing map[string]string // files present before
		env      map[string]string
		want     map[string]string // files after ("" = absent)
		warn     string            // a warning the log must carry
	}{
		{name: "absent files are seeded",
			env:  map[string]string{"DELTA_SELF_MD_B64": b64("# self\n"), "DELTA_POLICY_MD_B64": b64("policy"), "DELTA_CONTEXT_MD_B64": b64("ctx"), "DELTA_VOCAB_JSON_B64": b64(`{"writeNoun":"note"}`)},
			want: map[string]string{"DELTA.md": "# self\n", "POLICY.md": "policy", "PROMPT_CONTEXT.md": "ctx", "vocab.json": `{"writeNoun":"note"}`}},
		{name: "an existing file is never replaced",
			existing: map[string]string{"DELTA.md": "evolved by the agent"},
			env:      map[string]string{"DELTA_SELF_MD_B64": b64("original"), "DELTA_POLICY_MD_B64": b64("policy")},
			want:     map[string]string{"DELTA.md": "evolved by the agent", "POLICY.md": "policy"}},
		{name: "malformed base64 is skipped with a warning, the rest seeded",
			env:  map[string]string{"DELTA_SELF_MD_B64": "not base64 !!", "DELTA_VOCAB_JSON_B64": b64("{}")},
			want: map[string]string{"DELTA.md": "", "vocab.json": "{}"}, warn: "DELTA_SELF_MD_B64"},
		{name: "wrapped base64 (no tr -d) still decodes",
			env:  map[string]string{"DELTA_CONTEXT_MD_B64": b64(strings.Repeat("context ", 20))[:40] + "\n" + b64(strings.Repeat("context ", 20))[40:]},
			want: map[string]string{"PROMPT_CONTEXT.md": strings.Repeat("context ", 20)}},
		{name: "unset and blank variables write nothing",
			env:  map[string]string{"DELTA_POLICY_MD_B64": "  "},
			want: map[string]string{"DELTA.md": "", "POLICY.md": "", "PROMPT_CONTEXT.md": "", "vocab.json": ""}},
		{name: "delta.env is never seeded",
			env:  map[string]string{"DELTA_ENV_B64": b64("MODEL_API_KEY=x"), "DELTA_DELTA_ENV_B64": b64("MODEL_API_KEY=x")},
			want: map[string]string{"delta.env": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "workspace")
			for name, content := range tt.existing {
				writeFile(t, filepath.Join(ws, name), content)
			}
			env := map[string]string{"DELTA_WORKSPACE": ws, "DELTA_DB": filepath.Join(t.TempDir(), "delta.db")}
			for k, v := range tt.env {
				env[k] = v
			}
			var stderr bytes.Buffer
			var execd []string
			c := &entrypointCommand{env: testEnv(env, &stderr), self: "/bin/delta",
				run:  func(context.Context, []string, io.Writer, io.Writer) error { t.Fatal("nothing to restore"); return nil },
				exec: func(argv, _ []string) error { execd = argv; return nil }}
			if err := c.Run(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(execd, []string{"/bin/delta", "serve"}) {
				t.Fatalf("exec = %q, want the daemon", execd)
			}
			for name, want := range tt.want {
				b, err := os.ReadFile(filepath.Join(ws, name))
				switch {
				case want == "" && err == nil:
					t.Errorf("%s was written: %q", name, b)
				case want != "" && string(b) != want:
					t.Errorf("%s = %q (%v), want %q", name, b, err, want)
				}
			}
			if tt.warn != "" && (!strings.Contains(stderr.String(), `"level":"WARN"`) || !strings.Contains(stderr.String(), tt.warn)) {
				t.Errorf("log does not warn about %s:\n%s", tt.warn, stderr.String())
			}
		})
	}
}

func TestEntrypointBackupRules(t *testing.T) {
	type outcome struct {
		restore []string // argv of the restore, nil = none
		exec    []string
		err     error
		errText string
	}
	for _, tt := range []struct {
		name      string
		env       func(dir string) map[string]string
		dbBefore  bool
		restoreDB bool  // the fake restore writes the database
		restoreEr error // the fake restore fails
		check     func(t *testing.T, dir string, o outcome)
	}{
		{name: "replica url, no database: restore then replicate",
			env: func(dir string) map[string]string {
				return map[string]string{"LITESTREAM_REPLICA_URL": "file://" + dir + "/replica"}
			},
			restoreDB: true,
			check: func(t *testing.T, dir string, o outcome) {
				if o.err != nil {
					t.Fatal(o.err)
				}
				db := filepath.Join(dir, "state", "delta.db")
				if len(o.restore) == 0 || o.restore[1] != "restore" || !slices.Contains(o.restore, "-if-replica-exists") || o.restore[len(o.restore)-1] != db {
					t.Fatalf("restore = %q", o.restore)
				}
				want := []string{"/opt/litestream", "replicate", "-config", o.exec[3], "-no-expand-env", "-exec", "'/opt/my delta' serve"}
				if !slices.Equal(o.exec, want) {
					t.Fatalf("exec = %q, want %q", o.exec, want)
				}
				b, err := os.ReadFile(o.exec[3])
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range []string{`path: "` + db + `"`, `url: "file://` + dir + `/replica"`, "sync-interval: 1s", "interval: 1h", "retention: 168h"} {
					if !strings.Contains(string(b), s) {
						t.Errorf("generated configuration lacks %q:\n%s", s, b)
					}
				}
			}},
		{name: "empty replica without bootstrap refuses",
			env: func(dir string) map[string]string {
				return map[string]string{"LITESTREAM_REPLICA_URL": "file://" + dir + "/replica"}
			},
			check: func(t *testing.T, _ string, o outcome) {
				if !errors.Is(o.err, ErrEmptyReplica) || !strings.Contains(o.errText, "DELTA_BOOTSTRAP=1") {
					t.Fatalf("err = %v, want ErrEmptyReplica naming DELTA_BOOTSTRAP=1", o.err)
				}
				if o.exec != nil {
					t.Fatalf("exec = %q after a refusal", o.exec)
				}
			}},
		{name: "failed restore refuses",
			env: func(dir string) map[string]string {
				return map[string]string{"LITESTREAM_REPLICA_URL": "s3://unreachable/x"}
			},
			restoreEr: errors.New("exit status 1"),
			check: func(t *testing.T, _ string, o outcome) {
				if o.err == nil || !strings.Contains(o.errText, "restore") || !strings.Contains(o.errText, "refusing to start") || o.exec != nil {
					t.Fatalf("err = %v, exec = %q", o.err, o.exec)
				}
			}},
		{name: "bootstrap with no database starts empty without restoring",
			env: func(dir string) map[string]string {
				return map[string]string{"LITESTREAM_REPLICA_URL": "file://" + dir + "/replica", "DELTA_BOOTSTRAP": "1"}
			},
			check: func(t *testing.T, _ string, o outcome) {
				if o.err != nil || o.restore != nil || len(o.exec) < 2 || o.exec[1] != "replicate" {
					t.Fatalf("err = %v, restore = %q, exec = %q", o.err, o.restore, o.exec)
				}
			}},
		{name: "mounted configuration, database present: replicate with it, no restore",
			env: func(dir string) map[string]string {
				writeFile(t, filepath.Join(dir, "ls.yml"), "dbs: []\n")
				return map[string]string{"LITESTREAM_CONFIG": filepath.Join(dir, "ls.yml"), "DELTA_BOOTSTRAP": "1"}
			},
			dbBefore: true,
			check: func(t *testing.T, dir string, o outcome) {
				want := []string{"/opt/litestream", "replicate", "-config", filepath.Join(dir, "ls.yml"), "-exec", "'/opt/my delta' serve"}
				if o.err != nil || o.restore != nil || !slices.Equal(o.exec, want) {
					t.Fatalf("err = %v, restore = %q, exec = %q, want %q", o.err, o.restore, o.exec, want)
				}
			}},
		{name: "named configuration missing is fatal",
			env: func(dir string) map[string]string {
				return map[string]string{"LITESTREAM_CONFIG": filepath.Join(dir, "absent.yml")}
			},
			check: func(t *testing.T, _ string, o outcome) {
				if o.err == nil || !strings.Contains(o.errText, "LITESTREAM_CONFIG") || o.exec != nil {
					t.Fatalf("err = %v, exec = %q", o.err, o.exec)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "state", "delta.db")
			env := tt.env(dir)
			env["DELTA_DB"], env["DELTA_WORKSPACE"] = db, filepath.Join(dir, "ws")
			if _, set := env["LITESTREAM_CONFIG"]; !set {
				env["LITESTREAM_CONFIG"] = "" // blank = the default path, which does not exist here
			}
			if tt.dbBefore {
				writeFile(t, db, "sqlite")
			}
			var o outcome
			var stderr bytes.Buffer
			c := &entrypointCommand{env: testEnv(env, &stderr), self: "/opt/my delta",
				lookPath: func(string) (string, error) { return "/opt/litestream", nil },
				run: func(_ context.Context, argv []string, _, _ io.Writer) error {
					o.restore = argv
					if tt.restoreDB {
						writeFile(t, db, "restored")
					}
					return tt.restoreEr
				},
				exec: func(argv, _ []string) error { o.exec = argv; return nil }}
			o.err = c.Run(context.Background(), nil)
			if o.err != nil {
				o.errText = o.err.Error()
			}
			tt.check(t, dir, o)
		})
	}
}

func testEnv(m map[string]string, stderr io.Writer) env {
	var list []string
	for k, v := range m {
		list = append(list, k+"="+v)
	}
	return env{stdout: io.Discard, stderr: stderr, stdin: strings.NewReader(""),
		lookup:  func(k string) (string, bool) { v, ok := m[k]; return v, ok },
		environ: func() []string { return list }}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
