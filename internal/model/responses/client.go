// Package responses is the model.Provider for the OpenAI Responses API
// (MODEL_API=responses), built on openai-go's responses service for
// transport, with explicit options only (openai.SDKOptions): it never reads
// OPENAI_API_KEY, OPENAI_BASE_URL or any other environment variable, and
// it never retries. The request body is encoded here, byte for byte as the
// SDK would encode it (see encode.go), at a fraction of the cost.
//
// The base URL is the versioned base (https://api.openai.com/v1); the
// client appends /responses. Every call streams and is stateless
// (store:false, the whole conversation in input): output_text deltas reach
// Stream.OnText, reasoning summary and reasoning text deltas reach
// Stream.OnReasoning, function calls are assembled from their argument
// deltas (the .done event and the completed response are authoritative),
// and usage (input with cached and cache-write tokens, output) comes from
// response.completed.
//
// Lanes: on an api.openai.com host the client asks for
// encrypted reasoning, returns the reasoning items and the message phase
// in Response.Extra under "responses", replays them verbatim on the next
// call, and sends text.verbosity and reasoning.summary when configured.
// Any other host gets the plain surface: none of those fields, and stored
// reasoning items are never sent to it. Unmapped names the knobs a lane
// cannot render.
//
// Failures come back as *model.Error with the same status and retry rules
// as the Chat Completions wire; a context-window refusal
// (context_length_exceeded) wraps model.ErrContextOverflow.
package responses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/openai"
)

// DefaultBaseURL is OpenAI's versioned base.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configure a Client. Zero values mean: api.openai.com, no key, no
// per-call timeout, a plain http.Client, no extra headers, no verbosity or
// summary.
type Options struct {
	BaseURL    string // without /responses, which the client appends
	APIKey     string // sent as "Authorization: Bearer <key>" when set
	Timeout    time.Duration
	HTTPClient *http.Client
	Headers    map[string]string
	// TextVerbosity is DELTA_TEXT_VERBOSITY (low, medium, high): sent as
	// text.verbosity, on api.openai.com hosts only.
	TextVerbosity string
	// ReasoningSummary is DELTA_REASONING_SUMMARY (auto): sent as
	// reasoning.summary, on api.openai.com hosts only.
	ReasoningSummary string
}

// Client calls one Responses endpoint. It is safe for concurrent use.
type Client struct {
	svc      responses.ResponseService
	apiKey   string
	timeout  time.Duration
	lane     lane
	setupErr error
	toolDefs model.ToolDefs // the tools' definitions, encoded once per client
}

var _ model.Provider = (*Client)(nil)

// Native reports whether baseURL is an api.openai.com host, the only lane
// that receives the reasoning carry, phase, verbosity and summaries.
func Native(baseURL string) bool {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "https" {
		return false
	}
	return strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Unmapped names the configured knobs the lane at baseURL cannot render,
// by their environment names; empty when every knob reaches the wire. The
// boot line and /v1/status controls.unmapped both use it.
func Unmapped(baseURL string, o Options) []string {
	if Native(baseURL) {
		return nil
	}
	var out []string
	if o.TextVerbosity != "" {
		out = append(out, "DELTA_TEXT_VERBOSITY")
	}
	if o.ReasoningSummary != "" {
		out = append(out, "DELTA_REASONING_SUMMARY")
	}
	return out
}

// New builds a client from o alone.
func New(o Options) *Client {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	c := &Client{apiKey: o.APIKey, timeout: o.Timeout}
	if u, err := url.Parse(base); err != nil {
		c.setupErr = fmt.Errorf("base URL %q: %w", base, err)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.setupErr = fmt.Errorf("base URL %q: want http(s)://host/path", base)
	}
	if Native(base) {
		c.lane = lane{native: true,
			verbosity: strings.ToLower(strings.TrimSpace(o.TextVerbosity)),
			summary:   strings.ToLower(strings.TrimSpace(o.ReasoningSummary))}
	}
	c.svc = responses.NewResponseService(openai.SDKOptions(base, o.APIKey, o.HTTPClient, o.Headers)...)
	return c
}

// Complete performs one streamed call. On a failure after the stream began
// it returns what had arrived so far together with the error.
func (c *Client) Complete(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	if c.setupErr != nil {
		return model.Response{}, &model.Error{Message: c.setupErr.Error(), Err: c.setupErr}
	}
	p, err := build(req, c.lane, &c.toolDefs)
	if err != nil {
		return model.Response{}, err
	}
	callCtx, cancel := model.CallContext(ctx, c.timeout)
	defer cancel()

	res, err := openai.Post(callCtx, c.svc.New, p.encode()) //nolint:bodyclose // model.Finish closes it: the stream reader, or its defer on a failure
	acc := newAccumulator(s, c.lane.native)
	return model.Finish(res, err, acc.read, acc.response, func(res *http.Response, err error) error {
		return c.fail(ctx, callCtx, res, err)
	})
}

func (c *Client) fail(ctx, callCtx context.Context, res *http.Response, err error) error {
	if e := model.Interrupted(ctx, callCtx, "responses call", c.timeout); e != nil {
		return e
	}
	if e := openai.RequestError(res, err, func(status int, code, msg string) *model.Error {
		return c.statusError(status, code, msg, err)
	}); e != nil {
		return e
	}
	var se *model.StreamError
	if errors.As(err, &se) {
		e := c.statusError(se.Status, se.Code, se.Message, err)
		if se.Status == 0 && !errors.Is(e, model.ErrContextOverflow) {
			e.Retriable = true
		}
		return e
	}
	return model.NetworkError(err, c.apiKey)
}

func (c *Client) statusError(status int, code, msg string, err error) *model.Error {
	return model.RefusalError(status, msg, c.apiKey, err, overflow(code, msg))
}

// overflow recognises OpenAI's context-window refusals by code, or by the
// wording proxies pass through.
func overflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "exceeds the context window") || strings.Contains(m, "maximum context length")
}
