package openai_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
)

func TestHTTPErrors(t *testing.T) {
	long := strings.Repeat("overloaded ", 300)
	tests := []struct {
		name      string
		status    int
		msg       string
		retriable bool
		wantMsg   string
	}{
		{"rate limited", 429, "Rate limit reached", true, "Rate limit reached"},
		{"server error", 500, "The server had an error", true, "The server had an error"},
		{"bad gateway", 502, "upstream down", true, "upstream down"},
		{"unavailable", 503, "", true, "Service Unavailable"},
		{"request timeout", 408, "timeout", true, "timeout"},
		{"conflict", 409, "token rotating", true, "token rotating"},
		{"bad request", 400, "context_length_exceeded: too long", false, "context_length_exceeded: too long"},
		{"not found", 404, "model not found", false, "model not found"},
		{"forbidden", 403, "region blocked", false, "region blocked"},
		{"long message is cut", 500, long, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := startFake(t, modeltest.Sequence(modeltest.ErrorReply(tt.status, tt.msg)))
			_, err := openai.New(openai.Options{BaseURL: fake.URL(), APIKey: testKey}).Complete(context.Background(), basicRequest(), model.Stream{})
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *model.Error", err, err)
			}
			if me.Status != tt.status || me.Retriable != tt.retriable || model.IsRetriable(err) != tt.retriable {
				t.Errorf("Status=%d Retriable=%v, want %d %v", me.Status, me.Retriable, tt.status, tt.retriable)
			}
			if tt.wantMsg != "" && me.Message != tt.wantMsg {
				t.Errorf("Message = %q, want %q", me.Message, tt.wantMsg)
			}
			if n := utf8.RuneCountInString(me.Message); n > 500 {
				t.Errorf("Message has %d characters, want at most 500", n)
			}
			if fake.Calls() != 1 {
				t.Errorf("client made %d attempts, want exactly 1 (the harness owns retries)", fake.Calls())
			}
		})
	}
}

func TestUnauthorizedNeverLeaksKey(t *testing.T) {
	fake := startFake(t, nil)
	fake.RequireKey("sk-the-right-key")
	_, err := openai.New(openai.Options{BaseURL: fake.URL(), APIKey: testKey}).Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *model.Error", err)
	}
	if me.Status != 401 || me.Retriable {
		t.Errorf("Status=%d Retriable=%v, want 401 false", me.Status, me.Retriable)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(me.Message, testKey) {
		t.Errorf("error leaks the API key: %q", err.Error())
	}
	if !strings.Contains(me.Message, "Incorrect API key provided") {
		t.Errorf("Message = %q, want the server's message", me.Message)
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}))
	defer srv.Close()
	_, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1"}).Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 502 || !me.Retriable {
		t.Fatalf("err = %#v, want retriable *model.Error with status 502", err)
	}
	if !strings.Contains(me.Message, "502 Bad Gateway") {
		t.Errorf("Message = %q", me.Message)
	}
}

func TestStreamCutIsRetriable(t *testing.T) {
	tests := []struct {
		name  string
		reply modeltest.Reply
	}{
		{"ends without finish or DONE", modeltest.Reply{Text: "one two three four five six", EndEarly: true}},
		{"connection dropped mid-stream", modeltest.Reply{Text: "one two three four five six", Abort: true}},
		{"tool call cut", modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"a.md","content":"long enough to split"}`}}, EndEarly: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := startFake(t, modeltest.Sequence(tt.reply))
			var rec recorder
			res, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), rec.stream())
			var me *model.Error
			if !errors.As(err, &me) || !me.Retriable || me.Status != 0 {
				t.Fatalf("err = %v, want retriable *model.Error without status", err)
			}
			if tt.reply.Text != "" {
				if text, _ := rec.joined("t:"); text == "" || text == tt.reply.Text || res.Text != text {
					t.Errorf("streamed %q, partial result %q: want a strict prefix of %q", text, res.Text, tt.reply.Text)
				}
			}
		})
	}
}

// sseServer answers every request with the given raw event-stream body.
func sseServer(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestErrorEventInStream(t *testing.T) {
	first := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"
	tests := []struct {
		name      string
		event     string
		status    int
		retriable bool
	}{
		{"upstream 502", `data: {"error":{"code":502,"message":"Provider returned error"}}`, 502, true},
		{"no code", `data: {"error":{"message":"Internal"}}`, 0, true},
		{"client error code", `data: {"error":{"code":400,"message":"bad input"}}`, 400, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := sseServer(t, first+tt.event+"\n\n")
			res, err := openai.New(openai.Options{BaseURL: url}).Complete(context.Background(), basicRequest(), model.Stream{})
			var me *model.Error
			if !errors.As(err, &me) || me.Status != tt.status || me.Retriable != tt.retriable {
				t.Fatalf("err = %v, want *model.Error status %d retriable %v", err, tt.status, tt.retriable)
			}
			if res.Text != "Hel" {
				t.Errorf("partial text = %q, want %q", res.Text, "Hel")
			}
		})
	}
}

func TestCancelWhileHeld(t *testing.T) {
	fake := startFake(t, nil)
	fake.Hold()
	defer fake.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(ctx, basicRequest(), model.Stream{})
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := fake.WaitCalls(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("a cancelled call must not look like a model failure: %v", err)
	}
}

func TestTimeoutIsRetriable(t *testing.T) {
	fake := startFake(t, nil)
	fake.Hold()
	defer fake.Release()
	c := openai.New(openai.Options{BaseURL: fake.URL(), Timeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || !me.Retriable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want retriable *model.Error wrapping DeadlineExceeded", err)
	}
}

func TestNetworkErrorIsRetriable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	_, err = openai.New(openai.Options{BaseURL: "http://" + addr + "/v1", APIKey: testKey}).Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || !me.Retriable || me.Status != 0 {
		t.Fatalf("err = %v, want retriable *model.Error with status 0", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks key: %v", err)
	}
}
