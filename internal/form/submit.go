package form

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/snapshot"
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
	// SubmitVerified: the submit went through (navigation or requests that
	// settled) and every expectation of Verify holds.
	SubmitVerified = "verified"
	// SubmitBlocked: the browser's client-side validation stopped the
	// submit; FormValidation lists the failing fields.
	SubmitBlocked = "blocked"
	// SubmitUnverified: the submit ran but did not show the expected effect
	// (no navigation, an expectation failed, or the wait timed out).
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

// Issue is one field the browser's validation rejected. It never carries
// the submitted value.
type Issue struct {
	Target snapshot.Target `json:"target"`
	// Name is the field's name attribute (else its id, else its label).
	Name       string `json:"name"`
	Message    string `json:"message"`
	Constraint string `json:"constraint"`
}

// Submission is the outcome of SubmitAndVerify.
type Submission struct {
	Status    string `json:"status"`
	Navigated bool   `json:"navigated"`
	URL       string `json:"url"`
	// Requests counts the network requests the submit started.
	Requests       int     `json:"requests"`
	FormValidation []Issue `json:"formValidation,omitempty"`
	Reason         string  `json:"reason,omitempty"`
}

// SubmitAndVerify submits through the target — a native click on a submit
// button, or requestSubmit on a form target — then waits for navigation or
// network quiet and checks Verify. When the browser's client-side
// validation blocks the submit (the invalid event fires), it returns status
// blocked with value-free FormValidation issues for the repair loop. An
// error means the submit could not be attempted; an outcome that is not
// verified is a Submission, not an error.
func SubmitAndVerify(ctx context.Context, t snapshot.Target, v Verify) (*Submission, error) {
	v, err := v.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := checkPage(ctx); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	defer releaseObjects(ctx)
	el, err := resolveElement(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	handle, err := callRef(ctx, el.obj, pageFunc("op", submitJS), "arm")
	if err != nil {
		return nil, fmt.Errorf("submit: arm validation watch: %w", err)
	}
	var info struct {
		Form       bool `json:"form"`
		IsForm     bool `json:"isForm"`
		NoValidate bool `json:"noValidate"`
	}
	if err := callOn(ctx, handle, pageFunc("op", submitJS), &info, "info"); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil || ft.FrameTree == nil || ft.FrameTree.Frame == nil {
		return nil, fmt.Errorf("submit: get main frame: %v", err)
	}
	w := watch(ctx, ft.FrameTree.Frame.ID)
	defer w.stop()

	if info.IsForm {
		err = callOn(ctx, handle, pageFunc("op", submitJS), nil, "submitForm")
	} else {
		err = click(ctx, el, false)
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
		if callOn(ctx, handle, pageFunc("op", submitJS), &n, "count") != nil {
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
		issues, err := readIssues(ctx, handle)
		if err != nil {
			return nil, fmt.Errorf("submit: read validation issues: %w", err)
		}
		_ = callOn(ctx, handle, pageFunc("op", submitJS), nil, "disarm")
		out.Status = SubmitBlocked
		out.FormValidation = issues
		out.URL = currentURL(ctx)
		out.Reason = "client-side validation blocked the submit; fix the listed fields and submit again"
		return out, nil
	}
	if !st.navigated {
		_ = callOn(ctx, handle, pageFunc("op", submitJS), nil, "disarm")
	}
	out.URL = currentURL(ctx)
	out.Status, out.Reason = judge(ctx, v, st, timedOut, out.URL)
	return out, nil
}

// judge decides verified or unverified, with the reason.
func judge(ctx context.Context, v Verify, st watchState, timedOut bool, url string) (string, string) {
	switch {
	case timedOut && st.navRequested && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the navigation did not finish within %s", v.Timeout)
	case timedOut && v.WaitFor == WaitNavigation && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the submit did not navigate within %s", v.Timeout)
	case timedOut && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the network did not go quiet within %s", v.Timeout)
	}
	if v.URLContains != "" && !strings.Contains(url, v.URLContains) {
		return SubmitUnverified, "the page URL does not contain the expected text"
	}
	if v.TextContains != "" {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
		if err != nil || !strings.Contains(text, v.TextContains) {
			return SubmitUnverified, "the page text does not contain the expected text"
		}
	}
	if !st.navigated && st.requests == 0 && v.URLContains == "" && v.TextContains == "" {
		return SubmitUnverified, "the submit caused no navigation and no network request; " +
			"the page may show its own validation errors: take an a11y_snapshot"
	}
	return SubmitVerified, ""
}

// currentURL reads the page URL; empty when the page is mid-navigation.
func currentURL(ctx context.Context) string {
	u, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		return ""
	}
	return u
}

// callRef runs a function on an object and returns its result by reference.
func callRef(ctx context.Context, obj runtime.RemoteObjectID, fn string, args ...any) (runtime.RemoteObjectID, error) {
	cargs, err := packArgs(args)
	if err != nil {
		return "", err
	}
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn,
		ObjectID:            obj,
		Arguments:           cargs,
		ObjectGroup:         objectGroup,
	})
	if err != nil {
		return "", fmt.Errorf("call into page: %w", err)
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("call into page: %s", exceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return "", errors.New("call into page: no object returned")
	}
	return res.Result.ObjectID, nil
}

// readIssues turns the recorded invalid controls into value-free issues.
func readIssues(ctx context.Context, handle runtime.RemoteObjectID) ([]Issue, error) {
	ids, data, err := callDeep(ctx, handle, pageFunc("op", submitJS), "issues")
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Name       string `json:"name"`
		Label      string `json:"label"`
		Role       string `json:"role"`
		Constraint string `json:"constraint"`
		Message    string `json:"message"`
	}
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return nil, fmt.Errorf("decode issues: %w", err)
	}
	ax, err := snapshot.Describe(ctx, ids)
	if err != nil {
		return nil, err
	}
	issues := make([]Issue, 0, len(raw))
	for i, r := range raw {
		var id cdp.BackendNodeID
		if i < len(ids) {
			id = ids[i]
		}
		issues = append(issues, Issue{
			Target:     semanticTarget(ax, id, r.Role, r.Label),
			Name:       clip(r.Name, maxLabelRunes),
			Message:    r.Message,
			Constraint: r.Constraint,
		})
	}
	return issues, nil
}
