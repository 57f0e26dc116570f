package dist

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReleaseCrossBuilds runs scripts/release twice, narrowed to keep the
// suite's time down: delta for this machine's target (linux/amd64, whose
// compiled packages the image build has just cached) and bobby
// cross-compiled for darwin/arm64 (the smaller program; a cold
// cross-compile of delta's SQLite takes minutes on two cores). Each binary
// is a static executable for its target, delta reports the stamped
// version, and each SHA256SUMS matches its files.
func TestReleaseCrossBuilds(t *testing.T) {
	root := repoRoot(t)
	const version = "0.0.0-release-test"
	release := func(targets, binaries string) string {
		dist := t.TempDir()
		env := append(os.Environ(), "DIST="+dist, "TARGETS="+targets, "BINARIES="+binaries)
		start := time.Now()
		run(t, 20*time.Minute, env, filepath.Join(root, "scripts", "release"), version)
		t.Logf("scripts/release %s %s: %s", targets, binaries, time.Since(start).Round(time.Second))
		return dist
	}

	native := release("linux/amd64", "delta")
	linux := filepath.Join(native, "delta-linux-amd64")
	if f, err := elf.Open(linux); err != nil {
		t.Errorf("delta-linux-amd64: %v", err)
	} else {
		if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
			t.Errorf("delta-linux-amd64: ELF machine %v type %v, want an x86-64 executable", f.Machine, f.Type)
		}
		f.Close()
		if err := staticELF(linux); err != nil {
			t.Error(err)
		}
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if out := run(t, time.Minute, nil, linux, "version"); !strings.Contains(out, version) {
			t.Errorf("delta-linux-amd64 version = %q, want %s stamped", strings.TrimSpace(out), version)
		}
	}
	checkSums(t, native, "delta-linux-amd64")

	cross := release("darwin/arm64", "bobby")
	darwin := filepath.Join(cross, "bobby-darwin-arm64")
	if f, err := macho.Open(darwin); err != nil {
		t.Errorf("bobby-darwin-arm64: %v", err)
	} else {
		if f.Cpu != macho.CpuArm64 || f.Type != macho.TypeExec {
			t.Errorf("bobby-darwin-arm64: Mach-O cpu %v type %v, want an arm64 executable", f.Cpu, f.Type)
		}
		f.Close()
	}
	checkSums(t, cross, "bobby-darwin-arm64")
}

// checkSums: dir's SHA256SUMS lists exactly want, each with its sha256.
func checkSums(t *testing.T, dir string, want ...string) {
	t.Helper()
	sums, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	var listed []string
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: %q is not \"<hex>  <file>\"", sc.Text())
		}
		listed = append(listed, name)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("SHA256SUMS lists %s: %v", name, err)
			continue
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: %s has sha256 %x, listed %s", name, got, sum)
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("SHA256SUMS lists %q, want %q", listed, want)
	}
}
