package api_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// echoEngine is a real store and an engine over echoProvider whose one-step
// budget ends every run on its first answer.
func echoEngine(t *testing.T) (*store.Store, *event.Broker, *engine.Engine) {
	t.Helper()
	dir := t.TempDir()
	st := openStore(t, filepath.Join(dir, "delta.db"))
	b, _ := bundle.Load(bundle.Options{Dir: dir})
	broker := event.NewBroker()
	eng := engine.New(engine.Options{Store: st, Broker: broker, Provider: echoProvider, Models: []string{"m"}, Prompt: b,
		Tools: tool.NewRegistry(), ToolNames: func(string) []string { return nil },
		Budget: func(string) engine.Budget { return engine.Budget{Steps: 1, Tokens: 1, CostUSD: 1} }})
	return st, broker, eng
}

// Durable events are published after their commit by the goroutine that
// made them (concurrent tool results), so they can reach the broker out of
// id order. The live stream must deliver every one of them.
func TestDevStreamDeliversLiveEventsPublishedOutOfOrder(t *testing.T) {
	st, broker, eng := echoEngine(t)
	q := openQueue(t, st, eng, 1)
	defer q.Close(context.Background())
	srv := httptest.NewServer(api.New(api.Options{Service: engine.NewService(st, q, eng), Heartbeat: time.Hour}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/dev/stream?since=0&run=resp_x", nil)
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by the defer below; the scanner goroutine reads it
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				lines <- id
			}
		}
		close(lines)
	}()
	// The subscription exists once the response headers are out.
	for _, id := range []int64{7, 5, 6} {
		broker.Publish(event.Event{ID: id, RunID: "resp_x", Name: event.ToolResult, Time: time.Now()})
	}
	var got []string
	for len(got) < 3 {
		select {
		case id, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended after %v", got)
			}
			got = append(got, id)
		case <-ctx.Done():
			t.Fatalf("live stream delivered only %v of ids 7, 5, 6", got)
		}
	}
	if strings.Join(got, ",") != "7,5,6" {
		t.Fatalf("live ids %v, want 7,5,6", got)
	}
}
