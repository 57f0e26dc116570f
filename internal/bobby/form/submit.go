package form

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
	"github.com/deltaharness/delta/internal/clip"
)

//go:embed js/submit.js
var submitJS string

// What a submit waits for.
const (
	WaitNetworkQuiet = "networkQuiet" // navigation, or the network going quiet (default)
	WaitNavigation   = "navigation"   // only a navigation counts
)

// Submission statuses.
const (
	// SubmitVerified: the expectations of Verify hold; or, without any, a
	// cross-document navigation committed with a 2xx/3xx document, or the
	// requests the submit started were answered 2xx/3xx.
	SubmitVerified = "verified"
	// SubmitBlocked: validation stopped the submit, the browser's own or
	// the page's (fields it marks aria-invalid during the submit; alerts it
	// writes, or fields left marked from an earlier attempt, while sending
	// nothing); FormValidation lists the issues, value-free.
	SubmitBlocked = "blocked"
	// SubmitUnverified: the submit ran but did not show the expected effect
	// (no navigation and no request, a fragment-only change, a request
	// answered 4xx/5xx or failed, an expectation failed, a timeout).
	SubmitUnverified = "unverified"
)

// Defaults of Verify.
const (
	DefaultSubmitTimeout = 10 * time.Second
	DefaultQuietFor      = 500 * time.Millisecond
)

// Verify says what a successful submit looks like.
type Verify struct {
	// WaitFor is WaitNetworkQuiet (default) or WaitNavigation.
	WaitFor string `json:"waitFor,omitempty"`
	// URLContains and TextContains, when set, must hold after the submit:
	// the page URL contains the one, the body text the other.
	URLContains  string `json:"urlContains,omitempty"`
	TextContains string `json:"textContains,omitempty"`
	// Timeout bounds the wait (DefaultSubmitTimeout); QuietFor is how long
	// the network must stay idle (DefaultQuietFor).
	Timeout  time.Duration `json:"-"`
	QuietFor time.Duration `json:"-"`
}

func (v Verify) withDefaults() (Verify, error) {
	switch v.WaitFor {
	case "":
		v.WaitFor = WaitNetworkQuiet
	case WaitNetworkQuiet, WaitNavigation:
	default:
		return v, fmt.Errorf("%w: waitFor %q, want %s or %s", ErrInvalidAction, v.WaitFor, WaitNetworkQuiet, WaitNavigation)
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultSubmitTimeout
	}
	if v.QuietFor <= 0 {
		v.QuietFor = DefaultQuietFor
	}
	return v, nil
}

// Issue is one field the browser's validation rejected, or one error the
// page rendered itself (constraint ariaInvalid or pageAlert). It never
// carries the submitted value.
type Issue struct {
	Target snapshot.Target `json:"target"`
	// Name is the field's name attribute (else its id, else its label).
	Name       string `json:"name"`
	Message    string `json:"message"`
	Constraint string `json:"constraint"`
	// stale marks an aria-invalid field the page had marked before the
	// submit and left alone during it: a leftover from an earlier attempt.
	stale bool
}

// Submission is the outcome of SubmitAndVerify.
type Submission struct {
	Status    string `json:"status"`
	Navigated bool   `json:"navigated"`
	URL       string `json:"url"`
	// Requests counts the network requests the submit started; Responses
	// lists those that carry a submit (documents, fetch, XHR) and how each
	// ended.
	Requests       int        `json:"requests"`
	Responses      []Response `json:"responses,omitempty"`
	FormValidation []Issue    `json:"formValidation,omitempty"`
	Reason         string     `json:"reason,omitempty"`
}

// SubmitAndVerify submits on the Chromium page in ctx; see
// [Tab.SubmitAndVerify].
func SubmitAndVerify(ctx context.Context, t snapshot.Target, v Verify) (*Submission, error) {
	return On(chromium{}).SubmitAndVerify(ctx, t, v)
}

// SubmitAndVerify submits through the target — a native click on a submit
// button, or requestSubmit on a form target — then waits for navigation or
// network quiet and judges the outcome (see the Submit* statuses): a request
// is proof only when it was answered 2xx/3xx, and a fragment-only change is
// no navigation. When validation blocks the submit — the browser's (the
// invalid event fires) or the page's own (fields it marks aria-invalid
// during the submit, new alert text or fields still marked from before
// while nothing was sent) — it returns status blocked with value-free
// FormValidation issues for the repair loop. A mark left from an earlier
// attempt does not outweigh a request of this submit answered 2xx/3xx. An error means the submit could
// not be attempted; an outcome that is not verified is a Submission, not an
// error.
func (tab Tab) SubmitAndVerify(ctx context.Context, t snapshot.Target, v Verify) (*Submission, error) {
	v, err := v.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := tab.p.Ready(ctx); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	defer tab.p.Release(ctx)
	el, err := tab.p.Resolve(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	handle, err := tab.p.Hold(ctx, el.Object, pageFunc("op", submitJS), "arm")
	if err != nil {
		return nil, fmt.Errorf("submit: arm validation watch: %w", err)
	}
	var info struct {
		Form       bool `json:"form"`
		IsForm     bool `json:"isForm"`
		NoValidate bool `json:"noValidate"`
	}
	if err := tab.p.Call(ctx, handle, pageFunc("op", submitJS), &info, "info"); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	w, err := watch(ctx, tab.p)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	defer w.stop()

	if info.IsForm {
		err = tab.p.Call(ctx, handle, pageFunc("op", submitJS), nil, "submitForm")
	} else {
		err = tab.click(ctx, el, false)
	}
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	w.clicked()

	blocked, timedOut, err := w.wait(ctx, v, func() int {
		if !info.Form || info.NoValidate {
			return 0
		}
		var n int
		if tab.p.Call(ctx, handle, pageFunc("op", submitJS), &n, "count") != nil {
			return 0 // the handle died with its document: a navigation
		}
		return n
	})
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	st := w.snapshot()
	out := &Submission{Navigated: st.navigated, Requests: st.requests}
	if blocked {
		issues, err := tab.readIssues(ctx, handle, "issues")
		if err != nil {
			return nil, fmt.Errorf("submit: read validation issues: %w", err)
		}
		_ = tab.p.Call(ctx, handle, pageFunc("op", submitJS), nil, "disarm")
		out.Status = SubmitBlocked
		out.FormValidation = issues
		out.URL = EvidenceURL(tab.currentURL(ctx))
		out.Reason = "client-side validation blocked the submit; fix the listed fields and submit again"
		return out, nil
	}
	out.Responses = responses(st)
	var pageIssues []Issue
	if !st.navigated {
		// The handle's document is still the page, unless the form sat in
		// an iframe that navigated: then the frame left, and wrote nothing.
		if issues, err := tab.readIssues(ctx, handle, "pageIssues"); err == nil {
			pageIssues = issues
			_ = tab.p.Call(ctx, handle, pageFunc("op", submitJS), nil, "disarm")
		}
	}
	full := tab.currentURL(ctx)
	out.URL = EvidenceURL(full)
	f := facts{v: v, st: st, timedOut: timedOut, issues: pageIssues}
	if v.URLContains != "" || v.TextContains != "" {
		f.expect = true
		f.expectFailed = tab.expectFailure(ctx, v, full)
	}
	out.Status, out.Reason, out.FormValidation = judge(f)
	return out, nil
}

// expectFailure checks Verify's expectations; "" when they hold.
func (tab Tab) expectFailure(ctx context.Context, v Verify, url string) string {
	if v.URLContains != "" && !strings.Contains(url, v.URLContains) {
		return "the page URL does not contain the expected text"
	}
	if v.TextContains != "" {
		var text string
		err := tab.p.Call(ctx, nil, "function() { return document.body ? document.body.innerText : ''; }", &text)
		if err != nil || !strings.Contains(text, v.TextContains) {
			return "the page text does not contain the expected text"
		}
	}
	return ""
}

// currentURL reads the page URL; empty when the page is mid-navigation.
func (tab Tab) currentURL(ctx context.Context) string {
	var u string
	if err := tab.p.Call(ctx, nil, "function() { return location.href; }", &u); err != nil {
		return ""
	}
	return u
}

// EvidenceURL is the page address as a submit's evidence shows it: without
// its query string, fragment or user info, which after a GET form hold the
// values just submitted (a password among them). A dropped query is marked.
func EvidenceURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	s := withoutQuery(raw)
	if u.RawQuery != "" || u.ForceQuery {
		s += "?…"
	}
	return s
}

// readIssues turns the elements an op reports (the invalid controls the
// browser flagged, or the errors the page rendered) into value-free issues.
func (tab Tab) readIssues(ctx context.Context, handle Object, op string) ([]Issue, error) {
	found, data, err := tab.p.Elements(ctx, handle, pageFunc("op", submitJS), op)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Name       string `json:"name"`
		Label      string `json:"label"`
		Role       string `json:"role"`
		Constraint string `json:"constraint"`
		Message    string `json:"message"`
		Stale      bool   `json:"stale"`
	}
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return nil, fmt.Errorf("decode issues: %w", err)
	}
	issues := make([]Issue, 0, len(raw))
	for i, r := range raw {
		var f Found
		if i < len(found) {
			f = found[i]
		}
		issues = append(issues, Issue{
			Target:     semanticTarget(f, r.Role, r.Label),
			Name:       clip.Runes(r.Name, maxLabelRunes),
			Message:    r.Message,
			Constraint: r.Constraint,
			stale:      r.Stale,
		})
	}
	return issues, nil
}
