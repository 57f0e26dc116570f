package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    string
		hidden  bool
	}{
		{"output_text.delta", `{"delta":"Hel"}`, "", true},
		{"reasoning.delta", `{"delta":"thinking"}`, "", true},
		{"run.queued", ``, "accepted; the queue row is durable", false},
		{"run.started", `null`, "picked up by a worker", false},
		{"run.resumed", `{"attempt":2}`, "resumed after a restart (attempt 2)", false},
		{"model.call", `{"model":"delta-demo-script","step":1,"usage":{"input_tokens":1200,"output_tokens":80},"latency_ms":12,"tool_calls":1}`,
			"step 1 · delta-demo-script · 1200 in / 80 out tokens · 1 tool call · 12 ms", false},
		{"model.call", `{"step":2,"tool_calls":3}`, "step 2 · 3 tool calls", false},
		{"tool.call", `{"call_id":"c1","name":"write_file","arguments":{"path":"brief.md","content":"# Brief"}}`, "write_file brief.md", false},
		{"tool.call", `{"name":"list_files","arguments":{"recursive":true}}`, `list_files {"recursive":true}`, false},
		{"tool.result", `{"name":"write_file","is_error":false,"preview":"wrote 120 bytes\nto brief.md"}`, "write_file ok: wrote 120 bytes to brief.md", false},
		{"tool.result", `{"name":"read_file","is_error":true,"preview":"no file at x.md"}`, "read_file error: no file at x.md", false},
		{"tool.result", `{"name":"bobby__click","is_error":false,"preview":"MCP result from server bobby (untrusted data):\ncompleted click; ref=e4"}`, "bobby__click ok: completed click; ref=e4", false},
		{"run.finished", `{"status":"done"}`, "done", false},
		{"run.finished", `{"status":"failed","error":"model call: http 401: bad key"}`, "failed: model call: http 401: bad key", false},
		{"turn.started", `{"model":"delta-demo-script","tools":14,"turn":2}`, "turn 2 · delta-demo-script · 14 tools offered", false},
		{"checkpoint", `{"intents":1,"steps":3,"turn":3,"usage":{"input_tokens":9000,"output_tokens":100,"cost_usd":0.0123}}`,
			"saved durably: 3 steps, 9100 tokens and $0.0123 so far", false},
		{"recall", `{"mode":"search","query":"courier code","hits":2}`, `search "courier code": 2 hits`, false},
		{"recall", `{"mode":"list","hits":0}`, "list: 0 items", false},
		{"remember", `{"outcome":"written","bytes":412,"version":"3f9a1c2b0d4e","prior":"x","revision_id":3}`, "DELTA.md rewritten: 412 bytes, version 3f9a1c2b0d4e", false},
		{"remember", `{"outcome":"refused","reason":"too_large","over":17}`, "DELTA.md write refused: too large (17 bytes over)", false},
		{"remember", `{"outcome":"refused","reason":"diverged","over":0}`, "DELTA.md write refused: diverged", false},
		{"remember", `{"outcome":"unchanged"}`, "DELTA.md already had this content", false},
		{"self.restore", `{"restored":4,"version":"v"}`, "DELTA.md restored from revision 4", false},
		{"skills.indexed", `{"skills":1,"refused":2}`, "local skills re-read: 1 skill, 2 refused", false},
		{"something.new", `{"a": 1}`, `{"a":1}`, false},
		{"tool.call", `not json`, `"not json"`, false},
	}
	for _, tt := range tests {
		got, ok := summarize(tt.name, json.RawMessage(tt.payload))
		if ok == tt.hidden || got != tt.want {
			t.Errorf("summarize(%s, %s) = %q, %v; want %q, shown=%v", tt.name, tt.payload, got, ok, tt.want, !tt.hidden)
		}
	}
	long, _ := summarize("x", json.RawMessage(`"`+strings.Repeat("a", 500)+`"`))
	if n := len([]rune(long)); n > 100 || !strings.HasSuffix(long, "…") {
		t.Errorf("long payload not clipped: %d runes", n)
	}
}

func TestWrittenPath(t *testing.T) {
	tests := map[string]string{
		`{"name":"write_file","arguments":{"path":"brief.md"}}`: "brief.md",
		`{"name":"edit_file","arguments":{"path":"brief.md"}}`:  "",
		`{"name":"write_file","arguments":"{broken"}`:           "",
		`{"name":"write_file"}`:                                 "",
		`[]`:                                                    "",
	}
	for in, want := range tests {
		if got := writtenPath(json.RawMessage(in)); got != want {
			t.Errorf("writtenPath(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestReadArtifactStaysInWorkspace(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "brief.md"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readArtifact(ws, "brief.md"); err != nil || string(b) != "hi" {
		t.Fatalf("readArtifact(brief.md) = %q, %v", b, err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../x", ""} {
		if _, err := readArtifact(ws, bad); err == nil {
			t.Errorf("readArtifact(%q) succeeded, want a refusal", bad)
		}
	}
	if _, err := readArtifact(ws, "missing.md"); err == nil {
		t.Error("readArtifact(missing.md) succeeded")
	}
}

func TestWrap(t *testing.T) {
	got := wrap("one two three four five", 9, "  ")
	want := "one two\n  three\n  four five"
	if got != want {
		t.Fatalf("wrap = %q, want %q", got, want)
	}
	if got := wrap("a\nb", 80, "> "); got != "a\n> b" {
		t.Fatalf("wrap keeps paragraphs: %q", got)
	}
}
