package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// ServeStdio runs one MCP session over newline-delimited JSON-RPC on in and
// out for principal p, until in ends or ctx is cancelled. A frame over
// MaxStdioFrameBytes or a line that is not JSON is answered with a JSON-RPC
// error and skipped; the session goes on.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, p policy.Principal) error {
	// One stdio process is one context for life, so it speaks 2026-07-28
	// (no initialize; server/discover) as well as the initialize-based
	// versions.
	cs := g.newClientSessionFor(p, modernVersions)
	defer g.removeClient(cs)
	lw := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := filterFrames(in, &initGate{dst: pw, errOut: lw}, lw, MaxStdioFrameBytes, g.log)
		pw.CloseWithError(err)
	}()
	err := cs.server.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{lw}, MaxLineLength: MaxStdioFrameBytes + 1})
	_ = pr.Close() // unblocks the filter if the session ended first
	wg.Wait()
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, io.ErrClosedPipe)) {
		return nil
	}
	return err
}

// initGate answers a request that arrives before initialize with JSON-RPC
// -32002 (server not initialized) instead of passing it to the SDK, whose
// answer carries no error code. A 2026-07-28 client has no initialize:
// server/discover, or any request naming its protocol version in
// _meta, opens the gate too. It sees one whole frame per Write.
type initGate struct {
	dst, errOut io.Writer
	open        bool
}

func (g *initGate) Write(frame []byte) (int, error) {
	if !g.open {
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(frame, &head) == nil {
			switch {
			case head.Method == "initialize" || head.Method == "server/discover" || head.Params.Meta[mcp.MetaKeyProtocolVersion] != nil:
				g.open = true
			case head.Method == "ping" || head.Method == "" || len(head.ID) == 0 || string(head.ID) == "null":
				// answers and notifications go on; ping is allowed any time
			default:
				return len(frame), writeRPCError(g.errOut, head.ID, rpcNotInitialized,
					methodName(head.Method)+" before initialize: send initialize first", CodeNotInitialized)
			}
		}
	}
	return g.dst.Write(frame)
}

// methodName is a client's method name for an error message, cut to 64
// bytes at a rune boundary.
func methodName(m string) string {
	if len(m) <= 64 {
		return m
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "…"
}

// JSON-RPC codes bobby answers itself for requests the session cannot take
// yet: -32002 over stdio (the request came before initialize), -32600 over
// HTTP (no Mcp-Session-Id: no session to take it).
const (
	rpcNotInitialized = -32002
	rpcInvalidRequest = -32600
)

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// filterFrames copies newline-delimited frames from in to dst. Frames over
// limit bytes are discarded without being buffered whole, and frames that
// are not JSON are dropped; both are answered on errOut with a JSON-RPC
// error naming the problem (and the request id when it can be read from
// the frame's start).
func filterFrames(in io.Reader, dst io.Writer, errOut io.Writer, limit int, log *slog.Logger) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var frame []byte
	oversize := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !oversize && len(frame)+len(chunk) > limit+1 { // +1: the newline
				oversize = true
			}
			if !oversize {
				frame = append(frame, chunk...)
			} else if len(frame) < 64<<10 {
				// Keep the start for the request id.
				frame = append(frame, chunk[:min(len(chunk), 64<<10-len(frame))]...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		complete := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if complete || (err != nil && len(frame) > 0) {
			if werr := emitFrame(frame, oversize, dst, errOut, limit, log); werr != nil {
				return werr
			}
			frame, oversize = frame[:0], false
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func emitFrame(frame []byte, oversize bool, dst, errOut io.Writer, limit int, log *slog.Logger) error {
	trimmed := bytes.TrimSpace(frame)
	if len(trimmed) == 0 && !oversize {
		return nil
	}
	switch {
	case oversize:
		log.Warn("stdio frame rejected", "reason", CodeFrameTooLarge, "limit", limit)
		return writeRPCError(errOut, frameID(trimmed), -32600,
			fmt.Sprintf("frame exceeds %d bytes and was discarded", limit), CodeFrameTooLarge)
	case !json.Valid(trimmed):
		log.Warn("stdio frame rejected", "reason", "parseError")
		return writeRPCError(errOut, frameID(trimmed), -32700, "frame is not valid JSON and was discarded", CodeSchemaViolation)
	}
	_, err := dst.Write(append(trimmed, '\n'))
	return err
}

func writeRPCError(w io.Writer, id json.RawMessage, code int, msg, reason string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error": map[string]any{
			"code": code, "message": msg,
			"data": map[string]any{"reason": reason, "repair": repairFor(reason)},
		},
	})
	_, err := w.Write(append(b, '\n'))
	return err
}

// frameID reads the "id" member of a (possibly truncated) JSON-RPC object
// from its first bytes, or returns nil.
func frameID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		if key == "id" {
			var v any
			if json.Unmarshal(raw, &v) != nil {
				return nil
			}
			switch v.(type) {
			case string, float64:
				return raw
			}
			return nil
		}
	}
	return nil
}
