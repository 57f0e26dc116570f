// Package bobbytest builds the real bobby binary for the test packages that
// drive it as a child process, and starts `bobby serve` on loopback with a
// config the test writes: the TestMain, the serve harness and the principal
// config that test/bobbye2e and test/conformance would otherwise each carry.
package bobbytest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build builds cmd/bobby to bin, with the go command's output in the error.
func Build(bin string) error {
	out, err := exec.Command("go", "build", "-o", bin, "github.com/deltaharness/delta/cmd/bobby").CombinedOutput()
	if err != nil {
		return fmt.Errorf("build cmd/bobby: %v\n%s", err, out)
	}
	return nil
}

// Main is a TestMain body: it builds bobby into a fresh temporary folder
// named after prefix, stores its path in *bin, runs the tests and removes
// the folder. It returns the exit code for os.Exit.
func Main(m *testing.M, prefix string, bin *string) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "bobby")
	if err := Build(*bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Principal is one [[principals]] entry of a serve config.
type Principal struct {
	Name         string
	Token        string // stored as its SHA-256, as bobby expects
	Capabilities []string
	Expires      time.Time // zero: no expires_at
}

// Config is a serve config listening on addr, keeping its browser data
// under dir/data, with the given principals.
func Config(addr, dir string, principals ...Principal) string {
	return config(addr, dir, false, principals)
}

// DownloadsConfig is Config with the download tools' root at
// dir/downloads.
func DownloadsConfig(addr, dir string, principals ...Principal) string {
	return config(addr, dir, true, principals)
}

func config(addr, dir string, downloads bool, principals []Principal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[http]\nlisten = %q\n", addr)
	if downloads {
		fmt.Fprintf(&b, "downloads_root = %q\n", filepath.Join(dir, "downloads"))
	}
	fmt.Fprintf(&b, "\n[browser]\ndata_dir = %q\n", filepath.Join(dir, "data"))
	for _, p := range principals {
		sum := sha256.Sum256([]byte(p.Token))
		caps := make([]string, len(p.Capabilities))
		for i, c := range p.Capabilities {
			caps[i] = fmt.Sprintf("%q", c)
		}
		fmt.Fprintf(&b, "\n[[principals]]\nname = %q\ntoken_sha256 = %q\ncapabilities = [%s]\n",
			p.Name, hex.EncodeToString(sum[:]), strings.Join(caps, ", "))
		if !p.Expires.IsZero() {
			fmt.Fprintf(&b, "expires_at = %s\n", p.Expires.UTC().Format(time.RFC3339))
		}
	}
	return b.String()
}

// Served is a running `bobby serve`.
type Served struct {
	MCPURL  string // http://addr/v1/mcp
	Addr    string // the listen address
	Dir     string // the process's HOME and TMPDIR, holding its config and log
	CfgPath string
	LogPath string
	Proc    *os.Process
	// Stop sends SIGTERM and waits for the exit (at most once; cleanup
	// calls it too), failing the test on an unclean one.
	Stop func()
}

// Log is what the process has written to its log so far.
func (s Served) Log() string { return ReadFile(s.LogPath) }

// Serve starts `bin serve` with the config cfgFor writes for a free
// loopback listen address and a fresh folder, and returns once /healthz
// answers. The process gets SIGTERM at Stop or cleanup, and the test
// fails when it then exits non-zero or not within 15 s.
func Serve(t *testing.T, bin string, cfgFor func(addr, dir string) string) Served {
	t.Helper()
	dir := t.TempDir()
	addr := FreeAddr(t)
	cfgPath := filepath.Join(dir, "bobby.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgFor(addr, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bobby serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("bobby serve exited with %v after SIGTERM; log:\n%s", err, ReadFile(logPath))
				}
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("bobby serve ignored SIGTERM for 15 s; log:\n%s", ReadFile(logPath))
			}
		})
	}
	t.Cleanup(stop)
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("bobby serve exited early: %v; log:\n%s", err, ReadFile(logPath))
		default:
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return Served{MCPURL: base + "/v1/mcp", Addr: addr, Dir: dir, CfgPath: cfgPath, LogPath: logPath, Proc: cmd.Process, Stop: stop}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("bobby serve never became healthy; log:\n%s", ReadFile(logPath))
	return Served{}
}

// FreeAddr is a loopback address nothing listens on right now.
func FreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ReadFile is the file's text, or "" when it cannot be read (for logs in
// failure messages).
func ReadFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
