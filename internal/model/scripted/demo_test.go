package scripted

import (
	"encoding/json"
	"strings"
	"testing"
)

var demoTools = []ChatTool{{Name: "write_file"}, {Name: "list_files"}, {Name: "read_file"}}

func user(s string) ChatMessage { return ChatMessage{Role: "user", Content: s} }

func call(id, name, args string) ChatMessage {
	return ChatMessage{Role: "assistant", ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}}
}

func result(id, s string) ChatMessage { return ChatMessage{Role: "tool", ToolCallID: id, Content: s} }

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func TestDemoScript(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []ChatMessage
		tools     []ChatTool
		wantTool  string // tool called; "" = text answer
		wantPath  string // for write_file
		wantQuote string // in brief content or final text
		wantText  []string
		notText   []string
	}{
		{
			name:     "request writes the default brief",
			msgs:     []ChatMessage{{Role: "system", Content: "sys"}, user("Plan the launch party.\nBudget is small.")},
			wantTool: "write_file", wantPath: "brief.md", wantQuote: "> Plan the launch party.\n> Budget is small.\n",
		},
		{
			name:     "path named in the request",
			msgs:     []ChatMessage{user("Summarise this into notes/summary.md, please.")},
			wantTool: "write_file", wantPath: "notes/summary.md",
		},
		{
			name:     "unsafe paths fall back",
			msgs:     []ChatMessage{user("write /etc/passwd.md or ../up.md or .hidden.md")},
			wantTool: "write_file", wantPath: "brief.md",
		},
		{
			name:     "the word list lists first",
			msgs:     []ChatMessage{user("List what is here and write a brief")},
			wantTool: "list_files",
		},
		{
			name:     "listless is not list",
			msgs:     []ChatMessage{user("a listless afternoon")},
			wantTool: "write_file", wantPath: "brief.md",
		},
		{
			name:     "after the listing it writes, quoting the listing",
			msgs:     []ChatMessage{user("list then write"), call("call_demo_1", "list_files", `{"path":"."}`), result("call_demo_1", "a.txt\nb.txt")},
			wantTool: "write_file", wantPath: "brief.md", wantQuote: "a.txt\nb.txt",
		},
		{
			name:     "after the write it reports",
			msgs:     []ChatMessage{user("go"), call("call_demo_1", "write_file", `{"path":"brief.md","content":"x"}`), result("call_demo_1", "wrote 120 bytes to brief.md")},
			wantText: []string{"I wrote brief.md.", "The tool said: wrote 120 bytes to brief.md"},
			notText:  []string{"user turns"},
		},
		{
			name: "a continuation counts user turns",
			msgs: []ChatMessage{
				user("first"), call("call_demo_1", "write_file", `{"path":"brief.md","content":"x"}`), result("call_demo_1", "ok"),
				{Role: "assistant", Content: "I wrote brief.md."},
				user("second, into plan.md"), user("(a per-turn block)"), call("call_demo_3", "write_file", `{"path":"plan.md","content":"y"}`), result("call_demo_3", "ok 2"),
			},
			wantText: []string{"I wrote plan.md.", "The tool said: ok 2", "I have seen 2 user turns in this conversation."},
		},
		{
			name: "harness blocks are not the user's words",
			msgs: []ChatMessage{
				user("Survey the otters into otters.md"), user("<delta:turn>\nModel m | date 2026-01-01\n</delta:turn>"),
				call("call_demo_1", "write_file", `{"path":"otters.md","content":"x"}`), result("call_demo_1", "wrote 9 bytes"),
				user("<delta:turn>\nModel m\n</delta:turn>"), user(" <delta:instructions>\nbe brief\n</delta:instructions>"),
			},
			wantText: []string{"I wrote otters.md.", "The tool said: wrote 9 bytes"},
			notText:  []string{"user turns"},
		},
		{
			name:     "first step with a harness block quotes the request",
			msgs:     []ChatMessage{user("Survey the otters"), user("<delta:turn>\nModel m\n</delta:turn>")},
			wantTool: "write_file", wantPath: "brief.md", wantQuote: "> Survey the otters\n",
		},
		{
			name:     "no write_file offered",
			msgs:     []ChatMessage{user("go")},
			tools:    []ChatTool{{Name: "read_file"}},
			wantText: []string{"need the write_file tool"},
		},
		{
			name:     "nothing to answer",
			msgs:     []ChatMessage{{Role: "system", Content: "only a system prompt"}},
			wantText: []string{"nothing for me to do"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := tt.tools
			if tools == nil {
				tools = demoTools
			}
			req := ChatRequest{Model: "demo", Messages: tt.msgs, Tools: tools}
			r := DemoScript()(req)
			if again := DemoScript()(req); again.Text != r.Text || len(again.ToolCalls) != len(r.ToolCalls) ||
				len(r.ToolCalls) > 0 && again.ToolCalls[0] != r.ToolCalls[0] {
				t.Fatalf("DemoScript is not deterministic: %+v vs %+v", r, again)
			}
			if tt.wantTool == "" {
				if len(r.ToolCalls) != 0 {
					t.Fatalf("want text, got calls %+v", r.ToolCalls)
				}
				for _, w := range tt.wantText {
					if !strings.Contains(r.Text, w) {
						t.Errorf("text %q lacks %q", r.Text, w)
					}
				}
				for _, w := range tt.notText {
					if strings.Contains(r.Text, w) {
						t.Errorf("text %q should not contain %q", r.Text, w)
					}
				}
				return
			}
			if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != tt.wantTool || r.Text != "" {
				t.Fatalf("want one %s call, got %+v", tt.wantTool, r)
			}
			tc := r.ToolCalls[0]
			if !strings.HasPrefix(tc.ID, "call_demo_") || !json.Valid([]byte(tc.Arguments)) {
				t.Errorf("call = %+v", tc)
			}
			if tt.wantTool != "write_file" {
				return
			}
			var a writeArgs
			if err := json.Unmarshal([]byte(tc.Arguments), &a); err != nil {
				t.Fatal(err)
			}
			if a.Path != tt.wantPath || !strings.HasPrefix(a.Content, "# Brief\n") || !strings.Contains(a.Content, tt.wantQuote) {
				t.Errorf("write_file args = %+v, want path %q quoting %q", a, tt.wantPath, tt.wantQuote)
			}
		})
	}
}

func TestDemoToolCallIDsUniqueInConversation(t *testing.T) {
	msgs := []ChatMessage{user("list and write")}
	seen := map[string]bool{}
	for step := 0; step < 3; step++ {
		r := DemoScript()(ChatRequest{Model: "demo", Messages: msgs, Tools: demoTools})
		if len(r.ToolCalls) == 0 {
			if !strings.Contains(r.Text, "I wrote brief.md") {
				t.Fatalf("final text = %q", r.Text)
			}
			if step != 2 {
				t.Fatalf("finished after %d steps, want list, write, answer", step)
			}
			return
		}
		tc := r.ToolCalls[0]
		if seen[tc.ID] {
			t.Fatalf("id %s reused", tc.ID)
		}
		seen[tc.ID] = true
		msgs = append(msgs, ChatMessage{Role: "assistant", ToolCalls: r.ToolCalls}, result(tc.ID, "ok from "+tc.Name))
	}
	t.Fatal("demo never answered with text")
}
