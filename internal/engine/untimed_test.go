package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/code"
	"github.com/deltaharness/delta/internal/workspace"
)

// The code tool runs past DELTA_TOOL_TIMEOUT_MS and its output reaches the
// model, while an ordinary tool of the same turn is still cut off by it.
// The fake coding CLI finishes only once the ordinary tool has timed out,
// so it necessarily outlives the tool timeout.
func TestUntimedToolOutlivesToolTimeout(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "timed-out")
	cli := filepath.Join(t.TempDir(), "fake-cli")
	body := "#!/bin/sh\nwhile [ ! -e '" + flag + "' ]; do sleep 0.01; done\necho 'patched main.go'\n"
	if err := os.WriteFile(cli, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	coder := code.New(ws, code.Config{CLI: cli})
	slow := tool.Func("slow", "waits for its context", true, func(ctx context.Context, _ tool.Call, _ echoArgs) (tool.Result, error) {
		<-ctx.Done()
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			return tool.Result{}, err
		}
		return tool.Result{}, ctx.Err()
	})

	var mu sync.Mutex
	var results map[string]string
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		got := map[string]string{}
		for _, m := range req.Messages {
			if m.Role == model.RoleTool {
				got[m.Name] = m.Content
			}
		}
		if len(got) == 0 {
			return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "code", Arguments: json.RawMessage(`{"prompt":"fix the bug"}`)},
				{ID: "c2", Name: "slow", Arguments: json.RawMessage(`{"text":"x"}`)},
			}}, nil
		}
		mu.Lock()
		results = got
		mu.Unlock()
		return model.Response{Model: req.Model, Text: "done"}, nil
	})
	h := newHarnessWith(t, p, big, func(o *engine.Options) { o.ToolTimeout = 50 * time.Millisecond }, coder, slow)
	r, _ := h.run(t, "fix it")
	if r.Status != store.StatusDone {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(results["code"], "patched main.go") {
		t.Errorf("code result %q, want the CLI's output", results["code"])
	}
	if !strings.Contains(results["slow"], "timed out") {
		t.Errorf("slow result %q, want a timeout", results["slow"])
	}
}
