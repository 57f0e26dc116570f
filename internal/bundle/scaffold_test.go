package bundle

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestScaffoldFresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "agent")
	created, err := Scaffold(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range Files() {
		want = append(want, filepath.Join(dir, name))
	}
	if !slices.Equal(created, want) {
		t.Fatalf("created %q, want %q", created, want)
	}
	for _, name := range Files() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		starterText, _ := Starter(name)
		if len(got) == 0 || string(got) != string(starterText) {
			t.Errorf("%s: content differs from its starter", name)
		}
	}
	st, err := os.Stat(filepath.Join(dir, EnvFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("delta.env mode %v, want 0600 (it holds credentials)", st.Mode().Perm())
	}
	self, _ := os.ReadFile(filepath.Join(dir, SelfFile))
	for _, h := range []string{"# Persona", "# Mission", "# Success", "# Learned"} {
		if !strings.Contains(string(self), h+"\n") {
			t.Errorf("DELTA.md lacks heading %q", h)
		}
	}
	// Rerunning creates nothing and changes nothing.
	again, err := Scaffold(dir)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Scaffold = %q, %v; want nothing created", again, err)
	}
}

func TestScaffoldNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	mine := map[string]string{
		SelfFile:   "# Persona\n\nMeridian, my own words.\n",
		PolicyFile: "# Policy\n\n- my rule\n",
	}
	for name, content := range mine {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A dangling symlink is an existing path too: it must not be followed.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.Symlink(target, filepath.Join(dir, VocabFile)); err != nil {
		t.Fatal(err)
	}
	created, err := Scaffold(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, EnvFile), filepath.Join(dir, ContextFile)}
	if !slices.Equal(created, want) {
		t.Fatalf("created %q, want only the missing %q", created, want)
	}
	for name, content := range mine {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		if string(got) != content {
			t.Errorf("%s was changed: %q", name, got)
		}
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("Scaffold wrote through a dangling symlink (err=%v)", err)
	}
}

func TestScaffoldErrors(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	created, err := Scaffold(filepath.Join(file, "agent"))
	if err == nil || len(created) != 0 {
		t.Fatalf("Scaffold under a regular file = %q, %v; want an error", created, err)
	}
	if !strings.Contains(err.Error(), "plain-file") {
		t.Errorf("error %q does not name the path", err)
	}
	// The target being a directory entry other than a file (here a folder
	// named like a bundle file) is an existing path: skipped, not an error.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, SelfFile), 0o755); err != nil {
		t.Fatal(err)
	}
	created, err = Scaffold(dir)
	if err != nil || len(created) != 4 {
		t.Fatalf("Scaffold with DELTA.md as a folder = %q, %v", created, err)
	}
}

// The generated bundle must load cleanly and behave as the guide says: the
// comment-only POLICY.md yields the embedded policy when a rail exists, the
// vocabulary is the neutral one, and both context sections render.
func TestScaffoldedBundleLoads(t *testing.T) {
	dir := t.TempDir()
	if _, err := Scaffold(dir); err != nil {
		t.Fatal(err)
	}
	b, err := Load(Options{Dir: dir, EngineVersion: "1.2.3", AgentID: "meridian", Profile: "trusted", HasWriteRail: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := b.Warnings(); len(w) != 0 {
		t.Fatalf("warnings on a fresh scaffold: %q", w)
	}
	if b.PolicySource() != PolicyEmbedded {
		t.Fatalf("policy source %q, want embedded", b.PolicySource())
	}
	if !reflect.DeepEqual(b.Vocab(), NeutralVocab()) {
		t.Fatalf("starter vocab %+v differs from NeutralVocab", b.Vocab())
	}
	if got := b.StableContext(); got != "Engine 1.2.3 | agent meridian | profile trusted" {
		t.Fatalf("stable = %q", got)
	}
	if !b.HasTurnContext() {
		t.Fatal("starter has no ## Turn")
	}
	if self := b.ReadSelf(); !strings.HasPrefix(self, "# Persona") {
		t.Fatalf("ReadSelf = %q", self)
	}
}
