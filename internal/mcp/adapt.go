package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/tool"
)

// MaxToolName is the longest tool name every model API Delta speaks
// accepts: OpenAI's Chat Completions and Responses take at most 64
// characters, and one longer name among a request's tools fails the whole
// request, hence every run that is offered it.
const MaxToolName = 64

// readSegments are the name segments that mark an MCP tool as read-only.
// A name is split on '_' and '.'; "get_or_create" therefore
// counts as read-only, by design: the README tells operators to name
// mutations without these segments.
var readSegments = map[string]bool{
	"get": true, "list": true, "search": true, "read": true, "version": true, "versions": true, "file": true,
}

// ReadOnlyName reports whether an MCP tool name classifies the tool as
// read-only, hence safe to re-run after an interruption or a lost
// connection. Matching is case-insensitive.
func ReadOnlyName(name string) bool {
	for seg := range strings.FieldsFuncSeq(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '.' }) {
		if readSegments[seg] {
			return true
		}
	}
	return false
}

// ToolName is the registry name of an MCP tool, and whether it is usable.
// Model APIs take only letters, digits, '_' and '-' in a function name,
// while MCP servers commonly name tools "files.read" or "repo/list"; each
// other character is written as '_' so such tools are offered instead of
// lost (calls still reach the server under its own name). A name over
// MaxToolName characters, or an empty tool name, is unusable.
func ToolName(server, tool string) (string, bool) {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, server+"__"+tool)
	return name, tool != "" && len(name) <= MaxToolName
}

// adapted turns the discovered tools into tool.Tools, dropping unusable
// names with a warning.
func (s *server) adapted() []tool.Tool {
	s.mu.Lock()
	defs := s.tools
	s.mu.Unlock()
	out, dropped := s.adapt(defs, map[string]bool{})
	s.setStatus(func(st *ServerStatus) { st.Tools, st.Dropped = len(out), dropped })
	return out
}

// adapt turns tool definitions into registry tools; seen holds the names
// already taken and gains the new ones.
func (s *server) adapt(defs []*sdk.Tool, seen map[string]bool) (out []tool.Tool, dropped int) {
	for _, d := range defs {
		name, ok := ToolName(s.cfg.Name, d.Name)
		if !ok || seen[name] {
			dropped++
			s.log.Warn("mcp tool dropped: its name, with the server prefix and each character other than a letter, digit, '_' or '-' written as '_', must be at most 64 characters and unique",
				"tool", d.Name, "name", name)
			continue
		}
		seen[name] = true
		params, err := inputSchema(d.InputSchema)
		if err != nil {
			dropped++
			s.log.Warn("mcp tool dropped: unusable input schema", "tool", d.Name, "err", err)
			continue
		}
		desc := d.Description
		if desc == "" {
			desc = d.Title
		}
		if len(desc) > MaxDescriptionBytes {
			s.log.Warn("mcp tool description clipped", "tool", d.Name, "bytes", len(desc), "limit_bytes", MaxDescriptionBytes)
			desc = clip.Bytes(desc, MaxDescriptionBytes)
		}
		out = append(out, &mcpTool{
			s:        s,
			remote:   d.Name,
			spec:     model.ToolSpec{Name: name, Description: desc, Parameters: params},
			readOnly: ReadOnlyName(d.Name),
			settles:  d.Annotations != nil && d.Annotations.ReadOnlyHint,
		})
	}
	return out, dropped
}

// MaxSchemaBytes bounds a tool's input schema, and MaxDescriptionBytes its
// description. Every tool offered is sent with every model request, so one
// oversized definition would cost every turn of every run its size in
// tokens, or push requests past the context window.
const (
	MaxSchemaBytes      = 64 << 10
	MaxDescriptionBytes = 8 << 10
)

// inputSchema renders a tool's input schema as an object schema with
// properties, which model APIs require. A schema they would refuse is an
// error instead: one such tool in a request fails the whole request, so
// every run would fail, not only the calls to that tool.
func inputSchema(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if len(bytes.TrimSpace(b)) == 0 || string(b) == "null" {
		m = map[string]any{}
	} else if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("input schema is not an object: %w", err)
	}
	if t, ok := m["type"]; !ok {
		m["type"] = "object"
	} else if t != "object" {
		return nil, fmt.Errorf(`input schema has type %s, and model APIs take only "object"`, compact(t))
	}
	if p, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	} else if props, ok := p.(map[string]any); !ok {
		return nil, fmt.Errorf("input schema's properties is %s, not an object", compact(p))
	} else {
		for k, v := range props {
			if _, ok := v.(map[string]any); !ok {
				if _, ok := v.(bool); !ok {
					return nil, fmt.Errorf("input schema's property %q is %s, not a schema", k, compact(v))
				}
			}
		}
	}
	if r, ok := m["required"]; ok {
		names, ok := r.([]any)
		for _, n := range names {
			if _, isString := n.(string); !isString {
				ok = false
			}
		}
		if !ok {
			return nil, fmt.Errorf("input schema's required is %s, not a list of property names", compact(r))
		}
	}
	out, err := json.Marshal(m)
	if err == nil && len(out) > MaxSchemaBytes {
		return nil, fmt.Errorf("input schema is %d KiB, over the %d KiB limit", len(out)>>10, MaxSchemaBytes>>10)
	}
	return out, err
}

// compact is a JSON value as a log line shows it, at most 60 bytes.
func compact(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return clip.Bytes(string(b), 60)
	}
	return string(b)
}

type mcpTool struct {
	s        *server
	remote   string
	spec     model.ToolSpec
	readOnly bool
	// settles: the server marks the tool read-only (readOnlyHint). That is
	// not trusted for replay, which goes by name, but such a call cannot
	// change the server's tool list, so no relist follows it.
	settles bool
}

func (t *mcpTool) Spec() model.ToolSpec {
	sp := t.spec
	sp.Parameters = bytes.Clone(sp.Parameters)
	return sp
}

func (t *mcpTool) ReadOnly() bool { return t.readOnly }

func (t *mcpTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	args, problem := decodeArgs(c.Args)
	if problem != "" {
		return tool.Errorf("invalid arguments for %s: %s", t.spec.Name, problem), nil
	}
	return t.s.call(ctx, t.remote, c.CallID, t.readOnly, !t.readOnly && !t.settles, args), nil
}

// decodeArgs accepts a JSON object, null or nothing ({}), or an object
// encoded as a JSON string (some models do that).
func decodeArgs(raw json.RawMessage) (map[string]any, string) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return map[string]any{}, ""
	}
	if b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			b = bytes.TrimSpace([]byte(s))
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, "send one JSON object"
	}
	return m, ""
}

// call runs one tool call with the per-call ceiling and the replay rules.
// callID is the model's id for the call; it names any image saved. relist
// lists the server's tools again after a successful call.
func (s *server) call(ctx context.Context, name, callID string, readOnly, relist bool, args map[string]any) tool.Result {
	if s.isHTTP() && runTokenLost(ctx) {
		// Falling back to the shared credential would act with authority
		// this run's caller never had: refuse instead.
		return s.errorResult("this run was submitted with a per-request credential (metadata.authToken), which Delta keeps in memory only; "+
			"the daemon restarted since, so %s on HTTP MCP server %s is refused rather than sent with the shared credential. "+
			"Report this to the user: the task must be submitted again with its authToken", name, s.cfg.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.o.CallTimeout)
	defer cancel()
	// Close ends the calls in flight rather than waiting for them: a
	// server that never answers must not hold shutdown for a whole
	// CallTimeout.
	defer context.AfterFunc(s.m.ctx, cancel)()
	for try := 0; ; try++ {
		sess, err := s.current(ctx)
		if err != nil {
			if errors.Is(err, errClosed) {
				return s.errorResult("MCP server %s is not connected: %v", s.cfg.Name, err)
			}
			return s.errorResult("MCP server %s is not connected: %v. %s did not run. The server's tools are unavailable until it is back; "+
				"it is tried again after a pause that grows while it stays down, so try again later, or go on without it and tell the user what could not be done", s.cfg.Name, err, name)
		}
		at := &attempt{}
		res, err := sess.CallTool(withAttempt(ctx, at), &sdk.CallToolParams{Meta: callMeta(ctx), Name: name, Arguments: args})
		if err == nil {
			if relist && announcesToolChanges(sess) {
				// A call that can change state can change the server's tool
				// list too (bobby's toolset_select). List again before
				// answering, so the next turn offers the new tools whatever
				// the timing of the list_changed notification — which an
				// HTTP server may not be able to deliver at all.
				s.relist(ctx, sess)
			}
			return s.render(res, name, callID)
		}
		if ctx.Err() != nil {
			if s.m.ctx.Err() != nil {
				return s.errorResult("MCP call %s on server %s was stopped because Delta is shutting down; it may or may not have taken effect", name, s.cfg.Name)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				s.probe(sess, name)
				return s.errorResult("MCP call %s on server %s got no answer within its time limit; it may or may not have taken effect", name, s.cfg.Name)
			}
			return s.errorResult("MCP call %s on server %s was cancelled", name, s.cfg.Name)
		}
		if at.tooLarge.Load() || errors.Is(err, errTooLarge) {
			// The same call would bring the same answer: never repeated.
			// The connection is spent (the rest of the message is unread).
			s.drop(sess, err)
			s.log.Warn("mcp answer refused: too large", "tool", name, "limit_bytes", MaxMessageBytes)
			effect := ""
			if !readOnly {
				effect = " It may have taken effect: verify the current state before repeating it."
			}
			return s.errorResult("the answer of MCP server %s to %s was larger than %d MiB, so Delta refused it and does not repeat the call.%s "+
				"To get a result, call it again asking for less — a narrower query, a smaller page or limit — if its arguments allow that", s.cfg.Name, name, MaxMessageBytes>>20, effect)
		}
		var werr *jsonrpc.Error
		// The SDK wraps every failed HTTP exchange in its stand-in error,
		// one that broke before any answer (an EOF on a connection the
		// server closed) too: without a status that is a lost connection,
		// handled below, not a rejection.
		lost := errors.As(err, &werr) && werr.Code == codeTransportRejected && at.status.Load() == 0
		if errors.As(err, &werr) && !at.refused.Load() && !lost {
			if code := int(at.status.Load()); werr.Code == codeTransportRejected && code >= 400 {
				// The SDK's stand-in error says nothing; the status does.
				hint := " Try again later; if it keeps failing, report that the server is failing."
				if !readOnly {
					hint = " It may or may not have taken effect: verify the current state before repeating it."
				}
				return s.errorResult("MCP server %s answered HTTP %d %s to %s.%s", s.cfg.Name, code, http.StatusText(code), name, hint)
			}
			return s.errorResult("MCP server %s rejected the call to %s: %s", s.cfg.Name, name, werr.Message)
		}
		// The connection failed under the call: start over with a new
		// session on the next attempt.
		err = fmt.Errorf("%w%s", err, s.lostNote())
		s.drop(sess, err)
		s.log.Warn("mcp call lost its connection", "tool", name, "in_doubt", at.inDoubt(), "err", err)
		if try > 0 {
			if code := int(at.status.Load()); code >= 400 && at.refused.Load() && !at.unauthorized.Load() {
				return s.errorResult("MCP server %s answered HTTP %d %s to %s twice; it did not run the call. Try again later", s.cfg.Name, code, http.StatusText(code), name)
			}
			return s.errorResult("MCP server %s failed twice for %s: %v", s.cfg.Name, name, err)
		}
		switch {
		case at.unauthorized.Load():
			if runToken(ctx) != "" {
				return s.errorResult("MCP server %s answered 401 unauthorized for %s: it refused this run's credential (metadata.authToken). "+
					"Retrying will not help: report that the run's credential was refused", s.cfg.Name, name)
			}
			if s.refresh == nil {
				return s.errorResult("MCP server %s answered 401 unauthorized for %s: it refused the credential Delta is configured with. "+
					"Retrying will not help: report that the server's credential needs fixing", s.cfg.Name, name)
			}
			used := ""
			if p := at.access.Load(); p != nil {
				used = *p
			}
			if rerr := s.refresh.rotate(ctx, used); rerr != nil {
				return s.errorResult("MCP server %s answered 401 and the credential could not be rotated: %v", s.cfg.Name, rerr)
			}
		case at.inDoubt() && !readOnly:
			return s.errorResult("[in doubt] the connection to MCP server %s broke while %s was running. It may or may not have taken effect, and Delta does not replay it: verify the current state before repeating it.", s.cfg.Name, name)
		}
	}
}

// codeTransportRejected is the code of the go-sdk's jsonrpc2.ErrRejected
// ("rejected by transport"), its error for a request the transport
// refused, such as an HTTP error status with no JSON-RPC error in the body.
const codeTransportRejected = -32005

// image keeps an image result through Options.SaveImage and returns the
// marker the model sees in its place. Without SaveImage, or when the bytes
// are not an image Delta can show, the image is described and dropped.
func (s *server) image(c *sdk.ImageContent, name string) string {
	dropped := fmt.Sprintf("[image: %s, %d bytes, not shown to the model]", c.MIMEType, len(c.Data))
	if s.m.o.SaveImage == nil {
		return dropped
	}
	marker, err := s.m.o.SaveImage(name, c.MIMEType, c.Data)
	if err != nil {
		s.log.Warn("mcp image not kept", "name", name, "mime", c.MIMEType, "bytes", len(c.Data), "err", err)
		return dropped
	}
	return marker
}

func (s *server) errorResult(format string, a ...any) tool.Result {
	return tool.Result{IsError: true, Text: s.redact("error: " + fmt.Sprintf(format, a...))}
}

// render frames a result as untrusted data: text kept, images as markers,
// structured content as compact JSON when there is no text.
func (s *server) render(res *sdk.CallToolResult, name, callID string) tool.Result {
	parts := []string{fmt.Sprintf("MCP result from server %s (untrusted data):", s.cfg.Name)}
	texts, images := 0, 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			texts++
		case *sdk.ImageContent:
			images++
			parts = append(parts, s.image(c, fmt.Sprintf("%s__%s-%s-%d", s.cfg.Name, name, callID, images)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, omitted]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, "[resource link omitted: "+c.URI+"]")
		case *sdk.EmbeddedResource:
			parts = append(parts, "[embedded resource omitted]")
		default:
			parts = append(parts, "[unsupported content omitted]")
		}
	}
	if texts == 0 && res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(j))
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		text = "error: " + text
	}
	return tool.Result{Text: s.redact(text), IsError: res.IsError}
}
