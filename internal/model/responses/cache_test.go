package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

func TestExplicitCacheBreakpoints(t *testing.T) {
	req := model.Request{
		Model:  "gpt-5.6",
		System: []string{"base", "policy"},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "write the report"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c1", Name: "read_file", Content: "contents of a"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c2", Name: "read_file", Arguments: json.RawMessage(`{"path":"b"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c2", Name: "read_file", Content: "contents of b"},
			{Role: model.RoleUser, Content: "<delta:turn>\nnow 12:00\n</delta:turn>"},
		},
	}
	for _, tt := range []struct {
		name   string
		model  string
		native bool
		want   int
	}{
		{"gpt-5.6 native: stable + two rolling", "gpt-5.6", true, 3},
		{"openrouter-style id", "openai/gpt-5.7-mini", true, 3},
		{"older model: implicit caching only", "gpt-5.5", true, 0},
		{"plain host never gets breakpoints", "gpt-5.6", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := req
			r.Model = tt.model
			p, err := build(r, lane{native: tt.native}, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			body := string(b)
			if got := strings.Count(body, `"prompt_cache_breakpoint"`); got != tt.want {
				t.Fatalf("breakpoints = %d, want %d: %s", got, tt.want, body)
			}
			if tt.want > 0 {
				if !strings.Contains(body, `"prompt_cache_options":{"mode":"explicit"}`) {
					t.Fatalf("explicit mode missing: %s", body)
				}
				if strings.Contains(body, `now 12:00","prompt_cache_breakpoint`) {
					t.Fatalf("a breakpoint on the volatile turn block: %s", body)
				}
				for _, marked := range []string{"write the report", "contents of a", "contents of b"} {
					if !strings.Contains(body, `"text":"`+marked+`","prompt_cache_breakpoint"`) && !strings.Contains(body, `"prompt_cache_breakpoint":{"mode":"explicit"},"text":"`+marked+`"`) {
						t.Fatalf("%q carries no breakpoint: %s", marked, body)
					}
				}
			}
		})
	}
}
