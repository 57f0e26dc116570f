package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestClosersCloseInReverseAndJoinErrors(t *testing.T) {
	var order []string
	errMCP, errStore := errors.New("mcp stuck"), errors.New("disk gone")
	var c closers
	for _, step := range []struct {
		name string
		err  error
	}{{"lock", nil}, {"store", errStore}, {"mcp", errMCP}, {"queue", nil}} {
		c.add(step.name, func(context.Context) error { order = append(order, step.name); return step.err })
	}
	err := c.close(context.Background())
	if got := strings.Join(order, ","); got != "queue,mcp,store,lock" {
		t.Fatalf("close order %s, want queue,mcp,store,lock", got)
	}
	if !errors.Is(err, errMCP) || !errors.Is(err, errStore) {
		t.Fatalf("err %v, want both close errors", err)
	}
	if !strings.Contains(err.Error(), "close mcp: mcp stuck") || !strings.Contains(err.Error(), "close store: disk gone") {
		t.Fatalf("err %q does not name what failed to close", err)
	}
	order = nil
	if err := c.close(context.Background()); err != nil || order != nil {
		t.Fatalf("second close: %v, closed %v again", err, order)
	}
}
