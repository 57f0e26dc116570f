package gateway

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// keepAliveComment is the SSE comment written on a quiet GET stream.
// Clients ignore comment lines; proxies and load balancers see traffic.
const keepAliveComment = ": ping\n\n"

// keepAliveWriter wraps the response of a GET /v1/mcp: once the SDK has
// answered 200 text/event-stream, a keepAliveComment goes out whenever the
// stream was quiet for a whole interval. The SDK writes each event with one
// Write, and comments are written between Writes under the same lock, so a
// comment never splits an event.
type keepAliveWriter struct {
	w    http.ResponseWriter
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	stream bool      // headers sent as 200 text/event-stream
	last   time.Time // last write, the SDK's or a comment
	broken bool      // a write failed: the client is gone
}

// startKeepAlive wraps w; call stop before the handler returns.
func startKeepAlive(w http.ResponseWriter, every time.Duration) *keepAliveWriter {
	k := &keepAliveWriter{w: w, done: make(chan struct{}), last: time.Now()}
	k.wg.Add(1)
	go k.loop(every)
	return k
}

func (k *keepAliveWriter) loop(every time.Duration) {
	defer k.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case now := <-t.C:
			k.mu.Lock()
			if k.stream && !k.broken && now.Sub(k.last) >= every {
				if _, err := k.w.Write([]byte(keepAliveComment)); err != nil {
					k.broken = true
				} else if err := http.NewResponseController(k.w).Flush(); err != nil {
					k.broken = true
				}
				k.last = now
			}
			k.mu.Unlock()
		}
	}
}

// stop ends the pings and waits for the pinger.
func (k *keepAliveWriter) stop() {
	close(k.done)
	k.wg.Wait()
}

func (k *keepAliveWriter) Header() http.Header { return k.w.Header() }

func (k *keepAliveWriter) WriteHeader(code int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stream = code == http.StatusOK && strings.HasPrefix(k.w.Header().Get("Content-Type"), "text/event-stream")
	k.w.WriteHeader(code)
}

func (k *keepAliveWriter) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = time.Now()
	n, err := k.w.Write(b)
	if err != nil {
		k.broken = true
	}
	return n, err
}

// FlushError is what http.ResponseController calls to flush.
func (k *keepAliveWriter) FlushError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return http.NewResponseController(k.w).Flush()
}

// Unwrap lets http.ResponseController reach the connection's other controls.
func (k *keepAliveWriter) Unwrap() http.ResponseWriter { return k.w }
