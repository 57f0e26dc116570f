package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update", false, "rewrite the README's configuration table from Vars")

const (
	readmePath  = "../../README.md"
	tableHeader = "| variable | default | meaning |\n|---|---|---|\n"
)

// readmeTable renders Vars as the README's configuration table rows.
func readmeTable() string {
	var b strings.Builder
	for _, v := range Vars() {
		b.WriteString("| `" + v.Name + "` | " + v.Default + " | " + v.Doc + " |\n")
	}
	return b.String()
}

// TestReadmeConfigTableIsGenerated keeps the README's configuration table
// exactly what Vars says, in Vars order, so a variable's documentation is
// fixed in vars.go only. After changing Vars, regenerate the table with
//
//	go test ./internal/config -run TestReadmeConfigTableIsGenerated -update
func TestReadmeConfigTableIsGenerated(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, tableHeader)
	if start < 0 {
		t.Fatalf("README.md has no configuration table starting %q", tableHeader)
	}
	start += len(tableHeader)
	end := strings.Index(doc[start:], "\n\n")
	if end < 0 {
		t.Fatal("README.md's configuration table does not end with a blank line")
	}
	end += start + 1 // keep the last row's newline in the table
	want := readmeTable()
	if doc[start:end] == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(readmePath, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := strings.Split(doc[start:end], "\n")
	for i, w := range strings.Split(want, "\n") {
		if i >= len(got) || got[i] != w {
			g := "(missing)"
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("README.md's configuration table differs from Vars at row %d:\n got %s\nwant %s\nrun: go test ./internal/config -run TestReadmeConfigTableIsGenerated -update", i+1, g, w)
		}
	}
	t.Fatalf("README.md's configuration table has rows Vars does not; run: go test ./internal/config -run TestReadmeConfigTableIsGenerated -update")
}
