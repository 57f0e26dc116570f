package cli

import (
	"net"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// smokeDaemon starts a real `delta serve` with control and inspection
// tokens, its model at modelURL, and returns its base URL.
func smokeDaemon(t *testing.T, modelURL string) string {
	t.Helper()
	d := startServeProc(t, "smoke-test", modelURL, "DELTA_BUILD=smoke-build",
		"DELTA_CONTROL_TOKEN=run-token", "DELTA_INSPECT_TOKEN=inspect-token")
	return "http://127.0.0.1:" + d.port
}

func TestSmokeBinary(t *testing.T) {
	requireDaemon(t)
	fake := modeltest.Serve(t, modeltest.DemoScript())
	url := smokeDaemon(t, fake.URL())
	tokens := []string{"DELTA_URL=" + url, "DELTA_CONTROL_TOKEN=run-token", "DELTA_INSPECT_TOKEN=inspect-token"}

	t.Run("passes against a live daemon", func(t *testing.T) {
		r := runBin(t, cleanEnv(append(tokens, "SMOKE_INPUT=Write a brief about smoke checks.", "SMOKE_TOOL=write_file")...), "smoke")
		if r.code != 0 {
			t.Fatalf("smoke exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"ok   healthz  version ", "build smoke-build", "ok   response run resp_", "ok   config   model scripted/demo, schema ",
			"credentials present: control_token, inspect_token, model_api_key", "write_file succeeded", "\nSMOKE_RUN_ID=resp_"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("a required tool the run never called fails the run check", func(t *testing.T) {
		r := runBin(t, cleanEnv(append(tokens, "SMOKE_INPUT=Reply briefly.", "SMOKE_TOOL=list_files")...), "smoke")
		if r.code != 1 || !strings.Contains(r.stderr, "smoke: run: run resp_") || !strings.Contains(r.stderr, "no successful call of list_files") {
			t.Fatalf("smoke exited %d, stderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("a wrong inspection token fails the config check", func(t *testing.T) {
		r := runBin(t, cleanEnv("DELTA_URL="+url, "DELTA_CONTROL_TOKEN=run-token", "DELTA_INSPECT_TOKEN=wrong"), "smoke")
		if r.code != 1 || !strings.Contains(r.stderr, "smoke: config: GET /v1/dev/config: HTTP 401") || !strings.Contains(r.stderr, "DELTA_INSPECT_TOKEN") {
			t.Fatalf("smoke exited %d, stderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("no DELTA_URL is a usage error", func(t *testing.T) {
		r := runBin(t, cleanEnv(), "smoke")
		if r.code != 2 || !strings.Contains(r.stderr, "DELTA_URL") {
			t.Fatalf("smoke exited %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}

// With the model down, the daemon is live (/healthz is liveness only) and
// answers the run with HTTP 200 and a failed Responses object: the smoke
// check must fail on the status, naming the check and the reason.
func TestSmokeBinaryFailsWhenTheModelIsDown(t *testing.T) {
	requireDaemon(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now: connection refused
	url := smokeDaemon(t, down)
	r := runBin(t, cleanEnv("DELTA_URL="+url, "DELTA_CONTROL_TOKEN=run-token", "DELTA_INSPECT_TOKEN=inspect-token"), "smoke", "--timeout", "2m")
	if r.code != 1 {
		t.Fatalf("smoke exited %d against a daemon whose model is down\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "ok   healthz") {
		t.Errorf("healthz should pass (liveness only):\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, `smoke: response: run resp_`) || !strings.Contains(r.stderr, `ended with status "failed", want "completed"`) {
		t.Fatalf("stderr does not name the failed run:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "SMOKE_RUN_ID=resp_") {
		t.Errorf("the failed run's id is not printed:\n%s", r.stdout)
	}
}
