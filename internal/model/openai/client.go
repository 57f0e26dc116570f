// Package openai is the model.Provider for OpenAI-compatible Chat
// Completions endpoints (OpenRouter, vLLM, most gateways), built on the
// official openai-go SDK for transport (without linking its root package,
// see chatPath); the request body is encoded here, byte for byte as the
// SDK would encode it (see encode.go), at a fraction of the cost, and the
// answer read by structs of our own (stream.go, lenient.go).
//
// Every call streams: text and reasoning deltas reach the caller as they
// arrive, tool calls are assembled across chunks by index, and usage
// (with OpenRouter's usage.cost) is read from the final usage chunk.
//
// The client is configured only by Options: it never reads OPENAI_API_KEY,
// OPENAI_BASE_URL or any other environment variable, and it never retries
// (the harness owns retry, fallback and failover). Failures come back as
// *model.Error with the status, a server message cut to 500 characters with
// the API key scrubbed, and whether another attempt is worthwhile.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/deltaharness/delta/internal/model"
)

// DefaultBaseURL is OpenRouter, the endpoint Delta uses when none is configured.
const DefaultBaseURL = "https://openrouter.ai/api/v1"

// Options configure a Client. Zero values mean: OpenRouter, no key, no
// per-call timeout, a plain http.Client, no extra headers.
type Options struct {
	BaseURL    string        // without /chat/completions, which the client appends
	APIKey     string        // sent as "Authorization: Bearer <key>" when set
	Timeout    time.Duration // bounds one call, the streamed body included
	HTTPClient *http.Client
	Headers    map[string]string // extra static headers (already vetted by config)
}

// Client calls one Chat Completions endpoint. It is safe for concurrent use.
type Client struct {
	chat       responses.ResponseService // re-pointed at chat/completions (chatPath)
	apiKey     string
	timeout    time.Duration
	openRouter bool           // the host takes reasoning:{effort}, not reasoning_effort
	setupErr   error          // a base URL that cannot work; every call reports it
	toolDefs   model.ToolDefs // the tools' definitions, encoded once per client
}

var _ model.Provider = (*Client)(nil)

// New builds a client from o alone.
func New(o Options) *Client {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	c := &Client{apiKey: o.APIKey, timeout: o.Timeout}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		c.setupErr = fmt.Errorf("base URL %q: %w", base, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		c.setupErr = fmt.Errorf("base URL %q: want http(s)://host/path", base)
	default:
		h := strings.ToLower(u.Hostname())
		c.openRouter = h == "openrouter.ai" || strings.HasSuffix(h, ".openrouter.ai")
	}
	c.chat = responses.NewResponseService(append(SDKOptions(base, o.APIKey, o.HTTPClient, o.Headers), option.WithMiddleware(chatPath))...)
	return c
}

// chatPath re-points a request openai-go's responses service built for
// <base>/responses at <base>/chat/completions, the URL its chat service
// posts to; everything else about the request (auth, the SDK's headers and
// user agent, the body) is the SDK's own. The chat service lives in the
// SDK's root package, whose generated types and init-time registrations
// would be a quarter of delta's binary; the two services build a POST the
// same way and differ only in the path (TestRequestMatchesSDKOnTheWire
// holds them to the same bytes).
func chatPath(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	req.URL = req.URL.ResolveReference(&url.URL{Path: "chat/completions"})
	return next(req)
}

// defaultClient is the HTTP client of a service given none. Its transport
// is net/http's default but for the idle connections it keeps per host:
// the default keeps two, so with many runs calling one provider at once
// nearly every call would close its connection on return and the next
// would dial (and shake hands over TLS) again. Idle connections still
// close after the default's 90 s.
var defaultClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConns
	return &http.Client{Transport: t}
}()

// maxIdleConns bounds the idle connections defaultClient keeps, per host
// and in all: the most runs a daemon runs at once (DELTA_MAX_CONCURRENCY's
// ceiling), each with its call in flight.
const maxIdleConns = 256

// SDKOptions configure an openai-go service from explicit values only:
// the SDK's NewClient would first apply DefaultClientOptions, which read
// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS and
// more from the environment. Retries are off (the harness owns them), the
// key goes as a bearer token when set, and the static headers are sent in
// name order. Package responses builds its service from them too.
func SDKOptions(baseURL, apiKey string, hc *http.Client, headers map[string]string) []option.RequestOption {
	if hc == nil {
		hc = defaultClient
	}
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		opts = append(opts, option.WithHeader(k, headers[k]))
	}
	return opts
}

// Post sends body, already encoded, through call (an openai-go service's
// New method) and returns the raw response. The SDK stays the transport
// (auth, headers, retries off) while the empty params it is given are
// never encoded onto the wire. Asking for the raw *http.Response keeps the
// SDK from decoding the body, so the caller reads the event stream itself
// and can tell a finished stream from one that was cut. On an error the
// response, if any, is returned too, for its status and body. Package
// responses posts through it too.
func Post[P, R any](ctx context.Context, call func(context.Context, P, ...option.RequestOption) (R, error), body []byte) (*http.Response, error) {
	var res *http.Response
	var params P
	_, err := call(ctx, params,
		option.WithRequestBody("application/json", body),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseBodyInto(&res),
	)
	return res, err
}

// Complete performs one streamed call. On a failure after the stream began
// it returns what had arrived so far together with the error.
func (c *Client) Complete(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	if c.setupErr != nil {
		return model.Response{}, &model.Error{Message: c.setupErr.Error(), Err: c.setupErr}
	}
	pre, _ := req.Memo.Take(c).(*prefix)
	p, err := buildAfter(req, c.openRouter, &c.toolDefs, pre)
	if err != nil {
		return model.Response{}, err
	}
	body := p.encode()
	if p.next != nil {
		req.Memo.Put(c, p.next)
	}
	callCtx, cancel := model.CallContext(ctx, c.timeout)
	defer cancel()

	res, err := Post(callCtx, c.chat.New, body) //nolint:bodyclose // model.Finish closes it: the stream reader, or its defer on a failure
	acc := newAccumulator(s)
	read := func(res *http.Response) error {
		if isJSON(res.Header.Get("Content-Type")) {
			return readCompletion(res, acc)
		}
		return acc.read(res)
	}
	return model.Finish(res, err, read, acc.response, func(res *http.Response, err error) error {
		return c.fail(ctx, callCtx, res, err)
	})
}

// readCompletion handles a gateway that ignored stream:true and answered
// with one chat.completion object.
func readCompletion(res *http.Response, acc *accumulator) error {
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read completion: %w", err)
	}
	comp, err := decodeCompletion(body)
	if err != nil {
		return fmt.Errorf("malformed completion: %w", err)
	}
	if len(comp.Choices) == 0 {
		return fmt.Errorf("completion has no choices: %w", errIncomplete)
	}
	acc.fromCompletion(&comp)
	return nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// statusError is the *model.Error for an HTTP failure; a context-window
// refusal wraps model.ErrContextOverflow and is not retriable (the same
// prompt would be refused again), so the engine can compact and retry.
func statusError(status int, code, msg, apiKey string, err error) *model.Error {
	return model.RefusalError(status, msg, apiKey, err, overflow(code, msg))
}

// overflow recognises a context-window refusal by OpenAI's code, or by the
// wording OpenAI-compatible gateways pass through ("maximum context length",
// "context length exceeded", "exceeds the context window", "prompt is too
// long").
func overflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "maximum context length") || strings.Contains(m, "context_length_exceeded") ||
		strings.Contains(m, "context length exceeded") || strings.Contains(m, "exceeds the context window") ||
		strings.Contains(m, "prompt is too long")
}

// RequestError is the *model.Error for a request the endpoint refused,
// as the SDK's error or else res's 4xx or 5xx status shows it, made by
// refused from the status, the error code and the message (the body's
// start when the SDK found none); nil for any other failure (a network
// failure, a cut or broken stream). Package responses uses it too.
func RequestError(res *http.Response, err error, refused func(status int, code, msg string) *model.Error) *model.Error {
	var apiErr *responses.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = model.BodyText(res)
		}
		return refused(apiErr.StatusCode, apiErr.Code, msg)
	}
	if res != nil && res.StatusCode >= 400 {
		return refused(res.StatusCode, "", model.BodyText(res))
	}
	return nil
}

// fail turns any failure into the error the harness branches on: the
// caller's own cancellation stays a context error, everything else is a
// *model.Error.
func (c *Client) fail(ctx, callCtx context.Context, res *http.Response, err error) error {
	if e := model.Interrupted(ctx, callCtx, "chat completion", c.timeout); e != nil {
		return e
	}
	if e := RequestError(res, err, func(status int, code, msg string) *model.Error {
		return statusError(status, code, msg, c.apiKey, err)
	}); e != nil {
		return e
	}
	var se *model.StreamError
	if errors.As(err, &se) {
		if overflow("", se.Error()) {
			return statusError(se.Status, "", se.Error(), c.apiKey, err)
		}
		retriable := se.Status == 0 || model.RetriableStatus(se.Status)
		return &model.Error{Status: se.Status, Message: model.CleanMessage(se.Error(), c.apiKey), Retriable: retriable, Err: err}
	}
	// Network failures, cut streams and garbled chunks: the endpoint may
	// well answer the next attempt.
	return model.NetworkError(err, c.apiKey)
}
