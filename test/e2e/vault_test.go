package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// TestVaultValueRedactedBeforeFirstUse: a secret the vault holds is
// replaced by its [vault:NAME] marker in a tool result even when nothing
// has used the secret yet: right after it is stored, and after a restart.
func TestVaultValueRedactedBeforeFirstUse(t *testing.T) {
	const value = "s3cr3t-vault-value-9731"
	fake := startScript(t, func(req modeltest.ChatRequest) modeltest.Reply {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return modeltest.Reply{Text: "read it"}
			}
		}
		args, _ := json.Marshal(map[string]string{"path": "notes/app.conf"})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_read", Name: "read_file", Arguments: string(args)}}}
	})
	d := newDaemon(t, fake, "DELTA_VAULT_KEY=an-e2e-vault-key-0123456789")
	if s, v := d.call("PUT", "/v1/secrets/DB_PASSWORD", `{"value":"`+value+`","purpose":"the app database"}`); s != 200 && s != 201 {
		t.Fatalf("store secret: %d %v", s, v)
	}
	if err := os.MkdirAll(filepath.Join(d.dir, "ws", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.dir, "ws", "notes", "app.conf"), []byte("db_password = "+value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		before := len(fake.Requests())
		if s, v := d.call("POST", "/v1/responses", `{"input":"read the app config"}`); s != 200 || v["status"] != "completed" {
			t.Fatalf("%s: run: %d %v\nlog:\n%s", when, s, v, d.logText())
		}
		var seen bool
		for _, req := range fake.Requests()[before:] {
			for _, m := range req.Messages {
				if m.Role != "tool" {
					continue
				}
				seen = true
				if strings.Contains(m.Content, value) {
					t.Errorf("%s: the model was shown the vault value in a tool result: %q", when, m.Content)
				}
				if !strings.Contains(m.Content, "[vault:DB_PASSWORD]") {
					t.Errorf("%s: tool result lacks the [vault:DB_PASSWORD] marker: %q", when, m.Content)
				}
			}
		}
		if !seen {
			t.Fatalf("%s: no tool result reached the model", when)
		}
	}
	check("after storing the secret")
	d.stop()
	d.start()
	check("after a restart")
}

// TestControlTokenNeverReachesTheModel: a control plane whose error page
// echoes the request's headers does not hand DELTA_CONTROL_TOKEN to the
// model through the schedule tool's error result: the daemon's own
// credentials are redacted like vault values.
func TestControlTokenNeverReachesTheModel(t *testing.T) {
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "upstream error; request was %s %s Authorization: %s", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}))
	t.Cleanup(plane.Close)
	fake := startScript(t, func(req modeltest.ChatRequest) modeltest.Reply {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return modeltest.Reply{Text: "listed"}
			}
		}
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_list", Name: "schedule_list", Arguments: "{}"}}}
	})
	d := newDaemon(t, fake, "DELTA_CONTROL_URL="+plane.URL)
	if s, v := d.call("POST", "/v1/responses", `{"input":"list my schedules"}`); s != 200 || v["status"] != "completed" {
		t.Fatalf("run: %d %v\nlog:\n%s", s, v, d.logText())
	}
	var seen bool
	for _, req := range fake.Requests() {
		for _, m := range req.Messages {
			if m.Role != "tool" {
				continue
			}
			seen = true
			if strings.Contains(m.Content, d.token) {
				t.Errorf("the model was shown DELTA_CONTROL_TOKEN: %q", m.Content)
			}
			if !strings.Contains(m.Content, "upstream error") {
				t.Errorf("the control plane's answer is missing from the tool result: %q", m.Content)
			}
		}
	}
	if !seen {
		t.Fatal("no tool result reached the model")
	}
}
