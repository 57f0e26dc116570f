package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// A tool.result preview is cut to 200 bytes on a character boundary: a cut
// that split a character would reach the event as a replacement character.
func TestToolResultPreviewKeepsCharactersWhole(t *testing.T) {
	text := "a" + strings.Repeat("é", 150) // byte 200 falls inside an é
	long := tool.Func("long", "long text", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		return tool.Text(text), nil
	})
	h := newHarness(t, toolThenAnswer(model.ToolCall{ID: "c1", Name: "long", Arguments: json.RawMessage(`{"text":""}`)}), big, long)
	r, _ := h.run(t, "go")
	evs, err := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Name != event.ToolResult {
			continue
		}
		var d struct {
			Preview string `json:"preview"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		p := strings.TrimSuffix(d.Preview, "…")
		if strings.ContainsRune(d.Preview, utf8.RuneError) || !strings.HasPrefix(text, p) || len(p) != 199 {
			t.Fatalf("preview %q (%d bytes before the mark), want the result's first 199 bytes", d.Preview, len(p))
		}
		return
	}
	t.Fatal("no tool.result event")
}
