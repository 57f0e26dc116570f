package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// A tool the run may use but that is not resident this turn (progressive
// loading) is refused when the model calls it by a guessed name: it does not
// run, and the recorded error result tells the model to use search_tools.
func TestCallOutsideResidentSetIsRefused(t *testing.T) {
	var ran atomic.Bool
	hidden := tool.Func("crm__delete_deal", "delete a deal", false, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
		ran.Store(true)
		return tool.Text("deleted"), nil
	})
	echo := echoTool()
	h := newHarnessWith(t, toolThenAnswer(model.ToolCall{ID: "g1", Name: "crm__delete_deal", Arguments: json.RawMessage(`{"text":"42"}`)}), big,
		func(o *engine.Options) {
			o.Resident = func(context.Context, string, string) []string { return []string{"echo"} }
		}, echo, hidden)
	r, resp := h.run(t, "delete deal 42")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	if ran.Load() {
		t.Fatal("a tool outside the resident set ran")
	}
	if !strings.Contains(resp.OutputText, "search_tools") {
		t.Fatalf("the model saw %q, want a refusal naming search_tools", resp.OutputText)
	}
	evs, err := h.st.Events(context.Background(), store.EventFilter{RunID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	var refused bool
	for _, e := range evs {
		if e.Name != event.ToolResult {
			continue
		}
		var d struct {
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
			Preview string `json:"preview"`
		}
		_ = json.Unmarshal(e.Data, &d)
		refused = refused || (d.Name == "crm__delete_deal" && d.IsError && strings.Contains(d.Preview, "search_tools"))
	}
	if !refused {
		t.Fatalf("no tool.result records the refusal: %v", h.eventNames(t, r.ID))
	}
}
