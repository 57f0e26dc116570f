package scripted

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestForgetRequestsStillCountsAndScripts(t *testing.T) {
	seen := 0
	s := start(t, func(ChatRequest) Reply { seen++; return TextReply("ok") })
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	do := func() {
		res := post(t, context.Background(), s.URL()+"/chat/completions", body, nil)
		_, _ = io.Copy(io.Discard, res.Body) // drained so the connection is reused
		res.Body.Close()
	}
	do()
	s.ForgetRequests()
	do()
	do()
	if err := s.WaitCalls(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if s.Calls() != 3 || len(s.Requests()) != 1 || seen != 3 {
		t.Fatalf("calls %d, kept %d, scripted %d; want 3, 1, 3", s.Calls(), len(s.Requests()), seen)
	}
}

func TestOverflowReplyOnEachWire(t *testing.T) {
	s := start(t, Sequence(OverflowReply()))
	for _, tt := range []struct{ path, body, want string }{
		{"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "context_length_exceeded"},
		{"/responses", `{"model":"m","input":"hi"}`, "context_length_exceeded"},
		{"/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "prompt is too long"},
	} {
		res := post(t, context.Background(), s.URL()+tt.path, tt.body, map[string]string{"anthropic-version": "2023-06-01"})
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tt.path, res.StatusCode, b, tt.want)
		}
	}
}
