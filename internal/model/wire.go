package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Helpers every wire client shares: turning an endpoint's failure into an
// *Error the harness can act on, reading a streamed reply, writing a
// request body byte for byte as the providers' SDKs would, and keeping a
// client's tool definitions encoded across its calls.

// maxMessage bounds an error message taken from an endpoint.
const maxMessage = 500

// RetriableStatus reports whether an HTTP status is worth another attempt
// on the same model: 408, 409, 429 and every 5xx (Anthropic's 529 included).
func RetriableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// BodyText is the start of an error body that carried no structured
// message (an HTML page from a proxy, say).
func BodyText(res *http.Response) string {
	if res == nil || res.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return string(b)
}

// CleanMessage makes an endpoint's message safe to record: the API key is
// scrubbed (a 401 may echo it), invalid UTF-8 replaced, and the length
// bounded to 500 characters.
func CleanMessage(msg, apiKey string) string {
	msg = strings.TrimSpace(msg)
	if apiKey != "" {
		msg = strings.ReplaceAll(msg, apiKey, "[redacted]")
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if utf8.RuneCountInString(msg) > maxMessage {
		r := []rune(msg)
		msg = string(r[:maxMessage-1]) + "…"
	}
	return msg
}

// CallContext bounds one call, its streamed body included, by timeout;
// timeout <= 0 leaves ctx as it is.
func CallContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// Interrupted is the error for a call whose context ended, or nil while
// both are live. The caller's own cancellation stays a context error (op
// names the call), so it never reads as a model failure; the call's own
// timeout (callCtx, from CallContext) is a retriable *Error.
func Interrupted(ctx, callCtx context.Context, op string, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := callCtx.Err(); err != nil {
		return &Error{Message: fmt.Sprintf("no complete answer within %s", timeout), Retriable: true, Err: err}
	}
	return nil
}

// StatusError is the *Error for an HTTP status (or the status an error
// event inside a stream stands for): msg cleaned of apiKey, the status
// text when msg is blank, retriable as RetriableStatus says.
func StatusError(status int, msg, apiKey string, err error) *Error {
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, Message: CleanMessage(msg, apiKey), Retriable: RetriableStatus(status), Err: err}
}

// RefusalError is StatusError, except that a context-window refusal
// (overflowed: each wire knows its endpoint's wording) wraps
// ErrContextOverflow and is not retriable: the same prompt would be
// refused again, so the engine can compact and retry.
func RefusalError(status int, msg, apiKey string, err error, overflowed bool) *Error {
	e := StatusError(status, msg, apiKey, err)
	if overflowed {
		e.Retriable = false
		e.Err = fmt.Errorf("%w: %w", ErrContextOverflow, err)
	}
	return e
}

// StreamedCall is a tool call as a stream assembled it. A call without an
// id gets prefix and its index (some gateways omit ids, and the tool
// result must still name its call); blank arguments are an empty object.
func StreamedCall(id, prefix string, index int, name, args string) ToolCall {
	if id == "" {
		id = prefix + strconv.Itoa(index)
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	return ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// StreamError is an error event a provider sent inside a 200 stream: an
// upstream that failed mid-answer, an overloaded model, a failed response.
// Status is the HTTP status the event stands for, 0 when it names none;
// Code is the provider's error code, where it sends one.
type StreamError struct {
	Status  int
	Code    string
	Message string
}

func (e *StreamError) Error() string { return "error event in stream: " + e.Message }

// NetworkError is the *Error for a failure without a status: a refused
// connection, a cut stream, a garbled event. The endpoint may well answer
// the next attempt, so it is retriable.
func NetworkError(err error, apiKey string) *Error {
	return &Error{Message: CleanMessage(err.Error(), apiKey), Retriable: true, Err: err}
}

// Finish ends one streamed call whose request went out: res and err are
// what the transport returned. A failed request is fail(res, err), with
// the response's body, if any, still open for fail to read; a stream is
// read by read and answered by response, what had arrived so far coming
// back with fail(nil, err) when reading it failed.
func Finish(res *http.Response, err error, read func(*http.Response) error, response func() Response,
	fail func(res *http.Response, err error) error) (Response, error) {
	if err != nil {
		if res != nil && res.Body != nil {
			defer res.Body.Close()
		}
		return Response{}, fail(res, err)
	}
	if res == nil {
		return Response{}, &Error{Message: "no response", Retriable: true}
	}
	if err := read(res); err != nil {
		return response(), fail(nil, err)
	}
	return response(), nil
}

// ErrIncompleteStream marks a streamed reply that ended before the model
// finished.
var ErrIncompleteStream = errors.New("stream ended before the model finished")

// maxEventLine is the longest line ReadStream accepts, the SDKs' bound.
const maxEventLine = bufio.MaxScanTokenSize << 9

// ReadStream reads a text/event-stream body and hands each event's data
// (its data lines, each followed by a newline) to apply, until stop
// reports true, the body ends, or apply fails. A body that ends while
// finished reports false is ErrIncompleteStream.
//
// It parses the stream as both SDKs' decoders do: lines split at \n with
// a trailing \r dropped, one optional space after the colon, comment
// lines and other fields ignored, an event dispatched at a blank line, a
// final event without one dropped, lines up to 32 MiB. Events without
// data are never dispatched: the wires ignore them anyway. data is valid
// only during the call to apply.
func ReadStream(res *http.Response, apply func(data []byte) error, stop, finished func() bool) error {
	if res == nil || res.Body == nil {
		return fmt.Errorf("read stream: no body: %w", ErrIncompleteStream)
	}
	defer res.Body.Close()
	scn := bufio.NewScanner(res.Body)
	scn.Buffer(nil, maxEventLine)
	var data []byte
	for !stop() && scn.Scan() {
		line := scn.Bytes()
		if len(line) == 0 {
			if len(data) > 0 {
				if err := apply(data); err != nil {
					return err
				}
				data = data[:0]
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue
		}
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		data = append(data, value...)
		data = append(data, '\n')
	}
	if err := scn.Err(); err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	if !finished() {
		return ErrIncompleteStream
	}
	return nil
}

// AppendString appends s as a JSON string exactly as encoding/json writes
// it, and so as both SDKs' encoders do: \b \f \n \r \t and the other
// control bytes escaped, invalid UTF-8 replaced by \ufffd, U+2028 and
// U+2029 escaped, and <, > and & escaped when escapeHTML (the Anthropic
// SDK escapes them, the OpenAI SDK does not).
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// AppendCompact appends raw, which must be valid JSON (callers check it
// first), without insignificant white space, as encoding/json writes a
// json.RawMessage: with escapeHTML, <, >, & and U+2028/U+2029 are escaped
// too. Bytes inside strings are otherwise copied as they are.
func AppendCompact(dst, raw []byte, escapeHTML bool) []byte {
	if !needsCompact(raw, escapeHTML) {
		return append(dst, raw...)
	}
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if escapeHTML {
			if c == '<' || c == '>' || c == '&' {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				start = i + 1
			}
			if c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				start = i + 3
			}
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}

// needsCompact reports whether raw holds a byte AppendCompact may change:
// white space (significant or not: telling them apart costs the full
// pass) or, with escapeHTML, one it escapes.
func needsCompact(raw []byte, escapeHTML bool) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			return true
		case '<', '>', '&', 0xE2:
			if escapeHTML {
				return true
			}
		}
	}
	return false
}

// Member is one member of a JSON object: its name and its value's bytes.
type Member struct {
	Name  string
	Value json.RawMessage
}

// emptySchema is the parameters of a tool that declares none: some
// endpoints refuse a function without a parameters object.
var emptySchema = []Member{{Name: "properties", Value: json.RawMessage(`{}`)}, {Name: "type", Value: json.RawMessage(`"object"`)}}

// ArgumentsText is a tool call's arguments as the Chat Completions and
// Responses wires echo them back to the model: as given, or "{}" when
// blank, because strict endpoints reject an empty string.
func ArgumentsText(raw json.RawMessage) string {
	if strings.TrimSpace(string(raw)) == "" {
		return "{}"
	}
	return string(raw)
}

// ToolMembers is what every wire builds a tool's definition from: the
// top-level members of its parameter schema (ToolSchema). A tool without
// a name is refused.
func ToolMembers(t ToolSpec) ([]Member, error) {
	if t.Name == "" {
		return nil, errors.New("tool name is required")
	}
	return ToolSchema(t.Parameters)
}

// ToolSchema splits a tool's parameters, which must be a JSON object, into
// its top-level members sorted by name, the order encoding/json gives a
// map's keys (a repeated name keeps its last value, as in a map). Each
// value keeps the schema's own bytes. No parameters at all are an empty
// object schema. Callers only read the members.
func ToolSchema(raw json.RawMessage) ([]Member, error) {
	if len(raw) == 0 {
		return emptySchema, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("parameters must be a JSON object: %w", err)
	}
	if top == nil {
		return nil, fmt.Errorf("parameters must be a JSON object, not null")
	}
	out := make([]Member, 0, len(top))
	for k, v := range top {
		out = append(out, Member{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// AppendObject appends members as one JSON object, in the order given, as
// encoding/json writes a map of json.RawMessage values: names as
// AppendString writes them, values compacted when compact, else copied as
// they are (the OpenAI SDK trusts a json.RawMessage to be compact already).
func AppendObject(dst []byte, members []Member, escapeHTML, compact bool) []byte {
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, m.Name, escapeHTML)
		dst = append(dst, ':')
		if compact {
			dst = AppendCompact(dst, m.Value, escapeHTML)
		} else {
			dst = append(dst, m.Value...)
		}
	}
	return append(dst, '}')
}

// maxToolDefs bounds a ToolDefs; past it the memo starts over.
const maxToolDefs = 1024

// ToolDefs memoizes tool definitions as a wire encodes them. A run sends
// the same tools on every call, and parsing each schema again cost more
// than all the rest of a request (~8 µs a tool). A definition is kept for
// the tool's name, description and parameters, byte for byte, and a
// variant the wire chooses. It is safe for concurrent use; the zero value
// is ready, and a nil *ToolDefs memoizes nothing.
type ToolDefs struct {
	mu   sync.Mutex
	defs map[string][]toolDef // by tool name
	n    int
}

type toolDef struct {
	variant     byte
	description string
	parameters  string
	def         []byte
}

// Append appends t's definition to dst: the memoized one, or encode's,
// which it keeps. An error from encode is returned and nothing is kept.
func (d *ToolDefs) Append(dst []byte, t ToolSpec, variant byte, encode func(dst []byte, t ToolSpec) ([]byte, error)) ([]byte, error) {
	if d == nil {
		return encode(dst, t)
	}
	d.mu.Lock()
	for _, e := range d.defs[t.Name] {
		// Comparing against string(...) copies nothing.
		if e.variant == variant && e.description == t.Description && e.parameters == string(t.Parameters) {
			d.mu.Unlock()
			return append(dst, e.def...), nil
		}
	}
	d.mu.Unlock()
	def, err := encode(nil, t)
	if err != nil {
		return dst, err
	}
	d.mu.Lock()
	if d.defs == nil || d.n >= maxToolDefs {
		d.defs, d.n = make(map[string][]toolDef), 0
	}
	d.defs[t.Name] = append(d.defs[t.Name], toolDef{variant, t.Description, string(t.Parameters), def})
	d.n++
	d.mu.Unlock()
	return append(dst, def...), nil
}

// Join is the tools' definitions, comma-separated, each as Append gives
// it; nil for no tools. An error names the tool.
func (d *ToolDefs) Join(tools []ToolSpec, variant byte, encode func(dst []byte, t ToolSpec) ([]byte, error)) ([]byte, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	n := 0
	for _, t := range tools {
		n += 96 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	out := make([]byte, 0, n)
	for i, t := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = d.Append(out, t, variant, encode); err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
	}
	return out, nil
}

// StoredExtra decodes a wire's part (under key) of a message's Extra
// into a T, in one pass: the other wires' parts decode to nothing. A
// damaged record only loses the replay: what decoded before the damage
// is kept, the rest is left out.
func StoredExtra[T any](raw json.RawMessage, key string) T {
	var zero T
	if len(raw) == 0 {
		return zero
	}
	var all map[string]*T
	_ = json.Unmarshal(raw, &all)
	if v := all[key]; v != nil {
		return *v
	}
	return zero
}
