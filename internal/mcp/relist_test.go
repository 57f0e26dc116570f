package mcp_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/tool"
)

// A server that reveals a tool later (bobby's phases) announces it;
// Delta lists again and registers only the new tool, once, so it is
// callable without a restart.
func TestToolsRevealedLaterAreAdded(t *testing.T) {
	reg := tool.NewRegistry()
	var mu sync.Mutex
	var added []string
	m := open(t, mcp.Options{
		Servers: []config.MCPServer{stdioServer("kb", nil)},
		OnToolsAdded: func(ts []tool.Tool) {
			reg.Add(ts...) // panics on a duplicate: each tool must arrive once
			mu.Lock()
			for _, tl := range ts {
				added = append(added, tl.Spec().Name)
			}
			mu.Unlock()
		},
	})
	reg.Add(m.Tools()...)
	if _, ok := reg.Get("kb__secret_door"); ok {
		t.Fatal("secret_door is listed before unlock")
	}
	before := m.Status()[0].Tools
	tools := byName(t, m)
	for range 2 { // the second unlock reveals nothing new
		if res := call(t, t.Context(), tools, "kb__unlock", `{}`); res.IsError {
			t.Fatalf("unlock: %s", res.Text)
		}
	}
	// unlock is not read-only, and the server announces tool changes: the
	// call lists again before it returns, so the very next turn has the
	// tool, however late the notification arrives.
	door, ok := reg.Get("kb__secret_door")
	if !ok {
		t.Fatal("secret_door not registered when the unlock call returned")
	}
	res, err := door.Run(t.Context(), tool.Call{CallID: "c1", Args: []byte(`{}`)})
	if err != nil || res.IsError || !strings.Contains(res.Text, "door opened") {
		t.Fatalf("secret_door: %+v, %v", res, err)
	}
	time.Sleep(200 * time.Millisecond) // let a duplicate notification, if any, land
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(added, ",") != "kb__secret_door" {
		t.Fatalf("added %v, want exactly kb__secret_door once", added)
	}
	if got := m.Status()[0].Tools; got != before+1 {
		t.Fatalf("status tools = %d, want %d", got, before+1)
	}
	if _, ok := byName(t, m)["kb__secret_door"]; !ok {
		t.Fatal("Manager.Tools does not include the revealed tool")
	}
}
