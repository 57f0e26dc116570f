// Package openai is the model.Provider for OpenAI-compatible Chat
// Completions endpoints (OpenRouter, vLLM, most gateways), built on the
// official openai-go SDK for request encoding and transport.
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

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
	chat       sdk.ChatCompletionService
	apiKey     string
	timeout    time.Duration
	openRouter bool  // the host takes reasoning:{effort}, not reasoning_effort
	setupErr   error // a base URL that cannot work; every call reports it
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
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// The chat service is built straight from explicit options: the SDK's
	// NewClient would first apply DefaultClientOptions, which read
	// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS
	// and more from the environment.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	names := make([]string, 0, len(o.Headers))
	for k := range o.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		opts = append(opts, option.WithHeader(k, o.Headers[k]))
	}
	c.chat = sdk.NewChatCompletionService(opts...)
	return c
}

// Complete performs one streamed call. On a failure after the stream began
// it returns what had arrived so far together with the error.
func (c *Client) Complete(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	if c.setupErr != nil {
		return model.Response{}, &model.Error{Message: c.setupErr.Error(), Err: c.setupErr}
	}
	params, err := buildParams(req, c.openRouter)
	if err != nil {
		return model.Response{}, err
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()

	// Asking for the raw *http.Response keeps the SDK from decoding the
	// body, so this package reads the event stream itself and can tell a
	// finished stream from one that was cut.
	var res *http.Response
	_, err = c.chat.New(callCtx, params,
		option.WithJSONSet("stream", true),
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseBodyInto(&res),
	)
	if err != nil {
		if res != nil && res.Body != nil {
			defer res.Body.Close()
		}
		return model.Response{}, c.fail(ctx, callCtx, res, err)
	}
	if res == nil {
		return model.Response{}, &model.Error{Message: "no response", Retriable: true}
	}
	acc := newAccumulator(s)
	if isJSON(res.Header.Get("Content-Type")) {
		err = readCompletion(res, acc)
	} else {
		err = acc.read(res)
	}
	if err != nil {
		return acc.response(), c.fail(ctx, callCtx, nil, err)
	}
	return acc.response(), nil
}

// readCompletion handles a gateway that ignored stream:true and answered
// with one chat.completion object.
func readCompletion(res *http.Response, acc *accumulator) error {
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read completion: %w", err)
	}
	var comp sdk.ChatCompletion
	if err := json.Unmarshal(body, &comp); err != nil {
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

// clean scrubs and bounds an endpoint message.
func (c *Client) clean(msg string) string { return model.CleanMessage(msg, c.apiKey) }

// fail turns any failure into the error the harness branches on: the
// caller's own cancellation stays a context error, everything else is a
// *model.Error.
func (c *Client) fail(ctx, callCtx context.Context, res *http.Response, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("chat completion: %w", ctx.Err())
	}
	if callCtx.Err() != nil {
		return &model.Error{
			Message:   fmt.Sprintf("no complete answer within %s", c.timeout),
			Retriable: true,
			Err:       callCtx.Err(),
		}
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
	var se *streamError
	if errors.As(err, &se) {
		retriable := se.code == 0 || model.RetriableStatus(se.code)
		return &model.Error{Status: se.code, Message: c.clean(se.Error()), Retriable: retriable, Err: err}
	}
	// Network failures, cut streams and garbled chunks: the endpoint may
	// well answer the next attempt.
	return &model.Error{Message: c.clean(err.Error()), Retriable: true, Err: err}
}

func (c *Client) statusError(status int, msg string, err error) error {
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(status)
	}
	return &model.Error{Status: status, Message: c.clean(msg), Retriable: model.RetriableStatus(status), Err: err}
}
