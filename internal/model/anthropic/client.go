// Package anthropic is the model.Provider for the native Anthropic Messages
// API (MODEL_API=anthropic), built on the official anthropic-sdk-go for
// transport; the request body is encoded here, byte for byte as the SDK
// would encode it (see encode.go), at a fraction of the cost.
//
// Endpoint: the configured base URL is the versioned base
// (https://api.anthropic.com/v1) and the client appends /messages; a bare
// host gets /v1/messages. Authentication is the real API's: the key in
// x-api-key, the SDK's anthropic-version header, no Authorization header.
//
// Every call streams: text deltas reach Stream.OnText, thinking deltas
// reach Stream.OnReasoning, tool_use input is assembled from
// input_json_delta fragments, and usage (input, output, cache reads, cache
// writes) comes from message_start and message_delta. Thinking blocks are
// returned in Response.Extra under "anthropic" and replayed on the next
// request, as the API requires after a tool_use turn with thinking on.
//
// Prompt caching: the placement rule is documented on
// placeBreakpoints and pinned by the golden files in testdata. Reasoning
// effort: see applyEffort.
//
// The client is configured only by Options: it never reads
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL or any other environment variable
// or profile (option.WithoutEnvironmentDefaults), and it never retries.
// Failures come back as *model.Error with the status, a server message cut
// to 500 characters with the key scrubbed, and whether another attempt is
// worthwhile (408, 409, 429, 5xx and 529 overloaded are); a prompt longer
// than the context window wraps model.ErrContextOverflow.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deltaharness/delta/internal/model"
)

// DefaultBaseURL is the Anthropic API's versioned base.
const DefaultBaseURL = "https://api.anthropic.com/v1"

// DefaultMaxTokens is max_tokens before any thinking headroom: the API
// requires the field, and every current Claude model accepts this much.
const DefaultMaxTokens = 8192

// Options configure a Client. Zero values mean: api.anthropic.com, no key,
// DefaultMaxTokens, no per-call timeout, a plain http.Client, no extra headers.
type Options struct {
	BaseURL    string // versioned base, without /messages, which the client appends
	APIKey     string // sent as x-api-key when set
	MaxTokens  int64
	Timeout    time.Duration // bounds one call, the streamed body included
	HTTPClient *http.Client
	Headers    map[string]string // extra static headers (already vetted by config)
}

// Client calls one Messages endpoint. It is safe for concurrent use.
type Client struct {
	messages  sdk.MessageService
	apiKey    string
	maxTokens int64
	timeout   time.Duration
	setupErr  error
	toolDefs  model.ToolDefs // the tools' definitions, encoded once per client
}

var _ model.Provider = (*Client)(nil)

// New builds a client from o alone.
func New(o Options) *Client {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	c := &Client{apiKey: o.APIKey, maxTokens: o.MaxTokens, timeout: o.Timeout}
	if c.maxTokens <= 0 {
		c.maxTokens = DefaultMaxTokens
	}
	endpoint, err := messagesURL(base)
	if err != nil {
		c.setupErr = err
		endpoint = &url.URL{Scheme: "http", Host: "invalid"}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(endpoint.Scheme + "://" + endpoint.Host + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		// The SDK appends v1/messages to the base; the spec appends
		// /messages to whatever versioned base the operator gave, so the
		// final URL is set here, exactly.
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			u := *endpoint
			u.RawQuery = r.URL.RawQuery
			r.URL = &u
			return next(r)
		}),
		// The SDK's WithAPIKey sends "Authorization: Bearer"; the Messages
		// API authenticates with x-api-key.
		option.WithHeaderDel("authorization"),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithHeader("x-api-key", o.APIKey))
	}
	for _, k := range slices.Sorted(maps.Keys(o.Headers)) {
		opts = append(opts, option.WithHeader(k, o.Headers[k]))
	}
	c.messages = sdk.NewMessageService(opts...)
	return c
}

// messagesURL is base + /messages, or base + /v1/messages for a bare host.
func messagesURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http(s)://host/path", base)
	}
	p := strings.TrimRight(u.Path, "/")
	if p == "" {
		p = "/v1"
	}
	u.Path, u.RawPath = p+"/messages", ""
	return u, nil
}

// Complete performs one streamed call. On a failure after the stream began
// it returns what had arrived so far together with the error.
func (c *Client) Complete(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	if c.setupErr != nil {
		return model.Response{}, &model.Error{Message: c.setupErr.Error(), Err: c.setupErr}
	}
	p, err := build(req, c.maxTokens, &c.toolDefs)
	if err != nil {
		return model.Response{}, err
	}
	callCtx, cancel := model.CallContext(ctx, c.timeout)
	defer cancel()

	// The SDK stays the transport (headers, auth, retries off); the body
	// is ours (encode.go), so the empty params are never encoded onto the
	// wire. The raw *http.Response lets this package read the event
	// stream itself and tell a finished stream from a cut one.
	var res *http.Response
	stream := c.messages.NewStreaming(callCtx, sdk.MessageNewParams{},
		option.WithRequestBody("application/json", p.encode()),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseBodyInto(&res),
	)
	acc := newAccumulator(s)
	return model.Finish(res, stream.Err(), acc.read, acc.response, func(res *http.Response, err error) error {
		return c.fail(ctx, callCtx, res, err)
	})
}

// fail turns any failure into the error the harness branches on: the
// caller's own cancellation stays a context error, everything else is a
// *model.Error.
func (c *Client) fail(ctx, callCtx context.Context, res *http.Response, err error) error {
	if e := model.Interrupted(ctx, callCtx, "anthropic messages", c.timeout); e != nil {
		return e
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = model.BodyText(res)
		}
		return c.statusError(apiErr.StatusCode, msg, err)
	}
	if res != nil && res.StatusCode >= 400 {
		return c.statusError(res.StatusCode, model.BodyText(res), err)
	}
	var se *model.StreamError
	if errors.As(err, &se) {
		e := c.statusError(se.Status, se.Message, err)
		if se.Status == 0 {
			e.Retriable = true
		}
		return e
	}
	// Network failures, cut streams and garbled events: the endpoint may
	// well answer the next attempt.
	return model.NetworkError(err, c.apiKey)
}

func (c *Client) statusError(status int, msg string, err error) *model.Error {
	return model.RefusalError(status, msg, c.apiKey, err, overflow(status, msg))
}

// overflow recognises Anthropic's context-window refusals: "prompt is too
// long: 210000 tokens > 200000 maximum" and "input length and `max_tokens`
// exceed context limit".
func overflow(status int, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "exceed context limit") ||
		strings.Contains(m, "context window") || strings.Contains(m, "context length")
}
