package config

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestLoadEntrypoint(t *testing.T) {
	e, err := LoadEntrypoint(mapLookup(map[string]string{
		"DELTA_DB": "/data/delta.db", "DELTA_WORKSPACE": "/data/workspace",
		"DELTA_SELF_MD_B64": " aGk= ", "DELTA_POLICY_MD_B64": "  ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if e.DB != "/data/delta.db" || e.Workspace != "/data/workspace" {
		t.Fatalf("paths = %q %q", e.DB, e.Workspace)
	}
	if e.LitestreamConfig != DefaultLitestreamConfig || e.LitestreamConfigExplicit {
		t.Fatalf("litestream config = %q explicit=%v, want the default, not explicit", e.LitestreamConfig, e.LitestreamConfigExplicit)
	}
	want := []Seed{
		{Var: "DELTA_SELF_MD_B64", File: "DELTA.md", Value: " aGk= ", Set: true},
		{Var: "DELTA_POLICY_MD_B64", File: "POLICY.md", Value: "  "},
		{Var: "DELTA_CONTEXT_MD_B64", File: "PROMPT_CONTEXT.md"},
		{Var: "DELTA_VOCAB_JSON_B64", File: "vocab.json"},
	}
	if len(e.Seeds) != len(want) {
		t.Fatalf("seeds = %+v", e.Seeds)
	}
	for i := range want {
		if e.Seeds[i] != want[i] {
			t.Errorf("seed %d = %+v, want %+v", i, e.Seeds[i], want[i])
		}
	}

	e, err = LoadEntrypoint(mapLookup(map[string]string{
		"DELTA_DB": "rel/delta.db", "LITESTREAM_CONFIG": "/etc/ls.yml",
		"LITESTREAM_REPLICA_URL": "file:///replica", "DELTA_BOOTSTRAP": "1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(e.DB) || !e.LitestreamConfigExplicit || e.LitestreamConfig != "/etc/ls.yml" || e.ReplicaURL != "file:///replica" || !e.Bootstrap {
		t.Fatalf("entrypoint = %+v", e)
	}

	const pg = "postgres://delta:pw@db.internal:5432/agent?sslmode=require"
	e, err = LoadEntrypoint(mapLookup(map[string]string{"DELTA_DB": pg}))
	if err != nil || e.DB != pg || !e.Postgres {
		t.Fatalf("DELTA_DB=postgres://…: entrypoint = %+v, %v; want the URL kept as given, Postgres", e, err)
	}
	if _, err := LoadEntrypoint(mapLookup(map[string]string{"DELTA_DB": "mysql://h/db"})); err == nil {
		t.Fatal("DELTA_DB=mysql://…: want a refusal")
	}

	_, err = LoadEntrypoint(mapLookup(map[string]string{"DELTA_BOOTSTRAP": "maybe"}))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Var != "DELTA_BOOTSTRAP" {
		t.Fatalf("DELTA_BOOTSTRAP=maybe: err = %v, want a FieldError naming it", err)
	}
}

func TestLoadSmoke(t *testing.T) {
	s, err := LoadSmoke(mapLookup(map[string]string{
		"DELTA_URL": "https://agent.example", "DELTA_CONTROL_TOKEN": "c", "DELTA_INSPECT_TOKEN": "i",
		"SMOKE_TOOL": "crm__get_dashboard",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s != (Smoke{URL: "https://agent.example", ControlToken: "c", InspectToken: "i", Tool: "crm__get_dashboard"}) {
		t.Fatalf("smoke = %+v", s)
	}
	if _, err := LoadSmoke(mapLookup(map[string]string{"DELTA_URL": "agent.example"})); err == nil {
		t.Fatal("DELTA_URL without a scheme loaded")
	}
	if s, err := LoadSmoke(mapLookup(nil)); err != nil || s.URL != "" {
		t.Fatalf("unset DELTA_URL: %+v, %v", s, err)
	}
}
