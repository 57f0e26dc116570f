// Package mcptest is a small MCP server built with the official go-sdk, used
// to test Delta's MCP client over real transports: a child process speaking
// stdio (the test binary re-executed, see ServeStdioIfChild) and streamable
// HTTP on loopback (NewHTTP).
//
// Its tools cover what the client must handle: text, images (a PNG; a JPEG
// next to bytes that only claim to be an image), structured
// content without text, error results, a tool that reflects the request's
// Authorization header inside an error, counters that show whether a call
// was replayed, a tool that crashes the process mid-call, a slow tool, any
// number of generated tools, optionally a product (product.go): a curated
// write tool and a skill registry that record every call, and a product's
// read-only hydration tools that record the exact arguments and
// Authorization header of every call.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env variables the re-executed child reads (set through the server entry's
// explicit env, since the client passes nothing else through).
const (
	EnvServe     = "MCPTEST_SERVE"      // "1": serve over stdio and exit
	EnvTools     = "MCPTEST_TOOLS"      // number of generated tools gen_000…
	EnvCrashFile = "MCPTEST_CRASH_FILE" // crash_note exits the process once, while this file is absent
	EnvSecret    = "MCPTEST_SECRET"     // returned by the secret tool
)

// PNG is a 1×1 transparent image returned by the image tool.
var PNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

// JPEG is the JPEG returned first by the get_images tool: a JFIF header,
// enough for every content sniffer.
var JPEG = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9")

// Options shape one server.
type Options struct {
	Tools     int    // generated tools gen_000 … gen_NNN
	CrashFile string // see EnvCrashFile
	Secret    string // see EnvSecret
	// ProposeChange adds a reviewed-write tool, propose_change, which only
	// records that a proposal was made.
	ProposeChange bool
	// Product, when set, adds the product's tools (learning_write and the
	// skill registry) over that shared state.
	Product *Product
	// Hydrate adds a product's read-only tools: get_dashboard,
	// list_recent_notes and search_knowledge answer with the arguments they
	// received (list_recent_notes pads its answer to 25,000 characters when
	// an argument value starts with "big"), and held_read answers only once
	// Hold is closed. Every call is recorded (Counters.Calls).
	Hydrate bool
	Hold    chan struct{}
}

// Call is one recorded call of a hydration tool: its arguments exactly as
// the server received them and the request's Authorization header.
type Call struct {
	Args map[string]any
	Auth string
}

// Counters records how many times each counted tool ran, to prove whether a
// call was replayed.
type Counters struct {
	mu    sync.Mutex
	n     map[string]int
	calls map[string][]Call
}

// Calls returns the recorded calls of a hydration tool, oldest first.
func (c *Counters) Calls(tool string) []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls[tool])
}

func (c *Counters) record(tool string, call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string][]Call{}
	}
	c.calls[tool] = append(c.calls[tool], call)
}

// Get returns how many times tool ran.
func (c *Counters) Get(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tool]
}

func (c *Counters) add(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[tool]++
	return c.n[tool]
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func errResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer builds the test server. Counters may be nil.
func NewServer(o Options, counters *Counters) *sdk.Server {
	if counters == nil {
		counters = &Counters{}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	textSchema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)

	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, any, error) {
			return textResult("echo: " + a.Text), nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "get_image", Description: "Return a tiny PNG.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here is the image"},
				&sdk.ImageContent{Data: PNG, MIMEType: "image/png"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "get_images", Description: "Return two images: a JPEG, then bytes that only claim to be a PNG.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{Data: JPEG, MIMEType: "image/jpeg"},
				&sdk.ImageContent{Data: []byte("<html>not an image</html>"), MIMEType: "image/png"},
				&sdk.TextContent{Text: "two images"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "get_structured", Description: "Structured content only, no text.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"url": "https://example.test/", "items": []int{1, 2, 3}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always an error result.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return errResult("the backend said no"), nil
		})
	s.AddTool(&sdk.Tool{Name: "whoami", Description: "Reflect the Authorization header inside an error, as a careless backend would.", InputSchema: empty},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			auth := ""
			if req.Extra != nil && req.Extra.Header != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			body, _ := json.Marshal(map[string]string{"error": "forbidden", "authorization": auth})
			return errResult(fmt.Sprintf("403 from upstream: %s; raw=%s", body, auth)), nil
		})
	s.AddTool(&sdk.Tool{Name: "get_auth", Description: "Return the Authorization header.", InputSchema: empty},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			auth := ""
			if req.Extra != nil && req.Extra.Header != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			return textResult(auth), nil
		})
	s.AddTool(&sdk.Tool{Name: "get_secret", Description: "Return the secret from the environment.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("secret=" + o.Secret), nil
		})
	s.AddTool(&sdk.Tool{Name: "list_env", Description: "List the environment variable names of the process.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var names []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				names = append(names, k)
			}
			slices.Sort(names)
			return textResult(strings.Join(names, "\n")), nil
		})
	for _, name := range []string{"create_note", "get_note"} {
		s.AddTool(&sdk.Tool{Name: name, Description: "Count calls to " + name + ".", InputSchema: textSchema},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return textResult(name + " #" + strconv.Itoa(counters.add(name))), nil
			})
	}
	// crash_note and get_crash exit the process once, mid-call, the first
	// time either runs while CrashFile is absent (creating it first).
	for _, name := range []string{"crash_note", "get_crash"} {
		s.AddTool(&sdk.Tool{Name: name, Description: "Crash once mid-call.", InputSchema: empty},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				if o.CrashFile != "" {
					if _, err := os.Stat(o.CrashFile); os.IsNotExist(err) {
						_ = os.WriteFile(o.CrashFile, []byte(name), 0o600)
						os.Exit(3)
					}
				}
				return textResult(name + " survived"), nil
			})
	}
	// unlock reveals a tool the server did not list at first, as bobby
	// does when a session changes phase: the SDK then notifies
	// tools/list_changed to every connected client.
	var revealed sync.Once
	s.AddTool(&sdk.Tool{Name: "unlock", Description: "Reveal the secret_door tool.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			revealed.Do(func() {
				s.AddTool(&sdk.Tool{Name: "secret_door", Description: "Only listed after unlock.", InputSchema: empty},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
						return textResult("door opened"), nil
					})
			})
			return textResult("unlocked"), nil
		})
	s.AddTool(&sdk.Tool{Name: "slow", Description: "Block until cancelled.", InputSchema: empty},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "notes.count", Description: "A dotted name, as many servers use; it answers the name it was called by.", InputSchema: empty},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("called as " + req.Params.Name), nil
		})
	s.AddTool(&sdk.Tool{Name: strings.Repeat("l", 125), Description: "Too long once prefixed.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult("x"), nil })
	if o.ProposeChange {
		s.AddTool(&sdk.Tool{Name: "propose_change", Description: "Propose a change for human review.", InputSchema: textSchema},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return textResult("proposal #" + strconv.Itoa(counters.add("propose_change")) + " awaits review"), nil
			})
	}
	if o.Product != nil {
		addProduct(s, o.Product)
	}
	if o.Hydrate {
		addHydrate(s, o, counters)
	}
	for i := range o.Tools {
		name := fmt.Sprintf("gen_%03d", i)
		s.AddTool(&sdk.Tool{Name: name, Description: "Generated tool " + name + ".", InputSchema: empty},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult(name), nil })
	}
	return s
}

func addHydrate(s *sdk.Server, o Options, counters *Counters) {
	open := json.RawMessage(`{"type":"object","additionalProperties":true}`)
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	for _, name := range []string{"get_dashboard", "list_recent_notes", "search_knowledge", "held_read"} {
		s.AddTool(&sdk.Tool{Name: name, Description: "A product read for hydration: " + name + ".", InputSchema: open, Annotations: ro},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var args map[string]any
				if len(req.Params.Arguments) > 0 {
					if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
						return errResult("arguments: " + err.Error()), nil
					}
				}
				auth := ""
				if req.Extra != nil && req.Extra.Header != nil {
					auth = req.Extra.Header.Get("Authorization")
				}
				counters.record(name, Call{Args: args, Auth: auth})
				if name == "held_read" && o.Hold != nil {
					select {
					case <-o.Hold:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				keys := slices.Sorted(maps.Keys(args))
				var b strings.Builder
				fmt.Fprintf(&b, "%s answered for", name)
				big := false
				for _, k := range keys {
					fmt.Fprintf(&b, " %s=%v", k, args[k])
					if v, ok := args[k].(string); ok && strings.HasPrefix(v, "big") {
						big = true
					}
				}
				if big && name == "list_recent_notes" {
					for b.Len() < 25000 {
						b.WriteString(" note")
					}
				}
				return textResult(b.String()), nil
			})
	}
}

// ServeStdioIfChild serves the test server over stdio and exits when the
// process was started with EnvServe=1; call it first in TestMain.
func ServeStdioIfChild() {
	if os.Getenv(EnvServe) != "1" {
		return
	}
	if modes := os.Getenv(EnvRogue); modes != "" {
		serveRogue(modes)
		os.Exit(0)
	}
	n, _ := strconv.Atoi(os.Getenv(EnvTools))
	s := NewServer(Options{Tools: n, CrashFile: os.Getenv(EnvCrashFile), Secret: os.Getenv(EnvSecret)}, nil)
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// HTTP is the test server behind a streamable HTTP handler whose sessions
// can be expired at will.
type HTTP struct {
	Counters *Counters
	opts     Options
	h        atomic.Pointer[sdk.StreamableHTTPHandler]
	status   atomic.Int32 // when non-zero, every request is answered with it
	Requests atomic.Int64
	lastAuth atomic.Pointer[string]
}

// NewHTTP returns the handler; serve it with httptest.NewServer.
func NewHTTP(o Options) *HTTP {
	h := &HTTP{Counters: &Counters{}, opts: o}
	h.Expire()
	return h
}

// Expire forgets every session, as a server restart would: the next request
// carrying an old session id gets 404.
func (h *HTTP) Expire() {
	srv := NewServer(h.opts, h.Counters)
	h.h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
}

// FailWith answers every request with status (0 restores normal service).
func (h *HTTP) FailWith(status int) { h.status.Store(int32(status)) }

// LastAuthorization is the Authorization header of the latest request.
func (h *HTTP) LastAuthorization() string {
	if p := h.lastAuth.Load(); p != nil {
		return *p
	}
	return ""
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Requests.Add(1)
	a := r.Header.Get("Authorization")
	h.lastAuth.Store(&a)
	if st := h.status.Load(); st != 0 {
		http.Error(w, http.StatusText(int(st)), int(st))
		return
	}
	h.h.Load().ServeHTTP(w, r)
}
