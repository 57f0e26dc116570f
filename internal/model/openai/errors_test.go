package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

// TestEmptyErrorMessage: an error answer without a message is named by
// its status.
func TestEmptyErrorMessage(t *testing.T) {
	fake := modeltest.Serve(t, modeltest.Sequence(modeltest.ErrorReply(503, "")))
	_, err := openai.New(openai.Options{BaseURL: fake.URL()}).Complete(context.Background(), basicRequest(), model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 503 || !me.Retriable || me.Message != "Service Unavailable" {
		t.Fatalf("err = %#v", err)
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
			t.Parallel()
			url := wiretest.ServeEvents(t, first+tt.event+"\n\n")
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
