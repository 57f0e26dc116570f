package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// emailCall is a send_email call with a 10 KB body.
func emailCall(id string) (model.ToolCall, string) {
	body := strings.Repeat("The quarterly figures are in the attached sheet. ", 210)
	args, _ := json.Marshal(emailArgs{To: "ops@example.com", Subject: "Quarterly report", Body: body})
	return model.ToolCall{ID: id, Name: "send_email", Arguments: args}, string(args)
}

// recordingProvider runs script and keeps every request's messages.
type recordingProvider struct {
	mu   sync.Mutex
	reqs [][]model.Message
}

func (r *recordingProvider) wrap(script model.ProviderFunc) model.ProviderFunc {
	return func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		r.mu.Lock()
		r.reqs = append(r.reqs, append([]model.Message(nil), req.Messages...))
		r.mu.Unlock()
		return script(ctx, req, s)
	}
}

func (r *recordingProvider) last() []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// argsOf finds the arguments of a call on an assistant message.
func argsOf(t *testing.T, msgs []model.Message, callID string) json.RawMessage {
	t.Helper()
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if m.Role == model.RoleAssistant && c.ID == callID {
				return c.Arguments
			}
		}
	}
	t.Fatalf("no call %s among %d messages", callID, len(msgs))
	return nil
}

// checkBounded asserts what a reader of the history would check: the call's
// arguments fit, to and subject are intact, and body is a placeholder.
func checkBounded(t *testing.T, where string, args json.RawMessage, max int) {
	t.Helper()
	var a emailArgs
	if err := json.Unmarshal(args, &a); err != nil {
		t.Fatalf("%s: arguments %q: %v", where, args, err)
	}
	if len(args) > max || a.To != "ops@example.com" || a.Subject != "Quarterly report" ||
		!strings.HasPrefix(a.Body, "[delta:elided ") || !strings.Contains(a.Body, "run journal") {
		t.Fatalf("%s: arguments (%d bytes, bound %d) = %.300s", where, len(args), max, args)
	}
}

func TestArgBoundShrinksOnlySucceededCalls(t *testing.T) {
	for _, tt := range []struct {
		name    string
		max     int
		fail    bool
		bounded bool
	}{
		{"a successful call is bounded", 256, false, true},
		{"a failed call keeps its arguments", 256, true, false},
		{"bound off changes nothing", 0, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call, full := emailCall("call_mail")
			var sent atomic.Int32
			send := tool.Func("send_email", "sends an email", false, func(_ context.Context, _ tool.Call, a emailArgs) (tool.Result, error) {
				sent.Add(1)
				if tt.fail {
					return tool.Errorf("mailbox full"), nil
				}
				return tool.Text("sent to " + a.To), nil
			})
			rec := &recordingProvider{}
			h := newHarnessWith(t, rec.wrap(toolThenAnswer(call)), big, func(o *engine.Options) { o.ToolArgMax = tt.max }, send)
			r, _ := h.run(t, "mail the report")
			if r.Status != store.StatusDone || sent.Load() != 1 {
				t.Fatalf("status %s (%s), sent %d", r.Status, r.Error, sent.Load())
			}
			// The next model request after the call.
			next := argsOf(t, rec.last(), "call_mail")
			msgs, err := h.st.Messages(context.Background(), r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			inDB := argsOf(t, msgs, "call_mail")
			if tt.bounded {
				checkBounded(t, "next request", next, tt.max)
				checkBounded(t, "stored history", inDB, tt.max)
			} else {
				var a emailArgs
				if string(next) != full || json.Unmarshal(inDB, &a) != nil || len(a.Body) < 10000 {
					t.Fatalf("arguments changed: next request %d bytes, stored %d bytes, want %d", len(next), len(inDB), len(full))
				}
			}
			journal, err := h.st.Journal(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(journal["call_mail"].Args); got != full {
				t.Fatalf("journal holds %d bytes, want the full %d", len(got), len(full))
			}
		})
	}
}

func TestArgBoundHoldsAcrossRestart(t *testing.T) {
	call, _ := emailCall("call_mail")
	send := tool.Func("send_email", "sends an email", false, func(context.Context, tool.Call, emailArgs) (tool.Result, error) {
		return tool.Text("sent"), nil
	})
	h := newHarnessWith(t, toolThenAnswer(call), big, func(o *engine.Options) { o.ToolArgMax = 256 }, send)
	first, _ := h.run(t, "mail the report")
	if first.Status != store.StatusDone {
		t.Fatalf("status %s (%s)", first.Status, first.Error)
	}
	ctx := context.Background()
	h.q.Close(ctx)

	// "Restart": a fresh engine over the same database, with the bound now
	// off. The continuation's history is what was stored: still bounded.
	rec := &recordingProvider{}
	p := rec.wrap(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Model: req.Model, Text: "already sent"}, nil
	})
	svc := restart(t, h.st, h.dir, p, nil, send)
	if r := submitAndWait(t, svc, engine.Submission{PreviousID: first.ID, Request: userRequest("did you send it?")}); r.Status != store.StatusDone {
		t.Fatalf("continuation: status %s (%s)", r.Status, r.Error)
	}
	checkBounded(t, "history after restart", argsOf(t, rec.last(), "call_mail"), 256)
}

// TestArgBoundAppliesToRecoveredCalls: a read-only call interrupted by a
// crash runs again on resume; its success bounds it like any other, and the
// first model request of the resumed attempt already sees that.
func TestArgBoundAppliesToRecoveredCalls(t *testing.T) {
	ctx := context.Background()
	dir, st, _ := openEnv(t)
	call, full := emailCall("call_draft")
	call.Name = "draft_email"
	var runs atomic.Int32
	draft := tool.Func("draft_email", "previews an email", true, func(context.Context, tool.Call, emailArgs) (tool.Result, error) {
		runs.Add(1)
		return tool.Text("preview ok"), nil
	})
	seedRun(t, st, "resp_r", "sess_r", engine.Request{Input: []model.Message{{Role: model.RoleUser, Content: "draft it"}}, Profile: "trusted"}, true)
	if _, err := st.CommitStep(ctx, store.Step{RunID: "resp_r", SessionID: "sess_r", Model: "primary",
		Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}},
		Intents: []store.Intent{{CallID: call.ID, Name: call.Name, Args: call.Arguments, ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	rec := &recordingProvider{}
	p := rec.wrap(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		return model.Response{Model: req.Model, Text: "drafted"}, nil
	})
	svc := restart(t, st, dir, p, func(o *engine.Options) { o.ToolArgMax = 256 }, draft)
	r := waitFor(t, svc, "resp_r")
	if r.Status != store.StatusDone || runs.Load() != 1 {
		t.Fatalf("status %s (%s), tool runs %d", r.Status, r.Error, runs.Load())
	}
	checkBounded(t, "first request after resume", argsOf(t, rec.last(), "call_draft"), 256)
	journal, _ := st.Journal(ctx, "resp_r")
	if string(journal["call_draft"].Args) != full {
		t.Fatalf("journal lost the full arguments")
	}
}

func TestPlaceholderCopiedIntoACallIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content string
		refused bool
	}{
		{"a copied placeholder", "[delta:elided 18342 bytes of call call_1 — full arguments kept in the run journal]", true},
		{"a placeholder inside real text", "# Notes\n[delta:elided 120 bytes — full arguments kept in the run journal]\n", true},
		{"text that only mentions the format", `const p = "[delta:elided %d bytes"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var wrote atomic.Int32
			write := tool.Func("write_file", "writes a file", false, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
				wrote.Add(1)
				return tool.Text("written"), nil
			})
			look := tool.Func("grep", "searches", true, func(context.Context, tool.Call, echoArgs) (tool.Result, error) {
				wrote.Add(1)
				return tool.Text("found"), nil
			})
			args, _ := json.Marshal(echoArgs{Text: tt.content})
			h := newHarnessWith(t, toolThenAnswer(
				model.ToolCall{ID: "w", Name: "write_file", Arguments: args},
				model.ToolCall{ID: "g", Name: "grep", Arguments: args},
			), big, func(o *engine.Options) { o.ToolArgMax = 256 }, write, look)
			r, _ := h.run(t, "save the notes")
			if r.Status != store.StatusDone {
				t.Fatalf("status %s (%s)", r.Status, r.Error)
			}
			journal, _ := h.st.Journal(context.Background(), r.ID)
			for _, id := range []string{"w", "g"} {
				j := journal[id]
				if !tt.refused {
					if j.IsError || wrote.Load() != 2 {
						t.Fatalf("call %s refused (%q), tools ran %d times", id, j.Result, wrote.Load())
					}
					continue
				}
				if wrote.Load() != 0 || !j.IsError {
					t.Fatalf("call %s: tools ran %d times, is_error %v", id, wrote.Load(), j.IsError)
				}
				for _, want := range []string{"elided", "run journal", "did not run", "real content"} {
					if !strings.Contains(j.Result, want) {
						t.Fatalf("call %s: refusal %q does not say %q", id, j.Result, want)
					}
				}
			}
		})
	}
}
