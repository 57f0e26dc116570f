package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func start(t *testing.T, script Script) *Server {
	t.Helper()
	s, err := Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func post(t *testing.T, ctx context.Context, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

const streamBody = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

// events splits an SSE body into its data payloads, failing on anything
// that is not exactly "data: <payload>" followed by a blank line.
func events(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("line %q is not a data line", line)
		}
		out = append(out, strings.TrimPrefix(line, "data: "))
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("data line %q not followed by a blank line", line)
		}
	}
	return out
}

type testChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		Cost *float64 `json:"cost"`
	} `json:"usage"`
}

func decodeChunks(t *testing.T, evs []string) []testChunk {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", evs)
	}
	var out []testChunk
	for _, e := range evs[:len(evs)-1] {
		var c testChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" || c.Model == "" {
			t.Fatalf("chunk header wrong: %s", e)
		}
		out = append(out, c)
	}
	return out
}

func TestStreamTextWire(t *testing.T) {
	s := start(t, Sequence(Reply{Text: "The quick brown fox.", Reasoning: "think first", Usage: &Usage{PromptTokens: 9, CompletionTokens: 5, CachedTokens: 4, Cost: USD(0.002)}}))
	res := post(t, context.Background(), s.URL()+"/chat/completions", streamBody, nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d content-type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(res.Body)
	chunks := decodeChunks(t, events(t, body))

	var text, reasoning strings.Builder
	textDeltas := 0
	for _, c := range chunks[:len(chunks)-1] {
		if len(c.Choices) != 1 || c.Usage != nil {
			t.Fatalf("content chunk must have one choice and null usage: %+v", c)
		}
		d := c.Choices[0].Delta
		if d.Content != nil && *d.Content != "" {
			text.WriteString(*d.Content)
			textDeltas++
		}
		if d.Reasoning != nil {
			reasoning.WriteString(*d.Reasoning)
		}
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk must carry the assistant role")
	}
	if text.String() != "The quick brown fox." || textDeltas != 4 {
		t.Errorf("text %q in %d deltas, want 4 word deltas", text.String(), textDeltas)
	}
	if reasoning.String() != "think first" {
		t.Errorf("reasoning = %q", reasoning.String())
	}
	fin := chunks[len(chunks)-2].Choices[0].FinishReason
	if fin == nil || *fin != "stop" {
		t.Errorf("finish chunk = %+v", chunks[len(chunks)-2])
	}
	u := chunks[len(chunks)-1]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 9 || u.Usage.CompletionTokens != 5 ||
		u.Usage.TotalTokens != 14 || u.Usage.PromptTokensDetails.CachedTokens != 4 || u.Usage.Cost == nil || *u.Usage.Cost != 0.002 {
		t.Errorf("usage chunk = %+v", u)
	}
}

func TestStreamToolCallWire(t *testing.T) {
	args := `{"path":"a/b.md","content":"ünïcödé text long enough to split"}`
	s := start(t, Sequence(ToolReply(ToolCall{ID: "call_1", Name: "write_file", Arguments: args}, ToolCall{ID: "call_2", Name: "list_files", Arguments: `{}`})))
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}` // no include_usage
	res := post(t, context.Background(), s.URL()+"/chat/completions", body, nil)
	raw, _ := io.ReadAll(res.Body)
	chunks := decodeChunks(t, events(t, raw))

	got := map[int]*strings.Builder{}
	firsts := map[int]int{}
	for i, c := range chunks {
		if c.Usage != nil {
			t.Fatalf("usage sent although not asked for: %+v", c)
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			b, seen := got[tc.Index]
			if !seen {
				b = &strings.Builder{}
				got[tc.Index] = b
				firsts[tc.Index] = i
				if tc.ID == "" || tc.Function.Name == "" || tc.Type != "function" {
					t.Errorf("first fragment of call %d lacks id/name/type: %+v", tc.Index, tc)
				}
			} else if tc.ID != "" || tc.Function.Name != "" {
				t.Errorf("later fragment of call %d repeats id or name: %+v", tc.Index, tc)
			}
			b.WriteString(tc.Function.Arguments)
		}
	}
	if got[0].String() != args || got[1].String() != `{}` {
		t.Errorf("assembled args = %q, %q", got[0], got[1])
	}
	if n := strings.Count(string(raw), `"index":0,"function"`); n < 3 {
		t.Errorf("call 0 arguments came in %d later fragments, want several", n)
	}
	fin := chunks[len(chunks)-1].Choices[0].FinishReason
	if fin == nil || *fin != "tool_calls" {
		t.Errorf("finish_reason = %v", fin)
	}
}

func TestNonStreamingCompletion(t *testing.T) {
	s := start(t, Sequence(Reply{ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: `{"x":1}`}}, Model: "served/model"}))
	res := post(t, context.Background(), s.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	var c struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	m := c.Choices[0].Message
	if c.Object != "chat.completion" || c.Model != "served/model" || m.Role != "assistant" || m.Content != nil ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"x":1}` || c.Choices[0].FinishReason != "tool_calls" || c.Usage.PromptTokens == 0 {
		t.Errorf("completion = %+v", c)
	}
}

func TestErrorsAndRouting(t *testing.T) {
	s := start(t, Sequence(ErrorReply(429, "slow down")))
	tests := []struct {
		name, path, body string
		header           map[string]string
		status           int
		msg              string
	}{
		{"scripted error", "/chat/completions", streamBody, nil, 429, "slow down"},
		{"bad json", "/chat/completions", `{"model":`, nil, 400, "decode chat request"},
		{"no messages", "/chat/completions", `{"model":"m","messages":[]}`, nil, 400, "messages must not be empty"},
		{"unknown route", "/embeddings", `{}`, nil, 404, "no route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := post(t, context.Background(), s.URL()+tt.path, tt.body, tt.header)
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || !strings.Contains(e.Error.Message, tt.msg) || e.Error.Type == "" {
				t.Errorf("got %d %+v, want %d containing %q", res.StatusCode, e, tt.status, tt.msg)
			}
		})
	}
	if n := s.Calls(); n != 1 {
		t.Errorf("Calls = %d, want 1 (undecodable requests are not recorded)", n)
	}
}

func TestRequireKey(t *testing.T) {
	s := start(t, nil)
	s.RequireKey("sk-good")
	for _, tt := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer sk-bad", 401}, {"sk-good", 401}, {"Bearer sk-good", 200}} {
		res := post(t, context.Background(), s.URL()+"/chat/completions", streamBody, map[string]string{"Authorization": tt.auth})
		if res.StatusCode != tt.status {
			t.Errorf("Authorization %q: status %d, want %d", tt.auth, res.StatusCode, tt.status)
		}
	}
	if got := s.Requests()[1].Header.Get("Authorization"); got != "Bearer sk-bad" {
		t.Errorf("recorded header = %q", got)
	}
}

func TestRequestDecoding(t *testing.T) {
	s := start(t, nil)
	body := `{"model":"m","stream":false,"reasoning_effort":"high","reasoning":{"effort":"low"},
	"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"c1","content":"done"}],
	"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}]}`
	post(t, context.Background(), s.URL()+"/chat/completions", body, map[string]string{"X-Title": "t"})
	r := s.Requests()[0]
	if r.Model != "m" || r.Stream || r.ReasoningEffort != "high" || string(r.Reasoning) != `{"effort":"low"}` ||
		r.Path != "/v1/chat/completions" && r.Path != "/chat/completions" || r.Header.Get("X-Title") != "t" || !json.Valid(r.Raw) {
		t.Errorf("request = %+v", r)
	}
	if len(r.Messages) != 4 || r.Messages[1].Content != "ab" || r.Messages[2].ToolCalls[0] != (ToolCall{ID: "c1", Name: "f", Arguments: "{}"}) ||
		r.Messages[3].ToolCallID != "c1" || !r.HasTool("f") || r.HasTool("g") || r.LastMessage().Role != "tool" {
		t.Errorf("messages = %+v", r.Messages)
	}
}

func TestHoldReleaseAndWait(t *testing.T) {
	s := start(t, Sequence(TextReply("first"), TextReply("second")))
	s.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	bodies := make([]string, 2)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions",
				strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			bodies[i] = string(b)
		}()
	}
	if err := s.WaitCalls(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, b := range bodies {
		if b != "" {
			t.Fatalf("a held request was answered before Release: %q", b)
		}
	}
	s.Release()
	wg.Wait()
	joined := bodies[0] + bodies[1]
	if !strings.Contains(joined, `"first"`) || !strings.Contains(joined, `"second"`) {
		t.Errorf("answers after release = %q", bodies)
	}
	short, c2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer c2()
	if err := s.WaitCalls(short, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitCalls for a call that never comes = %v", err)
	}
}

func TestHeldRequestEndsWhenClientLeavesOrServerCloses(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(streamBody))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := s.WaitCalls(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client err = %v", err)
	}

	// A request still held at Close must not keep Close waiting.
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(streamBody))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	if err := s.WaitCalls(wctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestScriptPanicIs500(t *testing.T) {
	s := start(t, func(ChatRequest) Reply { panic("bad script") })
	res := post(t, context.Background(), s.URL()+"/chat/completions", streamBody, nil)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || !strings.Contains(string(b), "bad script") {
		t.Errorf("got %d %s", res.StatusCode, b)
	}
}

func TestURLIsLoopbackV1(t *testing.T) {
	s := start(t, nil)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Errorf("URL = %q", s.URL())
	}
}

func TestSequence(t *testing.T) {
	seq := Sequence(TextReply("a"), TextReply("b"))
	var got []string
	for range 4 {
		got = append(got, seq(ChatRequest{}).Text)
	}
	if strings.Join(got, "") != "abbb" {
		t.Errorf("Sequence gave %q, want a b b b", got)
	}
	if Sequence()(ChatRequest{}).Text != "ok" {
		t.Errorf("empty Sequence must answer ok")
	}
}

func TestSplitters(t *testing.T) {
	for _, s := range []string{"", "one", "two words", "  lead and trail  ", "tabs\tand\nnewlines", "ünï cödé ✓"} {
		if got := strings.Join(splitWords(s), ""); got != s {
			t.Errorf("splitWords(%q) joins to %q", s, got)
		}
	}
	if n := len(splitWords("a b c d")); n != 4 {
		t.Errorf("splitWords gave %d parts, want 4", n)
	}
	for _, s := range []string{"", "{}", `{"k":"ééééééééééééé✓✓✓✓"}`} {
		parts := splitArgs(s)
		if len(parts) == 0 || strings.Join(parts, "") != s {
			t.Errorf("splitArgs(%q) = %q", s, parts)
		}
		for _, p := range parts {
			if !json.Valid([]byte(`"` + strings.ReplaceAll(p, `"`, `\"`) + `"`)) {
				t.Errorf("fragment %q is not valid UTF-8 text", p)
			}
		}
	}
}

// FuzzDecodeRequest: any body is either decoded or refused with an error.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		streamBody,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":"m","messages":[{"role":"robot"}]}`,
		`{"model":"m","messages":[{"role":"user","content":{"x":1}}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":7}}]}]}`,
		`{"model":"m","messages":[{"role":"user"}],"reasoning":null,"stream_options":null}`,
		`null`, `[]`, ``, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err == nil && (req.Model == "" || len(req.Messages) == 0) {
			t.Fatalf("accepted a request without model or messages: %q", body)
		}
	})
}
