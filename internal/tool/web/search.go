package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/tool"
)

// DefaultExaEndpoint is Exa's search API.
const DefaultExaEndpoint = "https://api.exa.ai/search"

// Search defaults.
const (
	DefaultSearchTimeout = 30 * time.Second
	DefaultResults       = 5
	MaxResults           = 10
	excerptChars         = 1000 // characters of page text Exa returns per result
	maxSearchBody        = 2 << 20
)

// SearchOptions configures web_search. Zero fields take the defaults.
type SearchOptions struct {
	// APIKey is the Exa key (EXA_API_KEY). Key, when set, is asked on every
	// call instead, so a key that arrives later (the vault) lights the tool
	// up without a restart.
	APIKey   string
	Key      func() string
	Endpoint string // DefaultExaEndpoint when empty; tests point it at exatest
	Timeout  time.Duration
	Client   *http.Client // nil: a client with no proxy
}

// SearchTool is web_search. It registers whether or not a key is present;
// Unusable says when a call would fail for want of one.
type SearchTool struct {
	tool.Tool
	opts SearchOptions
}

// Search returns the web_search tool.
func Search(opts SearchOptions) *SearchTool {
	if opts.Endpoint == "" {
		opts.Endpoint = DefaultExaEndpoint
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSearchTimeout
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}}
	}
	s := &SearchTool{opts: opts}
	s.Tool = tool.Func(SearchName, doc(searchDoc), true, s.run)
	return s
}

// Unusable reports that a call fails right now and why, for /v1/status.
func (s *SearchTool) Unusable() (reason string, bad bool) {
	if s.key() == "" {
		return "no Exa API key: set EXA_API_KEY", true
	}
	return "", false
}

func (s *SearchTool) key() string {
	if s.opts.Key != nil {
		return strings.TrimSpace(s.opts.Key())
	}
	return strings.TrimSpace(s.opts.APIKey)
}

type searchParams struct {
	Query          string   `json:"query" jsonschema:"what to search for, as a natural-language description of the page wanted"`
	NumResults     int      `json:"num_results,omitempty" jsonschema:"how many results, 1 to 10 (default 5)"`
	IncludeDomains []string `json:"include_domains,omitempty" jsonschema:"only return results from these sites, e.g. go.dev"`
}

// exaRequest is the body of Exa's POST /search.
type exaRequest struct {
	Query          string      `json:"query"`
	Type           string      `json:"type"`
	NumResults     int         `json:"numResults"`
	IncludeDomains []string    `json:"includeDomains,omitempty"`
	Contents       exaContents `json:"contents"`
}

type exaContents struct {
	Text exaText `json:"text"`
}

type exaText struct {
	MaxCharacters int `json:"maxCharacters"`
}

// exaResponse is the part of Exa's answer the tool reads.
type exaResponse struct {
	RequestID string `json:"requestId"`
	Results   []struct {
		Title         string   `json:"title"`
		URL           string   `json:"url"`
		PublishedDate string   `json:"publishedDate"`
		Author        string   `json:"author"`
		Text          string   `json:"text"`
		Highlights    []string `json:"highlights"`
		Summary       string   `json:"summary"`
	} `json:"results"`
}

func (s *SearchTool) run(ctx context.Context, _ tool.Call, p searchParams) (tool.Result, error) {
	key := s.key()
	if key == "" {
		return tool.Errorf("web_search is not available: no Exa API key is configured (the operator sets EXA_API_KEY); use web_fetch on a known URL instead"), nil
	}
	q := strings.TrimSpace(p.Query)
	if q == "" {
		return tool.Errorf("query is empty; describe what to search for"), nil
	}
	if len(q) > 2000 {
		return tool.Errorf("query is %d characters; keep it under 2000", len(q)), nil
	}
	n := p.NumResults
	switch {
	case n == 0:
		n = DefaultResults
	case n < 1 || n > MaxResults:
		return tool.Errorf("num_results must be between 1 and %d, got %d", MaxResults, n), nil
	}
	var domains []string
	for _, d := range p.IncludeDomains {
		d = strings.TrimSpace(d)
		if d == "" || strings.ContainsAny(d, " \t\n") {
			return tool.Errorf("include_domains entry %q is not a domain; give names like go.dev", d), nil
		}
		domains = append(domains, d)
	}

	body, err := json.Marshal(exaRequest{
		Query: q, Type: "auto", NumResults: n, IncludeDomains: domains,
		Contents: exaContents{Text: exaText{MaxCharacters: excerptChars}},
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("web_search: encode request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.Endpoint, bytes.NewReader(body))
	if err != nil {
		return tool.Result{}, fmt.Errorf("web_search: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("x-api-key", key)
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return tool.Errorf("web_search timed out; try again or narrow the query"), nil
		case ctx.Err() != nil:
			return tool.Result{}, fmt.Errorf("web_search: %w", ctx.Err())
		}
		return tool.Errorf("web_search could not reach the search service: %v", redact(err.Error(), key)), nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return tool.Errorf("web_search: reading the answer failed: %v", err), nil
	}
	if resp.StatusCode != http.StatusOK {
		return tool.Errorf("%s", statusProblem(resp.StatusCode, redact(apiError(raw), key))), nil
	}
	var out exaResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return tool.Errorf("web_search: the search service sent an answer that is not valid JSON (%v)", err), nil
	}
	return tool.Text(renderResults(q, out)), nil
}

// statusProblem explains a non-200 answer from Exa.
func statusProblem(code int, msg string) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("web_search is not available: the search service rejected the API key (HTTP %d: %s); the operator must fix EXA_API_KEY", code, msg)
	case code == http.StatusTooManyRequests:
		return fmt.Sprintf("web_search is rate limited (HTTP 429: %s); wait and try again", msg)
	case code == http.StatusPaymentRequired:
		return fmt.Sprintf("web_search is out of credits (HTTP 402: %s)", msg)
	case code >= 500:
		return fmt.Sprintf("the search service failed (HTTP %d: %s); try again later", code, msg)
	default:
		return fmt.Sprintf("the search service refused the request (HTTP %d: %s)", code, msg)
	}
}

// apiError pulls Exa's {"error": "..."} message out of a failed answer.
func apiError(raw []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return headRunes(e.Error, 300)
	}
	if s := collapse(string(raw)); s != "" {
		return headRunes(s, 300)
	}
	return "no details"
}

// redact keeps the key out of anything shown to the model.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[EXA_API_KEY]")
}

func renderResults(q string, out exaResponse) string {
	if len(out.Results) == 0 {
		return fmt.Sprintf("[no results for %q; try other words or fewer filters]", q)
	}
	var b strings.Builder
	for i, r := range out.Results {
		title := collapse(r.Title)
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, title, r.URL)
		var meta []string
		if d := strings.TrimSpace(r.PublishedDate); d != "" {
			if t, err := time.Parse(time.RFC3339, d); err == nil {
				d = t.Format("2006-01-02")
			}
			meta = append(meta, "published "+d)
		}
		if a := collapse(r.Author); a != "" {
			meta = append(meta, "by "+a)
		}
		if len(meta) > 0 {
			fmt.Fprintf(&b, "   %s\n", strings.Join(meta, ", "))
		}
		excerpt := collapse(r.Text)
		if excerpt == "" {
			excerpt = collapse(strings.Join(r.Highlights, " … "))
		}
		if excerpt == "" {
			excerpt = collapse(r.Summary)
		}
		if excerpt != "" {
			fmt.Fprintf(&b, "   %s\n", headRunes(excerpt, excerptChars))
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
