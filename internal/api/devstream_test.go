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
	lines := streamLines(t, ctx, srv.URL+"/v1/dev/stream?since=0&run=resp_x")
	// The subscription exists once the response headers are out.
	for _, id := range []int64{7, 5, 6} {
		broker.Publish(event.Event{ID: id, RunID: "resp_x", Name: event.ToolResult, Time: time.Now()})
	}
	var got []string
	for len(got) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended after %v", got)
			}
			if id, ok := strings.CutPrefix(l, "id: "); ok {
				got = append(got, id)
			}
		case <-ctx.Done():
			t.Fatalf("live stream delivered only %v of ids 7, 5, 6", got)
		}
	}
	if strings.Join(got, ",") != "7,5,6" {
		t.Fatalf("live ids %v, want 7,5,6", got)
	}
}

// streamLines opens the event stream at url for as long as ctx and the
// test last and hands on its lines as they come, closing the channel when
// the stream ends.
func streamLines(t *testing.T, ctx context.Context, url string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed at cleanup; the scanner goroutine reads it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}
