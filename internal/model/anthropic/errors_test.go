package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

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
			t.Parallel()
			var rec wiretest.Recorder
			res, err := anthropic.New(anthropic.Options{BaseURL: wiretest.ServeEvents(t, tt.body)}).Complete(context.Background(), basicRequest(), rec.Stream())
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
