package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/remember"
	"github.com/deltaharness/delta/internal/workspace"
)

func TestHandoffListsResearchFindings(t *testing.T) {
	// The tool stands in for research: it writes findings under the run's
	// id (and one under another run's), then the step budget runs out.
	var rig *childRig
	findings := tool.Func("findings", "write findings files", false, func(_ context.Context, c tool.Call, a lookArgs) (tool.Result, error) {
		dir := filepath.Join(rig.dir, ".delta", "research")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return tool.Result{}, err
		}
		for i := range 22 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.call%02d.md", c.RunID, i)), []byte("# findings"), 0o644); err != nil {
				return tool.Result{}, err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "resp_someoneelse.call00.md"), []byte("# not mine"), 0o644); err != nil {
			return tool.Result{}, err
		}
		return tool.Text("written"), nil
	})
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Text: "Working on it.", ToolCalls: []model.ToolCall{{ID: "f1", Name: "findings", Arguments: json.RawMessage(`{"q":""}`)}}}, nil
	})
	rig = newChildRig(t, p, engine.Budget{Steps: 1, Tokens: 1 << 40, CostUSD: 100}, true, nil, findings)
	for _, tt := range []struct {
		name  string
		store bool
	}{{"stored run", true}, {"ephemeral run", false}} {
		t.Run(tt.name, func(t *testing.T) {
			req := userRequest("research")
			req.Store = tt.store
			run := submitAndWait(t, rig.svc, engine.Submission{Request: req})
			out := responseOf(t, run).OutputText
			if run.Status != store.StatusFailed || !strings.Contains(out, "Working on it.") {
				t.Fatalf("status %s output %q", run.Status, out)
			}
			listed := strings.Count(out, "- .delta/research/"+run.ID+".call")
			if !tt.store {
				if strings.Contains(out, ".delta/research") {
					t.Fatalf("an ephemeral run's handoff lists paths:\n%s", out)
				}
				return
			}
			if listed != 20 || !strings.Contains(out, "Research findings") || !strings.Contains(out, "and 2 more (list truncated at 20 paths)") {
				t.Fatalf("listed %d research paths:\n%s", listed, out)
			}
			if !strings.Contains(out, ".delta/research/"+run.ID+".call00.md") || strings.Contains(out, "someoneelse") {
				t.Fatalf("wrong research paths:\n%s", out)
			}
		})
	}
}

// A run stopped by its budget after a DELTA.md write says so in its
// handoff, ephemeral or not: the write outlives the failed run.
func TestHandoffNotesACommittedSelfWrite(t *testing.T) {
	var rig *childRig
	var self tool.Tool
	// The real remember tool, over the rig's workspace and store once they exist.
	rememberTool := tool.Func("remember", "rewrite DELTA.md", false, func(ctx context.Context, c tool.Call, a rememberArgs) (tool.Result, error) {
		if self == nil {
			ws, err := workspace.Open(rig.dir)
			if err != nil {
				return tool.Result{}, err
			}
			self = remember.New(remember.Options{Files: ws, Store: rig.st}).Tool()
		}
		return self.Run(ctx, c)
	})
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		args, _ := json.Marshal(map[string]string{"content": "# Learned\n\n- Cite sources.\n"})
		return model.Response{Text: "Saving a lesson.", ToolCalls: []model.ToolCall{{ID: "r1", Name: "remember", Arguments: args}}}, nil
	})
	rig = newChildRig(t, p, engine.Budget{Steps: 1, Tokens: 1 << 40, CostUSD: 100}, true, nil, rememberTool)
	for _, stored := range []bool{true, false} {
		os.Remove(filepath.Join(rig.dir, "DELTA.md"))
		req := userRequest("learn")
		req.Store = stored
		run := submitAndWait(t, rig.svc, engine.Submission{Request: req})
		resp := responseOf(t, run)
		if run.Status != store.StatusFailed || !strings.Contains(resp.OutputText, "This run already rewrote DELTA.md (1 committed write(s))") {
			t.Fatalf("store=%v: status %s, handoff:\n%s", stored, run.Status, resp.OutputText)
		}
	}
}

type rememberArgs struct {
	Content string `json:"content"`
	Base    string `json:"base,omitempty"`
}
