package anthropic

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

func TestRecordedStream(t *testing.T) {
	res, text, reasoning := wiretest.ParseRecorded(t, "testdata/stream_tools.sse", parse)
	wantUsage := model.Usage{InputTokens: 4812, OutputTokens: 89, CacheReadTokens: 4000, CacheWriteTokens: 800}
	if res.Usage != wantUsage {
		t.Errorf("Usage = %+v, want %+v", res.Usage, wantUsage)
	}
	if res.Model != "claude-sonnet-4-5-20250929" || res.FinishReason != "tool_calls" || res.Text != "Reading both." || text != "Reading both." || reasoning != "Two files to read." {
		t.Errorf("res = %+v reasoning %q", res, reasoning)
	}
	if len(res.ToolCalls) != 2 || string(res.ToolCalls[0].Arguments) != `{"path": "a.go"}` || res.ToolCalls[0].ID != "toolu_01A" ||
		string(res.ToolCalls[1].Arguments) != "{}" || res.ToolCalls[1].Name != "list_files" {
		t.Errorf("tool calls = %+v", res.ToolCalls)
	}
	want := `{"anthropic":{"thinking":[{"signature":"EqQBCgIYAhIM","thinking":"Two files to read.","type":"thinking"},{"data":"EmwKAhgBEgy3va3pzix","type":"redacted_thinking"}]}}`
	if string(res.Extra) != want {
		t.Errorf("Extra = %s", res.Extra)
	}
	// The stored blocks replay as the first blocks of the assistant turn.
	p, err := build(model.Request{Model: "claude-sonnet-4-5", Messages: []model.Message{
		{Role: model.RoleUser, Content: "go"},
		{Role: model.RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls, Extra: res.Extra},
	}}, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Messages[1])
	if !strings.HasPrefix(string(b), `{"content":[{"signature":"EqQBCgIYAhIM","thinking":"Two files to read.","type":"thinking"},{"data":"EmwKAhgBEgy3va3pzix","type":"redacted_thinking"},{"text":"Reading both."`) {
		t.Errorf("replayed assistant turn = %s", b)
	}
}

// FuzzStream feeds arbitrary event payloads to the parser: it must never
// panic, and a successful parse must yield valid tool-call JSON only when
// the fragments were valid.
func FuzzStream(f *testing.F) {
	body, err := os.ReadFile("testdata/stream_tools.sse")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_delta\",\"index\":-1}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\",\"error\":null}\n\n"))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":\"x\"}}}\n\n"))
	f.Add([]byte("data: [\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		acc := newAccumulator(model.Stream{OnText: func(string) {}, OnReasoning: func(string) {}})
		_ = acc.read(wiretest.Recorded(b))
		_ = acc.response()
	})
}

func TestPlaceBreakpointsRule(t *testing.T) {
	// u = user text, r = tool_result, a = assistant block. Positions of the
	// rolling breakpoints for each layout.
	tests := []struct {
		layout string
		want   []int
	}{
		{"u", []int{0}},
		{"uaru", []int{3}},
		{"u" + strings.Repeat("a", 12) + strings.Repeat("r", 12) + "u", []int{25, 13}},
		{"u" + strings.Repeat("a", 25) + strings.Repeat("r", 25) + "u", []int{51, 31, 26}},
		{strings.Repeat("ua", 40) + "u", []int{80, 60, 40}},
	}
	for _, tt := range tests {
		var turns []turn
		for _, c := range tt.layout {
			role := model.RoleUser
			if c == 'a' {
				role = model.RoleAssistant
			}
			b := block{eligible: role == model.RoleUser}
			switch c {
			case 'u':
				b.param = textBlock("x")
			case 'r':
				b.param = resultBlock("id")
			case 'a':
				b.param = textBlock("y")
			}
			if n := len(turns); n > 0 && turns[n-1].role == role {
				turns[n-1].blocks = append(turns[n-1].blocks, b)
			} else {
				turns = append(turns, turn{role: role, blocks: []block{b}})
			}
		}
		var p paramsForTest
		placeBreakpoints(&p.MessageNewParams, turns)
		var got []int
		pos := 0
		for _, tn := range turns {
			for _, b := range tn.blocks {
				if marked(b) {
					got = append(got, pos)
				}
				pos++
			}
		}
		var wantSorted []int
		for i := len(tt.want) - 1; i >= 0; i-- {
			wantSorted = append(wantSorted, tt.want[i])
		}
		if g, w := toJSON(got), toJSON(wantSorted); g != w {
			t.Errorf("%s: breakpoints at %s, want %s", tt.layout, g, w)
		}
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
