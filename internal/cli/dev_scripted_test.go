package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A new user's first ten minutes: `delta dev` with no model credential says
// so in one line at boot and names --scripted; with --scripted a task
// succeeds offline and the inspection config names the scripted model.
func TestDevWithoutCredentialOffersScripted(t *testing.T) {
	requireDaemon(t)
	bundle := filepath.Join(t.TempDir(), "agent")
	if r := runBin(t, cleanEnv(), "init", bundle); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	stop := func(d *devProc) {
		t.Helper()
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(time.Minute):
			t.Fatal("delta dev did not exit after SIGTERM")
		}
	}

	bare := startDev(t, bundle, cleanEnv())
	lines := strings.Split(strings.TrimSpace(bare.stderr.String()), "\n")
	var notice []string
	for _, l := range lines {
		if strings.Contains(l, "no model credential") {
			notice = append(notice, l)
		}
	}
	if len(notice) != 1 || !strings.Contains(notice[0], "delta dev --scripted") {
		t.Fatalf("stderr at boot:\n%s\nwant one line saying no credential is set and naming --scripted", bare.stderr.String())
	}
	stop(bare)

	dev := startDev(t, bundle, cleanEnv(), "--scripted")
	if strings.Contains(dev.stderr.String(), "no model credential") {
		t.Errorf("--scripted still warns: %s", dev.stderr.String())
	}
	r := runBin(t, cleanEnv(), "send", "--json", "--port", dev.port, "Write notes.md about the plan.")
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("send with --scripted: exit %d stdout %q stderr %q\ndaemon %s", r.code, r.stdout, r.stderr, dev.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(bundle, "notes.md")); err != nil {
		t.Errorf("the scripted agent wrote no notes.md: %v", err)
	}
	resp, err := http.Get("http://127.0.0.1:" + dev.port + "/v1/dev/config")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var cfg struct {
		Model struct {
			Primary string `json:"primary"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Model.Primary != demoModel {
		t.Errorf("/v1/dev/config model = %s, want the scripted model %q", b, demoModel)
	}
	stop(dev)
}
