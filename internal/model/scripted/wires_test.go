package scripted

import (
	"context"
	"io"
	"strings"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	anthsse "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	oaisse "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// TestAnthropicStreamDecodesWithSDK: the SDK's own decoder and accumulator
// read the fake's stream into the message the script asked for.
func TestAnthropicStreamDecodesWithSDK(t *testing.T) {
	s := start(t, Sequence(Reply{Reasoning: "think it over", Text: "Two words.", ToolCalls: []ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":"ünïcödé long enough"}`}}}))
	body := `{"model":"claude-opus-4-6","max_tokens":1024,"stream":true,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hi"}]}`
	res := post(t, context.Background(), s.URL()+"/messages", body, map[string]string{"anthropic-version": "2023-06-01"})
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	stream := anthsse.NewStream[anth.MessageStreamEventUnion](anthsse.NewDecoder(res), nil)
	var msg anth.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Thinking != "think it over" || msg.Content[0].Signature == "" ||
		msg.Content[1].Text != "Two words." || msg.Content[2].Name != "f" || string(msg.Content[2].Input) != `{"a":"ünïcödé long enough"}` ||
		msg.StopReason != "tool_use" || msg.Usage.OutputTokens == 0 {
		t.Errorf("message = %+v", msg)
	}
}

func TestAnthropicRequestChecks(t *testing.T) {
	s := start(t, nil)
	s.RequireKey("k")
	tests := []struct {
		name, body string
		header     map[string]string
		status     int
		msg        string
	}{
		{"no version", `{}`, map[string]string{"x-api-key": "k"}, 400, "anthropic-version"},
		{"bearer instead of x-api-key", `{}`, map[string]string{"anthropic-version": "v", "Authorization": "Bearer k"}, 401, "x-api-key"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, map[string]string{"anthropic-version": "v", "x-api-key": "k"}, 400, "max_tokens"},
		{"empty text", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, map[string]string{"anthropic-version": "v", "x-api-key": "k"}, 400, "non-empty"},
		{"five markers", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[` +
			strings.Repeat(`{"type":"text","text":"x","cache_control":{"type":"ephemeral"}},`, 3) + `{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`, map[string]string{"anthropic-version": "v", "x-api-key": "k"}, 400, "maximum of 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := post(t, context.Background(), s.URL()+"/messages", tt.body, tt.header)
			raw, _ := io.ReadAll(res.Body)
			b := string(raw)
			if res.StatusCode != tt.status || !strings.Contains(b, tt.msg) || !strings.Contains(b, `"type":"error"`) {
				t.Errorf("got %d %s", res.StatusCode, b)
			}
		})
	}
}

// TestResponsesStreamDecodesWithSDK: openai-go's own event union reads
// every event of the fake's stream, and the completed response carries the
// output and usage.
func TestResponsesStreamDecodesWithSDK(t *testing.T) {
	s := start(t, Sequence(Reply{Reasoning: "plan", Text: "Hi there.", ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}}))
	body := `{"model":"gpt-5","stream":true,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"hi"}]}`
	res := post(t, context.Background(), s.URL()+"/responses", body, nil)
	stream := oaisse.NewStream[responses.ResponseStreamEventUnion](oaisse.NewDecoder(res), nil)
	var text string
	var done responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq+1 {
			t.Errorf("sequence_number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Hi there." || done.Status != "completed" || len(done.Output) != 3 || done.Output[0].EncryptedContent == "" ||
		done.Output[2].CallID != "call_1" || done.Output[2].Arguments.OfString != `{"a":1}` || done.Usage.InputTokens == 0 {
		t.Errorf("text %q response %+v", text, done)
	}
}
