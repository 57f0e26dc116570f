package wiretest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// MemoStep is one call of a memo conversation: the request, whether the
// caller starts a fresh memo before it (a resumed run), and what to do
// just before sending it (nil = nothing).
type MemoStep struct {
	Name   string
	Req    model.Request
	Fresh  bool
	Before func()
}

// MemoConversation is the call sequence a request memo must not change a
// byte of: a conversation that grows a tool round per call behind a
// per-turn block that changes every call, a call retried as it was,
// arguments rewritten in place in a stored message, a message with
// images in the history, a changed system block, a compaction that
// rewrites the history into a summary and a short tail, and a resumed run
// that starts with a fresh memo.
func MemoConversation(base model.Request) []MemoStep {
	var steps []MemoStep
	hist := append([]model.Message(nil), base.Messages...)
	send := func(name string, fresh bool, mutate func(r *model.Request)) {
		r := base
		r.Messages = append(append([]model.Message(nil), hist...),
			model.Message{Role: model.RoleUser, Content: fmt.Sprintf("<delta:turn>call %d</delta:turn>", len(steps)+1)})
		if mutate != nil {
			mutate(&r)
		}
		steps = append(steps, MemoStep{Name: name, Req: r, Fresh: fresh})
	}
	round := func(i int, args json.RawMessage) {
		id := fmt.Sprintf("call_%d", i)
		hist = append(hist,
			model.Message{Role: model.RoleAssistant, Content: map[bool]string{true: "Looking <a> & b.", false: ""}[i%3 == 0],
				ToolCalls: []model.ToolCall{{ID: id, Name: "write_file", Arguments: args}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "write_file", Content: fmt.Sprintf("wrote %d \u2028 \"bytes\"", i)})
	}
	send("first", true, nil)
	for i := 1; i <= 4; i++ {
		round(i, json.RawMessage(fmt.Sprintf(`{"path":"p%d.md","content":"x"}`, i)))
		send(fmt.Sprintf("round %d", i), false, nil)
	}
	send("retried as it was", false, func(r *model.Request) { *r = steps[len(steps)-1].Req })
	// A stored message's arguments rewritten in place (the same backing
	// array, other bytes): the memo must see the change.
	args := hist[len(hist)-2].ToolCalls[0].Arguments
	send("arguments rewritten in place", false, nil)
	steps[len(steps)-1].Before = func() { copy(args, `{"path":"ZZ`) }
	round(5, json.RawMessage(" \n"))
	send("blank arguments", false, nil)
	hist = append(hist, model.Message{Role: model.RoleUser, Content: "look", Images: []model.Image{{MIME: "image/png", Data: PNG}}})
	send("images in the history", false, nil)
	round(6, json.RawMessage(`{}`))
	send("after images", false, nil)
	send("system block changed", false, func(r *model.Request) {
		r.System = append([]string{"You are Delta, compacted."}, r.System[1:]...)
	})
	hist = append([]model.Message{{Role: model.RoleUser, Content: "<delta:summary>pages 1 to 6 written</delta:summary>"}}, hist[len(hist)-2:]...)
	send("compaction rewrote the history", false, nil)
	round(7, json.RawMessage(`{"path":"p7.md"}`))
	send("after the compaction", false, nil)
	send("resumed run", true, nil)
	round(8, json.RawMessage(`{"path":"p8.md"}`))
	send("resumed run grows", false, nil)
	send("history emptied", false, func(r *model.Request) { r.Messages = r.Messages[len(r.Messages)-1:] })
	return steps
}

// PlayMemo walks MemoConversation(base) the way a run does: each step's
// Before runs, then send gets the step and its request carrying the
// conversation's memo (a fresh one where the step says so). st.Req is the
// request without a memo.
func PlayMemo(base model.Request, send func(st MemoStep, withMemo model.Request)) {
	memo := &model.Memo{}
	for _, st := range MemoConversation(base) {
		if st.Fresh {
			memo = &model.Memo{}
		}
		if st.Before != nil {
			st.Before()
		}
		r := st.Req
		r.Memo = memo
		send(st, r)
	}
}

// memoSameBytes: a client given a memo sends, on every call of
// MemoConversation, the very body a client without one sends.
func (w Wire) memoSameBytes(t *testing.T) {
	withMemo, without := modeltest.Serve(t, nil), modeltest.Serve(t, nil)
	a, b := w.client(withMemo), w.client(without)
	i := 0
	PlayMemo(w.Request(), func(st MemoStep, r model.Request) {
		if _, err := a.Complete(context.Background(), r, model.Stream{}); err != nil {
			t.Fatalf("%s: with memo: %v", st.Name, err)
		}
		if _, err := b.Complete(context.Background(), st.Req, model.Stream{}); err != nil {
			t.Fatalf("%s: without: %v", st.Name, err)
		}
		got, want := withMemo.Requests()[i].Raw, without.Requests()[i].Raw
		if string(got) != string(want) {
			t.Fatalf("%s: with a memo the body differs:\nmemo:  %s\nfresh: %s", st.Name, got, want)
		}
		i++
	})
}
