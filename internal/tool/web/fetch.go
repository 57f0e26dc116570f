package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/tool"
)

// Defaults for FetchOptions fields left zero.
const (
	DefaultFetchTimeout = 30 * time.Second // the fallback signal; the engine's tool timeout may be shorter
	DefaultMaxBytes     = 5 << 20          // bytes of body read
	DefaultMaxChars     = 16000            // characters of text per result, below the central 20,000 cap
	DefaultMaxRedirects = 10
)

// FetchOptions configures web_fetch. Zero fields take the defaults.
type FetchOptions struct {
	// AllowPrivate lets fetches reach loopback, private, link-local and
	// metadata addresses: the DELTA_FETCH_ALLOW_PRIVATE=1 development escape.
	AllowPrivate bool
	Timeout      time.Duration
	MaxBytes     int64
	MaxChars     int
	MaxRedirects int
	// Resolver looks host names up; nil means net.DefaultResolver.
	Resolver  Resolver
	UserAgent string
}

func (o FetchOptions) withDefaults() FetchOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultFetchTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = "Mozilla/5.0 (compatible; Delta web_fetch)"
	}
	return o
}

type fetchParams struct {
	URL    string `json:"url" jsonschema:"the http or https URL to read"`
	Offset int    `json:"offset,omitempty" jsonschema:"character offset into the page's text, to continue a long page (default 0)"`
}

// fetcher holds the one client every web_fetch call shares, so connections
// to a site are reused across calls.
type fetcher struct {
	opts   FetchOptions
	guard  *guard
	client *http.Client
}

// Fetch returns the web_fetch tool.
func Fetch(opts FetchOptions) tool.Tool {
	f := newFetcher(opts)
	return tool.Func(FetchName, doc(fetchDoc), true, f.run)
}

func newFetcher(opts FetchOptions) *fetcher {
	opts = opts.withDefaults()
	g := newGuard(opts.Resolver, opts.AllowPrivate, 10*time.Second)
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would make the connection, not the guard
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
	}
	f := &fetcher{opts: opts, guard: g}
	f.client = &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= opts.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", opts.MaxRedirects)
			}
			if err := checkURL(req.URL); err != nil {
				return fmt.Errorf("redirect to %s refused: %w", req.URL.Redacted(), err)
			}
			// An address written in the URL is judged here for a clear
			// message; names are judged by the dialer when it connects.
			if a, ok := hostAddr(req.URL.Hostname()); ok {
				if err := g.check(req.URL.Hostname(), a); err != nil {
					return fmt.Errorf("redirect to %s refused: %w", req.URL.Redacted(), err)
				}
			}
			return nil
		},
	}
	return f
}

// checkURL accepts absolute http and https URLs with a host.
func checkURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return errors.New("it has no scheme; use http:// or https://")
	default:
		return fmt.Errorf("scheme %q is not supported; only http and https are", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("it has no host")
	}
	return nil
}

func (f *fetcher) run(ctx context.Context, _ tool.Call, p fetchParams) (tool.Result, error) {
	raw := strings.TrimSpace(p.URL)
	if raw == "" {
		return tool.Errorf("url is empty; give an http or https URL"), nil
	}
	if p.Offset < 0 {
		return tool.Errorf("offset must be 0 or more, got %d", p.Offset), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return tool.Errorf("cannot fetch %q: not a valid URL (%v)", raw, err), nil
	}
	if err := checkURL(u); err != nil {
		return tool.Errorf("cannot fetch %q: %v", raw, err), nil
	}

	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Errorf("cannot fetch %q: %v", raw, err), nil
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return f.failure(ctx, raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return f.failure(ctx, raw, err)
	}
	cut := int64(len(body)) > f.opts.MaxBytes
	if cut {
		body = body[:f.opts.MaxBytes]
	}
	final := resp.Request.URL.String()

	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	var pg page
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		pg = extract(string(body), resp.Request.URL)
	case isText(mt):
		pg.text = strings.ToValidUTF8(string(body), "\uFFFD")
	default:
		return tool.Errorf("cannot read %s: it is %s, not a web page or text (web_fetch does not read images, PDFs or other binary files)", final, ctype), nil
	}

	if resp.StatusCode >= 400 {
		return tool.Errorf("fetching %s returned HTTP %s: %s", final, resp.Status, headRunes(collapse(pg.text), 500)), nil
	}
	return tool.Text(f.render(final, pg, cut, p.Offset)), nil
}

// render frames the window of text asked for with where it came from and
// how to continue.
func (f *fetcher) render(final string, pg page, cut bool, offset int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", final)
	if pg.title != "" {
		fmt.Fprintf(&b, "Title: %s\n", pg.title)
	}
	total := utf8.RuneCountInString(pg.text)
	if offset >= total && total > 0 {
		fmt.Fprintf(&b, "\n[offset %d is past the end: the text is %d characters]", offset, total)
		return b.String()
	}
	b.WriteByte('\n')
	if total == 0 {
		b.WriteString("[the page has no readable text]")
		return b.String()
	}
	win := sliceRunes(pg.text, offset, f.opts.MaxChars)
	b.WriteString(win)
	end := offset + utf8.RuneCountInString(win)
	if end < total {
		fmt.Fprintf(&b, "\n\n[characters %d–%d of %d; call web_fetch again with offset %d for more]", offset, end, total, end)
	} else if offset > 0 {
		fmt.Fprintf(&b, "\n\n[characters %d–%d of %d: the end]", offset, end, total)
	}
	if cut {
		fmt.Fprintf(&b, "\n[the page is larger than %d MB; only its beginning was read]", f.opts.MaxBytes>>20)
	}
	return b.String()
}

// failure turns a transport error into what the model sees.
func (f *fetcher) failure(ctx context.Context, raw string, err error) (tool.Result, error) {
	var blocked *BlockedError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &blocked):
		return tool.Errorf("refused to fetch %s: %v; web_fetch only reaches public internet addresses", raw, blocked), nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return tool.Errorf("fetching %s timed out", raw), nil
	case ctx.Err() != nil:
		return tool.Result{}, fmt.Errorf("fetch %s: %w", raw, ctx.Err())
	case isTimeout(err):
		// The transport's own header timeout can fire a moment before ctx's.
		return tool.Errorf("fetching %s timed out", raw), nil
	case errors.As(err, &dnsErr):
		return tool.Errorf("cannot fetch %s: the host name does not resolve (%v)", raw, dnsErr), nil
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the URL is named already
	}
	return tool.Errorf("cannot fetch %s: %v", raw, err), nil
}

// isText reports media types whose bytes are readable as they are.
func isText(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-ndjson", "application/yaml", "application/x-yaml", "application/toml":
		return true
	}
	return false
}

// sliceRunes returns at most n runes of s starting at rune offset off.
func sliceRunes(s string, off, n int) string {
	i := 0
	for k := 0; k < off && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	j := i
	for k := 0; k < n && j < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}

func headRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return sliceRunes(s, 0, n) + "…"
}

// collapse folds all whitespace runs to one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
