package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDialogNeverHangs: while an alert blocks the page, other tools answer
// at once, page work fails fast with dialogOpen, and dialog repairs it.
func TestDialogNeverHangs(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/dialog.html"})
	h := start["workflowHandle"]
	_, click := callTool(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#alert"})
	if !strings.Contains(dump(click), "hello there") {
		t.Fatalf("click that opened an alert = %s", dump(click))
	}
	began := time.Now()
	pl := mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]})
	if !strings.Contains(dump(pl), `"type":"alert"`) {
		t.Errorf("page_list does not show the open dialog: %s", dump(pl))
	}
	mustOK(t, alice, "runtime_info", nil)
	mustOK(t, alice, "session_list", nil)
	m := mustFail(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h}, CodeDialogOpen)
	if get(m, "error", "repair", "action") != "handleDialog" {
		t.Errorf("repair = %v", get(m, "error", "repair"))
	}
	// Generous bound: the point is "not the 180 s hang users report".
	if waited := time.Since(began); waited > 30*time.Second {
		t.Errorf("tools blocked for %s behind a dialog", waited)
	}
	d := mustOK(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": true})
	if get(d, "evidence", "dialog", "type") != "alert" {
		t.Errorf("dialog = %s", dump(d))
	}
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	mustFail(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": true}, CodeNoDialog)

	callTool(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#confirm"})
	mustOK(t, alice, "dialog", map[string]any{"workflowHandle": h, "accept": false})
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "text",
		"selector": "#out", "matcher": map[string]any{"kind": "exact", "value": "no"}}})
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash := strings.Repeat("ab", 32)
	ok := write("ok.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2027-01-01T00:00:00Z\n")
	soon := write("soon.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2026-08-10T00:00:00Z\n")
	expired := write("expired.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"page:read\"]\nexpires_at = 2026-08-01T00:00:00Z\n")
	badCap := write("badcap.toml", "[[principals]]\nname = \"agent\"\ntoken_sha256 = \""+hash+"\"\ncapabilities = [\"root\"]\n")
	badBrowser := write("nobrowser.toml", "[browser]\npath = \"/nonexistent/chromium\"\n")

	for _, tt := range []struct {
		name, config, listen string
		browser              bool
		wantErr              bool
		want                 []string
	}{
		{"healthy", ok, "127.0.0.1:0", true, false, []string{"ok   config", "ok   browser", "ok   listen", "ok   credential  agent expires at 2027-01-01"}},
		{"expiring soon warns", soon, "127.0.0.1:0", false, false, []string{"warn credential  agent expires in"}},
		{"expired fails", expired, "127.0.0.1:0", false, true, []string{"FAIL credential  agent expired"}},
		{"bad capability fails", badCap, "127.0.0.1:0", false, true, []string{"FAIL config", "unknown capability"}},
		{"missing browser fails", badBrowser, "127.0.0.1:0", true, true, []string{"FAIL browser"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := Doctor(context.Background(), &out, DoctorOptions{ConfigPath: tt.config, Listen: tt.listen, Now: now, SkipBrowser: !tt.browser})
			if (err != nil) != tt.wantErr {
				t.Errorf("Doctor err = %v, want error %v\n%s", err, tt.wantErr, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	// A taken listen address fails.
	var out strings.Builder
	srvAddr := strings.TrimPrefix(fixtures.URL, "http://")
	if err := Doctor(context.Background(), &out, DoctorOptions{ConfigPath: ok, Listen: srvAddr, Now: now, SkipBrowser: true}); err == nil || !strings.Contains(out.String(), "FAIL listen") {
		t.Errorf("taken address: %v\n%s", err, out.String())
	}
}
