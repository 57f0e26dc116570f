package form

import (
	"fmt"
	"net/url"
	"strings"
)

// Response is one request a submit started, as evidence. The URL has no
// query or fragment: a GET form puts the typed values there.
type Response struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	Type   string `json:"type"`
	// Status is the HTTP status of the final response (after redirects);
	// 0 when none arrived.
	Status int    `json:"status,omitempty"`
	Failed string `json:"failed,omitempty"` // the network error
}

// maxResponses bounds Submission.Responses.
const maxResponses = 20

// carriesSubmit reports whether a request of this type can carry a submit:
// a document (a native submit), fetch, XHR, a beacon. Images, scripts,
// styles and fonts a page loads on the way are not the submit's answer.
func carriesSubmit(t string) bool {
	switch t {
	case "Document", "XHR", "Fetch", "Ping", "Other":
		return true
	}
	return false
}

// submitRequests are the requests that carry the submit, or every request
// when none does (a submit may only load an image beacon).
func submitRequests(st watchState) []seenRequest {
	var out []seenRequest
	for _, r := range st.seen {
		if carriesSubmit(r.typ) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return st.seen
	}
	return out
}

func responses(st watchState) []Response {
	var out []Response
	for _, r := range submitRequests(st) {
		if len(out) == maxResponses {
			break
		}
		out = append(out, Response{Method: r.method, URL: withoutQuery(r.url), Type: r.typ, Status: int(r.status), Failed: r.failed})
	}
	return out
}

func withoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

func okStatus(s int64) bool { return s >= 200 && s < 400 }

// facts is what judge decides from.
type facts struct {
	v            Verify
	st           watchState
	timedOut     bool
	expect       bool   // Verify has urlContains or textContains
	expectFailed string // why an expectation does not hold; "" when they do
	issues       []Issue
}

// judge decides verified, blocked or unverified, with the reason and the
// page's own issues that belong in the result.
//
// A field the page marks aria-invalid during the submit blocks it even when
// a request was answered 2xx (the page rendered the server's rejection). A
// mark left from an earlier attempt counts only when the submit sent
// nothing: the page's validation stopped it again without touching the
// mark. Otherwise it is a leftover, and the request decides.
func judge(f facts) (status, reason string, issues []Issue) {
	st, v := f.st, f.v
	var current, stale []Issue
	marked := 0
	for _, is := range f.issues {
		switch {
		case is.stale:
			stale = append(stale, is)
		case is.Constraint == "ariaInvalid":
			marked++
			current = append(current, is)
		default:
			current = append(current, is)
		}
	}
	switch {
	case f.timedOut && st.navRequested && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the navigation did not finish within %s", v.Timeout), current
	case f.timedOut && v.WaitFor == WaitNavigation && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the submit did not navigate within %s", v.Timeout), current
	case f.timedOut && !st.navigated:
		return SubmitUnverified, fmt.Sprintf("the network did not go quiet within %s", v.Timeout), current
	}
	if f.expect {
		// The caller said what success looks like: that decides.
		if f.expectFailed != "" {
			return SubmitUnverified, f.expectFailed + seenSummary(st), current
		}
		return SubmitVerified, "", nil
	}
	if st.navigated {
		if s := documentStatus(st); s != 0 && !okStatus(s) {
			return SubmitUnverified, fmt.Sprintf("the submit navigated to a page that answered HTTP %d", s), nil
		}
		return SubmitVerified, "", nil
	}
	if marked > 0 {
		return SubmitBlocked, fmt.Sprintf("the page marked %d field(s) invalid; fix the listed fields and submit again", marked), current
	}
	reqs := submitRequests(st)
	var failed []string
	succeeded := 0
	for _, r := range reqs {
		switch {
		case r.failed != "":
			failed = append(failed, fmt.Sprintf("%s %s failed (%s)", r.method, pathOf(r.url), r.failed))
		case r.status != 0 && !okStatus(r.status):
			failed = append(failed, fmt.Sprintf("%s %s answered HTTP %d", r.method, pathOf(r.url), r.status))
		case r.done && r.status != 0:
			succeeded++
		}
	}
	switch {
	case len(failed) > 0:
		return SubmitUnverified, "the submit's request did not succeed: " + strings.Join(failed, "; "), current
	case succeeded > 0:
		return SubmitVerified, "", nil
	case len(current) > 0 && len(reqs) == 0:
		return SubmitBlocked, fmt.Sprintf("the page reported %d problem(s) and sent nothing; fix what the messages say and submit again", len(current)), current
	case len(stale) > 0 && len(reqs) == 0 && !st.sameDocument:
		return SubmitBlocked, fmt.Sprintf("the page still marks %d field(s) invalid and sent nothing; fix the listed fields and submit again", len(stale)), stale
	case len(reqs) > 0:
		return SubmitUnverified, "the submit's requests ended without an HTTP answer", current
	}
	reason = "the submit caused no navigation and no network request"
	if st.sameDocument {
		reason += " (only the URL fragment changed, which is not a navigation)"
	}
	return SubmitUnverified, reason + "; the page may show its own validation errors: take an a11y_snapshot", current
}

// documentStatus is the HTTP status of the main frame's last document.
func documentStatus(st watchState) int64 {
	var s int64
	for _, r := range st.seen {
		if r.typ == "Document" && r.status != 0 {
			s = r.status
		}
	}
	return s
}

// seenSummary names the statuses seen, for an unverified reason.
func seenSummary(st watchState) string {
	var parts []string
	for _, r := range submitRequests(st) {
		switch {
		case r.failed != "":
			parts = append(parts, r.method+" "+pathOf(r.url)+" failed")
		case r.status != 0:
			parts = append(parts, fmt.Sprintf("%s %s → %d", r.method, pathOf(r.url), r.status))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (seen: " + strings.Join(parts, ", ") + ")"
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}
