package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

func TestStatusErrors(t *testing.T) {
	tests := []struct {
		status    int
		msg       string
		retriable bool
		overflow  bool
	}{
		{400, "messages.0: bad block", false, false},
		{400, "prompt is too long: 210000 tokens > 200000 maximum", false, true},
		{400, "input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000", false, true},
		{401, "invalid x-api-key", false, false},
		{403, "permission denied", false, false},
		{404, "model: claude-nope", false, false},
		{408, "timeout", true, false},
		{409, "conflict", true, false},
		{413, "request too large", false, false},
		{429, "rate limited", true, false},
		{500, "internal", true, false},
		{503, "unavailable", true, false},
		{529, "Overloaded", true, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+"/"+tt.msg, func(t *testing.T) {
			fake := startFake(t, modeltest.Sequence(modeltest.ErrorReply(tt.status, tt.msg)))
			_, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %T %v, want *model.Error", err, err)
			}
			if me.Status != tt.status || me.Message != tt.msg || me.Retriable != tt.retriable {
				t.Errorf("got status %d msg %q retriable %v", me.Status, me.Message, me.Retriable)
			}
			if errors.Is(err, model.ErrContextOverflow) != tt.overflow {
				t.Errorf("ErrContextOverflow = %v, want %v", !tt.overflow, tt.overflow)
			}
		})
	}
}

func TestRefusedKeyRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + r.Header.Get("X-Api-Key") + `"}}`))
	}))
	defer srv.Close()
	_, err := anthropic.New(anthropic.Options{BaseURL: srv.URL + "/v1", APIKey: testKey}).Complete(context.Background(), basicRequest(), model.Stream{})
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("err = %v", err)
	}
}

// serveEvents answers every request with the given raw SSE body.
func serveEvents(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestStreamFailures(t *testing.T) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Partial \"}}\n\n"
	tests := []struct {
		name      string
		body      string
		status    int
		retriable bool
		want      string
	}{
		{"overloaded mid-stream", start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", 529, true, "Overloaded"},
		{"invalid request mid-stream", start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n", 400, false, "bad"},
		{"unknown error type", start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"brand_new\",\"message\":\"odd\"}}\n\n", 0, true, "odd"},
		{"cut before message_stop", start, 0, true, "ended before"},
		{"garbled event", start + "event: content_block_delta\ndata: {not json\n\n", 0, true, "malformed"},
		{"delta for unknown block", start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", 0, true, "unknown block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			res, err := anthropic.New(anthropic.Options{BaseURL: serveEvents(t, tt.body)}).Complete(context.Background(), basicRequest(), rec.stream())
			var me *model.Error
			if !errors.As(err, &me) || me.Status != tt.status || me.Retriable != tt.retriable || !strings.Contains(me.Message, tt.want) {
				t.Fatalf("err = %#v", err)
			}
			if res.Text != "Partial " {
				t.Errorf("partial text = %q", res.Text)
			}
		})
	}
}

func TestCutAndAbortedStreams(t *testing.T) {
	for _, rep := range []modeltest.Reply{
		{Text: "one two three four five six seven eight", EndEarly: true},
		{Text: "one two three four five six seven eight", Abort: true},
	} {
		fake := startFake(t, modeltest.Sequence(rep))
		_, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
		if !model.IsRetriable(err) {
			t.Errorf("EndEarly=%v Abort=%v: err = %v, want retriable", rep.EndEarly, rep.Abort, err)
		}
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	fake := startFake(t, nil)
	fake.Hold()
	defer fake.Release()
	c := anthropic.New(anthropic.Options{BaseURL: fake.URL(), Timeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || !me.Retriable || !strings.Contains(me.Message, "within 50ms") {
		t.Errorf("timeout: err = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}).Complete(ctx, basicRequest(), model.Stream{})
		done <- err
	}()
	if err := fake.WaitCalls(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) || errors.As(err, &me) {
		t.Errorf("cancel: err = %v, want context.Canceled and no *model.Error", err)
	}
}
