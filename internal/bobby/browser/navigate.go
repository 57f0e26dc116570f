package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Navigation outcome statuses.
const (
	NavCompleted = "completed"
	NavFailed    = "failed"
)

// Navigation error codes. invalidRequest and networkPolicyDenied are the
// gateway's failure reasons of the same name.
const (
	NavCodeInvalidRequest = "invalidRequest"      // the URL does not parse or is not absolute
	NavCodePolicyDenied   = "networkPolicyDenied" // scheme or AllowURL refused it
	NavCodeNetworkError   = "networkError"        // DNS, connection refused, TLS…
	NavCodeHTTPError      = "httpError"           // the document answered 4xx/5xx
	NavCodeTimeout        = "timeout"             // no load event within NavigateTimeout
	NavCodeDialogOpen     = "dialogOpen"          // a JavaScript dialog blocks the page
	NavCodeDownload       = "download"            // the URL is a download, not a page
	NavCodePageClosed     = "pageClosed"          // the page or its session is gone
	NavCodeBrowserCrashed = "browserCrashed"      // Chromium died
	NavCodeAborted        = "aborted"             // the caller's context ended
	NavCodeFailed         = "navigationFailed"    // any other failure
)

// NavigationOutcome is the result of Navigate. A failed navigation is a
// value, never a hang and never a Go error: the caller reports it as is.
type NavigationOutcome struct {
	Status     string           `json:"status"`
	URL        string           `json:"url"`
	FinalURL   string           `json:"finalUrl"`
	HTTPStatus *int             `json:"httpStatus"`
	Error      *NavigationError `json:"error"`
}

// NavigationError says why a navigation failed.
type NavigationError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Dialog  *Dialog `json:"dialog,omitempty"`
}

// OK reports whether the navigation completed.
func (o NavigationOutcome) OK() bool { return o.Status == NavCompleted }

// downloadBeginWait bounds how long Navigate waits for the browser to
// report the download a navigation turned into, to cancel it.
const downloadBeginWait = 5 * time.Second

// MaxURLLength bounds the URLs Navigate accepts (Chromium's own limit).
const MaxURLLength = 2 << 20

// NavigationPolicy decides which URL schemes a page may be navigated to.
// http, https and about:blank are always allowed; javascript: never is,
// because it would run script past the session's javascriptEvaluation policy.
type NavigationPolicy struct {
	// AllowSchemes lists further schemes the gateway permits, such as
	// "file" or "data".
	AllowSchemes []string
}

// Check parses raw and returns it when the policy allows it. Errors wrap
// ErrInvalidArgument (not a usable URL) or ErrPolicyDenied.
func (np NavigationPolicy) Check(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, invalidf("url is empty")
	}
	if len(raw) > MaxURLLength {
		return nil, invalidf("url is longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidf("url does not parse: %v", err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "":
		return nil, invalidf("url %q is not absolute (it needs a scheme such as https://)", raw)
	case "http", "https":
		if u.Host == "" {
			return nil, invalidf("url %q has no host", raw)
		}
		return u, nil
	case "about":
		if u.Opaque == "blank" && u.RawQuery == "" {
			return u, nil
		}
	case "javascript":
		return nil, fmt.Errorf("%w: javascript: urls are never navigable", ErrPolicyDenied)
	}
	if slices.ContainsFunc(np.AllowSchemes, func(s string) bool { return strings.EqualFold(s, scheme) }) {
		return u, nil
	}
	return nil, fmt.Errorf("%w: scheme %q is not allowed", ErrPolicyDenied, scheme)
}

// checkURL applies the scheme policy and the AllowURL hook.
func (r *Runtime) checkURL(raw string) (*url.URL, error) {
	u, err := r.opts.Navigation.Check(raw)
	if err != nil {
		return nil, err
	}
	if r.opts.AllowURL != nil && (u.Scheme == "http" || u.Scheme == "https") {
		if err := r.opts.AllowURL(u); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPolicyDenied, err)
		}
	}
	return u, nil
}

// netFailure classifies a network error text of the document request.
func netFailure(text string) *navFailure {
	if blockedByPolicy(text) {
		return &navFailure{NavCodePolicyDenied, "the network policy refused a request of this navigation (" + text + ")"}
	}
	return &navFailure{NavCodeNetworkError, text}
}

// navFailure is an outcome error raised inside the navigation.
type navFailure struct{ code, msg string }

func (e *navFailure) Error() string { return e.code + ": " + e.msg }

// Navigate loads rawURL in the page and waits for its load event, at most
// NavigateTimeout. It checks the URL against the NavigationPolicy and
// AllowURL first, and the final URL (after redirects) against AllowURL
// again. An HTTP error status, a network error, a timeout or a dialog make a
// failed outcome.
func (p *Page) Navigate(ctx context.Context, rawURL string) NavigationOutcome {
	out := NavigationOutcome{Status: NavFailed, URL: rawURL}
	fail := func(code, msg string) NavigationOutcome {
		out.Error = &NavigationError{Code: code, Message: msg}
		if out.FinalURL == "" {
			out.FinalURL = p.URL()
		}
		return out
	}
	rt := p.session.rt
	// Whatever the outcome, the session's start is over: the next warm
	// spare may be made now.
	defer p.session.started()
	u, err := rt.checkURL(rawURL)
	if err != nil {
		if errors.Is(err, ErrPolicyDenied) {
			return fail(NavCodePolicyDenied, err.Error())
		}
		return fail(NavCodeInvalidRequest, err.Error())
	}

	limit := AppliedTimeout(ctx, rt.opts.NavigateTimeout)
	mark := p.DownloadMark()
	var loader cdp.LoaderID
	err = p.do(ctx, rt.opts.NavigateTimeout, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		before := p.tr.snap().commits
		p.tr.markNavigated()
		res, err := cdp.Call(pctx, t, page.Navigate, page.NavigateParams{URL: u.String()})
		if err != nil {
			return err
		}
		switch {
		case res.IsDownload:
			return &navFailure{NavCodeDownload, "the url starts a download, which navigate does not take (it was cancelled, nothing kept); use download_url"}
		case res.ErrorText != "":
			return netFailure(res.ErrorText)
		case res.LoaderID == "":
			// Same-document (fragment) navigation: nothing loads, and
			// the navigatedWithinDocument event may trail the reply.
			p.tr.setURL(u.String())
			return nil
		}
		loader = res.LoaderID
		for {
			s := p.tr.snap()
			if d, ok := p.tr.docInfo(loader); ok && d.failed != "" {
				return netFailure(d.failed)
			}
			// The load of our document, or of one that replaced it
			// (a client-side redirect), ends the wait.
			if s.commits > before && s.readyState == "complete" {
				return nil
			}
			select {
			case <-s.changed:
			case <-pctx.Done():
				return context.Cause(pctx)
			}
		}
	})
	out.FinalURL = p.URL()
	if err != nil {
		var nf *navFailure
		var de *DialogError
		switch {
		case errors.As(err, &nf):
			if nf.code == NavCodeDownload {
				// The browser started the download: cancel it, so it
				// neither runs on nor turns up as a later command's.
				p.discardDownloads(mark, downloadBeginWait)
			}
			return fail(nf.code, nf.msg)
		case errors.As(err, &de):
			out.Error = &NavigationError{Code: NavCodeDialogOpen, Message: de.Error(), Dialog: &de.Dialog}
			return out
		case errors.Is(err, ErrTimeout), errors.Is(ctx.Err(), context.DeadlineExceeded):
			// Our NavigateTimeout, or the caller's deadline (an envelope
			// deadline): both mean the page did not load in time.
			p.stopLoading()
			return fail(NavCodeTimeout, fmt.Sprintf("the page did not finish loading within %s", limit))
		case errors.Is(err, ErrBrowserCrashed):
			return fail(NavCodeBrowserCrashed, err.Error())
		case errors.Is(err, ErrPageClosed), errors.Is(err, ErrPageCrashed), errors.Is(err, ErrSessionClosed):
			return fail(NavCodePageClosed, err.Error())
		case ctx.Err() != nil:
			return fail(NavCodeAborted, ctx.Err().Error())
		}
		return fail(NavCodeFailed, err.Error())
	}

	if loader != "" {
		d, ok := p.tr.docInfo(loader)
		if !ok || d.status == 0 {
			d, ok = p.tr.docInfo(p.tr.snap().loader)
		}
		if ok && d.status > 0 {
			status := int(d.status)
			out.HTTPStatus = &status
		}
	}
	if fu, err := url.Parse(out.FinalURL); err == nil && rt.opts.AllowURL != nil && (fu.Scheme == "http" || fu.Scheme == "https") {
		if err := rt.opts.AllowURL(fu); err != nil {
			// A redirect led somewhere the policy refuses: do not leave
			// its content on the page.
			p.blank()
			return fail(NavCodePolicyDenied, fmt.Sprintf("redirected to a refused url: %v", err))
		}
	}
	if out.HTTPStatus != nil && *out.HTTPStatus >= 400 {
		return fail(NavCodeHTTPError, fmt.Sprintf("the server answered HTTP %d", *out.HTTPStatus))
	}
	out.Status = NavCompleted
	return out
}

// AppliedTimeout is the timeout that bounds work begun now under ctx with
// its own timeout d: d, or what is left of ctx's deadline (a command's
// timeoutMs) when that ends first, rounded to 10 ms for messages.
func AppliedTimeout(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return max(time.Until(dl).Round(10*time.Millisecond), time.Millisecond)
	}
	return d
}

// stopLoading stops a navigation that timed out, best effort.
func (p *Page) stopLoading() {
	ctx, cancel := p.callCtx(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = chromedp.Call(ctx, page.StopLoading, cdp.Empty{})
}

// blank replaces the page's document with about:blank, best effort.
func (p *Page) blank() {
	ctx, cancel := p.callCtx(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: "about:blank"})
}
