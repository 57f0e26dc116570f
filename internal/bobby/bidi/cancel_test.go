package bidi

import (
	"context"
	"errors"
	"fmt"
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
	url := wsPeer(t, func(c *websocket.Conn) {
		c.SetReadLimit(-1)
		time.Sleep(400 * time.Millisecond) // a busy browser: the big frame waits in the socket
	}, func(id int64, _ string) []string {
		return []string{fmt.Sprintf(`{"type":"success","id":%d,"result":{}}`, id)}
	})
	conn, err := Dial(testCtx(t), url)
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
