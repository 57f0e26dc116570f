package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDocumentsEveryVariable keeps the README's configuration table
// true: every variable Vars documents appears there.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars() {
		if !strings.Contains(string(b), "| `"+v.Name+"` |") {
			t.Errorf("README.md has no row for %s", v.Name)
		}
	}
}
