package config

import (
	"errors"
	"path/filepath"
)

// DefaultLitestreamConfig is where the entrypoint looks for a mounted
// Litestream configuration when LITESTREAM_CONFIG is unset.
const DefaultLitestreamConfig = "/etc/litestream.yml"

// Seed is one bundle file the entrypoint may write on first boot from a
// base64 variable. delta.env has no seed: it may hold credentials, and in
// production the same settings arrive as real environment variables.
type Seed struct {
	Var   string // the variable holding the base64 content
	File  string // the bundle file name inside the workspace
	Value string // the raw variable value, untrimmed of inner whitespace
	Set   bool   // the variable is set to something other than blanks
}

// seedFiles pairs each seeding variable with its bundle file, in the order
// the entrypoint writes them.
var seedFiles = []struct{ Var, File string }{
	{"DELTA_SELF_MD_B64", "DELTA.md"},
	{"DELTA_POLICY_MD_B64", "POLICY.md"},
	{"DELTA_CONTEXT_MD_B64", "PROMPT_CONTEXT.md"},
	{"DELTA_VOCAB_JSON_B64", "vocab.json"},
}

// Entrypoint is what `delta entrypoint` reads: where state lives, the
// bundle seeds, and the Litestream backup settings. It is separate from
// Config because none of it reaches the daemon it starts.
type Entrypoint struct {
	// DB and Workspace are DELTA_DB and DELTA_WORKSPACE with Load's
	// defaults, made absolute; DB may instead be a PostgreSQL URL, as the
	// daemon takes it (Postgres), which is kept as given.
	DB        string
	Workspace string
	// Postgres says DB is a PostgreSQL URL: the daemon is one worker of
	// several on it, and there is no local file for Litestream to back up.
	Postgres bool
	// Seeds are the four bundle-file variables, set or not.
	Seeds []Seed
	// LitestreamConfig is LITESTREAM_CONFIG, or DefaultLitestreamConfig
	// when unset; LitestreamConfigExplicit says the variable named it (a
	// missing explicit file is fatal, a missing default one means "none").
	LitestreamConfig         string
	LitestreamConfigExplicit bool
	// ReplicaURL is LITESTREAM_REPLICA_URL: a replica for DB without a
	// configuration file.
	ReplicaURL string
	// Bootstrap is DELTA_BOOTSTRAP: start with an empty database when
	// backup is configured and the local database is absent, instead of
	// restoring.
	Bootstrap bool
}

// LoadEntrypoint reads the entrypoint's variables through lookup.
func LoadEntrypoint(lookup func(string) (string, bool)) (Entrypoint, error) {
	l := &loader{lookup: lookup}
	e := Entrypoint{
		DB:         l.dbTarget("DELTA_DB", DefaultDB),
		Workspace:  absPath(l.str("DELTA_WORKSPACE", DefaultWorkspace)),
		ReplicaURL: l.str("LITESTREAM_REPLICA_URL", ""),
		Bootstrap:  l.boolean("DELTA_BOOTSTRAP"),
	}
	if e.Postgres = isPostgresURL(e.DB); !e.Postgres && e.DB != "" {
		e.DB = absPath(e.DB)
	}
	e.LitestreamConfig, e.LitestreamConfigExplicit = l.get("LITESTREAM_CONFIG")
	if !e.LitestreamConfigExplicit {
		e.LitestreamConfig = DefaultLitestreamConfig
	}
	for _, s := range seedFiles {
		raw, _ := lookup(s.Var)
		_, set := l.get(s.Var)
		e.Seeds = append(e.Seeds, Seed{Var: s.Var, File: s.File, Value: raw, Set: set})
	}
	if len(l.errs) > 0 {
		return Entrypoint{}, errors.Join(l.errs...)
	}
	return e, nil
}

// Smoke is what `delta smoke` reads: the daemon to check and the
// credentials and task it checks with.
type Smoke struct {
	URL          string // DELTA_URL, required
	ControlToken string // DELTA_CONTROL_TOKEN
	InspectToken string // DELTA_INSPECT_TOKEN
	Input        string // SMOKE_INPUT: the task text; empty = a built-in one
	Tool         string // SMOKE_TOOL: a tool name /v1/dev/config must list and the run must call
}

// LoadSmoke reads the smoke check's variables through lookup. DELTA_URL
// must be an absolute http or https URL when set; the command asks for it
// when it is missing.
func LoadSmoke(lookup func(string) (string, bool)) (Smoke, error) {
	l := &loader{lookup: lookup}
	s := Smoke{
		ControlToken: l.str("DELTA_CONTROL_TOKEN", ""),
		InspectToken: l.str("DELTA_INSPECT_TOKEN", ""),
		Input:        l.str("SMOKE_INPUT", ""),
		Tool:         l.str("SMOKE_TOOL", ""),
	}
	if _, ok := l.get("DELTA_URL"); ok {
		s.URL = l.baseURL("DELTA_URL", "")
	}
	if len(l.errs) > 0 {
		return Smoke{}, errors.Join(l.errs...)
	}
	return s, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
