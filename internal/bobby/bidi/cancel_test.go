package bidi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestCancelDuringAWriteKeepsTheConnection: a caller's context that ends
// while its command is still being written abandons that call only. The
// WebSocket library closes a connection whose write context ends mid-frame,
// so a tool timeout would otherwise take every page of the browser with it.
func TestCancelDuringAWriteKeepsTheConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		c.SetReadLimit(-1)
		time.Sleep(400 * time.Millisecond) // a busy browser: the big frame waits in the socket
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var cmd struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(b, &cmd)
			reply, _ := json.Marshal(map[string]any{"type": "success", "id": cmd.ID, "result": map[string]any{}})
			if err := c.Write(r.Context(), websocket.MessageText, reply); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	conn, err := Dial(testCtx(t), "ws"+strings.TrimPrefix(srv.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	big := map[string]string{"data": strings.Repeat("x", 32<<20)}
	if err := conn.Call(ctx, "test.big", big, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call cancelled mid-write = %v, want the deadline", err)
	}
	if err := conn.Call(testCtx(t), "test.small", nil, nil); err != nil {
		t.Fatalf("the next call after a cancelled write: %v", err)
	}
}
