// Package bidi is a small client for the W3C WebDriver BiDi protocol, the
// protocol Firefox speaks natively on --remote-debugging-port: one WebSocket,
// JSON commands answered by id, and events pushed by the browser. It holds
// the connection (Conn: Call, OnEvent), the Firefox process (Launch), and
// typed calls for the modules bobby needs (session, browser, browsingContext,
// script, input, network, storage, log). It knows nothing of bobby's tools.
package bidi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// maxMessage bounds one incoming message (a full-page screenshot of a large
// viewport is a few MiB of base64).
const maxMessage = 64 << 20

// ErrClosed is returned by calls on, or pending when, the connection ends.
var ErrClosed = errors.New("bidi: connection closed")

// Error is the browser's answer to a command it refused: Code is the BiDi
// error code ("no such frame", "invalid argument", "unknown command", …).
type Error struct {
	Method  string
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("bidi %s: %s", e.Method, e.Code)
	}
	return fmt.Sprintf("bidi %s: %s: %s", e.Method, e.Code, e.Message)
}

// IsCode reports whether err is a browser refusal with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Event is one message the browser pushed: Method names the event
// ("browsingContext.load"), Params is its raw payload.
type Event struct {
	Method string
	Params json.RawMessage
}

// message is every shape the browser sends, decoded once.
type message struct {
	Type    string          `json:"type"` // success | error | event
	ID      *int64          `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// parseMessage decodes one incoming frame. A frame that is not a BiDi
// message is an error, never a panic.
func parseMessage(b []byte) (message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return message{}, fmt.Errorf("bidi: malformed message: %w", err)
	}
	switch m.Type {
	case "success":
		if m.ID == nil {
			return message{}, errors.New("bidi: success without an id")
		}
	case "error":
		if m.Error == "" {
			return message{}, errors.New("bidi: error without a code")
		}
	case "event":
		if m.Method == "" {
			return message{}, errors.New("bidi: event without a method")
		}
	default:
		return message{}, fmt.Errorf("bidi: unknown message type %q", m.Type)
	}
	return m, nil
}

type reply struct {
	result json.RawMessage
	err    error
}

// Conn is one WebDriver BiDi connection. Calls may run concurrently; event
// handlers run on the reader goroutine, in the order the browser sent them,
// and must not block.
type Conn struct {
	ws     *websocket.Conn
	nextID atomic.Int64

	mu       sync.Mutex
	pending  map[int64]chan reply
	handlers map[int64]func(Event)
	nextH    int64
	err      error // set once the reader stopped

	done chan struct{}
}

// Dial connects to a BiDi endpoint (ws://host:port/session).
func Dial(ctx context.Context, url string) (*Conn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil) //nolint:bodyclose // the library closes the handshake response
	if err != nil {
		return nil, fmt.Errorf("bidi: dial %s: %w", url, err)
	}
	ws.SetReadLimit(maxMessage)
	c := &Conn{ws: ws, pending: map[int64]chan reply{}, handlers: map[int64]func(Event){}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// read dispatches every incoming message until the connection ends, then
// fails every pending call so none waits forever.
func (c *Conn) read() {
	defer close(c.done)
	var end error
	for {
		_, b, err := c.ws.Read(context.Background())
		if err != nil {
			end = fmt.Errorf("%w: %w", ErrClosed, err)
			break
		}
		m, err := parseMessage(b)
		if err != nil {
			continue // one bad frame never stops the connection
		}
		switch m.Type {
		case "event":
			c.mu.Lock()
			hs := make([]func(Event), 0, len(c.handlers))
			for _, h := range c.handlers {
				hs = append(hs, h)
			}
			c.mu.Unlock()
			for _, h := range hs {
				h(Event{Method: m.Method, Params: m.Params})
			}
		default:
			if m.ID == nil {
				continue // an error about a frame the browser could not parse
			}
			c.mu.Lock()
			ch := c.pending[*m.ID]
			delete(c.pending, *m.ID)
			c.mu.Unlock()
			if ch == nil {
				continue
			}
			if m.Type == "error" {
				ch <- reply{err: &Error{Code: m.Error, Message: m.Message}}
			} else {
				ch <- reply{result: m.Result}
			}
		}
	}
	c.mu.Lock()
	c.err = end
	for id, ch := range c.pending {
		ch <- reply{err: end}
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// writeTimeout bounds writing one frame; a peer that takes no frame for
// that long is gone.
const writeTimeout = 10 * time.Second

// Call sends method with params and decodes the result into out (nil =
// discard). A refusal is an *Error; a cancelled ctx abandons the wait
// (the browser may still carry the command out).
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	id := c.nextID.Add(1)
	frame, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{id, method, params})
	if err != nil {
		return fmt.Errorf("bidi %s: encode params: %w", method, err)
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("bidi %s: %w", method, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		forget()
		return fmt.Errorf("bidi %s: %w", method, err)
	}
	// The write runs under its own bound, not under ctx: the WebSocket
	// library closes the whole connection when the context of a write ends,
	// and one caller's deadline must not end every other call.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	err = c.ws.Write(wctx, websocket.MessageText, frame)
	cancel()
	if err != nil {
		forget()
		if ctx.Err() != nil {
			return fmt.Errorf("bidi %s: %w", method, ctx.Err())
		}
		return fmt.Errorf("bidi %s: %w: %w", method, ErrClosed, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			var be *Error
			if errors.As(r.err, &be) {
				be.Method = method
				return be
			}
			return fmt.Errorf("bidi %s: %w", method, r.err)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(r.result, out); err != nil {
			return fmt.Errorf("bidi %s: decode result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		forget()
		return fmt.Errorf("bidi %s: %w", method, ctx.Err())
	}
}

// OnEvent registers h for every event the session is subscribed to (see
// Subscribe) and returns the function that removes it. h runs on the reader
// goroutine: it must hand work off rather than call back into Conn.
func (c *Conn) OnEvent(h func(Event)) (remove func()) {
	c.mu.Lock()
	c.nextH++
	key := c.nextH
	c.handlers[key] = h
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.handlers, key)
		c.mu.Unlock()
	}
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection and waits for the reader to stop. It never
// fails: a peer that closed first leaves nothing to report.
func (c *Conn) Close() error {
	_ = c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
	return nil
}
