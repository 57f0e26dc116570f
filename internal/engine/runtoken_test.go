package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

type tokenKey struct{}

// tokenSeen is a tool that reports the credential its call context carries.
func tokenSeen(mu *sync.Mutex, seen *[]string) tool.Tool {
	return tool.Func("whoami", "reports the run credential", true, func(ctx context.Context, _ tool.Call, _ echoArgs) (tool.Result, error) {
		tok, _ := ctx.Value(tokenKey{}).(string)
		mu.Lock()
		*seen = append(*seen, tok)
		mu.Unlock()
		return tool.Text("ok"), nil
	})
}

func recordToken(ctx context.Context, tok string) context.Context {
	return context.WithValue(ctx, tokenKey{}, tok)
}

// A per-run credential reaches the run's tool calls, is never stored, and
// a run resumed by a process that never held it is told it is lost — so
// the tool side can refuse instead of using the shared credential.
func TestRunTokenHeldInMemoryAndMarkedLostAfterRestart(t *testing.T) {
	const secret = "user-credential-5f1c"
	var mu sync.Mutex
	var seen []string
	call := model.ToolCall{ID: "c1", Name: "whoami", Arguments: json.RawMessage(`{"text":"x"}`)}
	h := newHarnessWith(t, toolThenAnswer(call), big, func(o *engine.Options) { o.CallContext = recordToken }, tokenSeen(&mu, &seen))

	r := submitAndWait(t, h.svc, engine.Submission{AuthToken: secret, Request: userRequest("who am I")})
	if r.Status != store.StatusDone {
		t.Fatalf("run: status %s (%s)", r.Status, r.Error)
	}
	if len(seen) != 1 || seen[0] != secret {
		t.Fatalf("tool saw credentials %q, want the submitted one", seen)
	}
	if strings.Contains(string(r.Request), secret) || !strings.Contains(string(r.Request), `"per_run_auth":true`) {
		t.Fatalf("stored request %s: want the flag, never the value", r.Request)
	}

	// "Restart": the run is in the database, running, and this process
	// never saw its credential.
	dir, st, _ := openEnv(t)
	seedRun(t, st, "resp_r", "sess_r", engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "who am I"}}, Profile: "trusted", PerRunAuth: true}, false)
	seen = nil
	svc := restart(t, st, dir, toolThenAnswer(call), func(o *engine.Options) { o.CallContext = recordToken }, tokenSeen(&mu, &seen))
	if r = waitFor(t, svc, "resp_r"); r.Status != store.StatusDone {
		t.Fatalf("resumed run: status %s (%s)", r.Status, r.Error)
	}
	if len(seen) != 1 || seen[0] != engine.TokenLost {
		t.Fatalf("resumed tool saw %q, want engine.TokenLost", seen)
	}
}

// The attempt blocks are computed with the run's credential in their
// context, as its tool calls are: task-start hydration calls the product's
// MCP reads for the run, with the run's authority and no other.
func TestAttemptBlocksSeeTheRunToken(t *testing.T) {
	const secret = "user-credential-a7b2"
	var mu sync.Mutex
	var seen []string
	h := newHarnessWith(t, toolThenAnswer(model.ToolCall{ID: "c1", Name: "whoami", Arguments: json.RawMessage(`{"text":"x"}`)}), big, func(o *engine.Options) {
		o.CallContext = recordToken
		o.AttemptBlocks = func(ctx context.Context, _, _, _ string) []string {
			tok, _ := ctx.Value(tokenKey{}).(string)
			mu.Lock()
			seen = append(seen, tok)
			mu.Unlock()
			return nil
		}
	}, tokenSeen(&mu, &[]string{}))
	for _, tok := range []string{secret, ""} {
		if r := submitAndWait(t, h.svc, engine.Submission{AuthToken: tok, Request: userRequest("who am I")}); r.Status != store.StatusDone {
			t.Fatalf("run: status %s (%s)", r.Status, r.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != secret || seen[1] != "" {
		t.Fatalf("attempt blocks saw credentials %q, want the first run's and then none", seen)
	}
}
