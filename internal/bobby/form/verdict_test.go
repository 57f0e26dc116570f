package form

import (
	"strings"
	"testing"
)

// TestJudge pins the verdict rules without a browser.
func TestJudge(t *testing.T) {
	doc := func(status int64) seenRequest {
		return seenRequest{method: "POST", url: "http://h/x?secret=1", typ: "Document", status: status, done: true}
	}
	fetch := func(status int64, failed string) seenRequest {
		return seenRequest{method: "POST", url: "http://h/api?q=typed", typ: "Fetch", status: status, failed: failed, done: true}
	}
	img := seenRequest{method: "GET", url: "http://h/p.png", typ: "Image", status: 404, done: true}
	alert := Issue{Constraint: "pageAlert", Message: "Could not send"}
	invalid := Issue{Constraint: "ariaInvalid", Name: "email"}
	leftover := Issue{Constraint: "ariaInvalid", Name: "phone", stale: true}
	for _, tt := range []struct {
		name   string
		f      facts
		status string
		says   string
		issues int // how many of the page's issues the result carries
	}{
		{"navigation to a 200 page", facts{st: watchState{navigated: true, seen: []seenRequest{doc(200)}}}, SubmitVerified, "", 0},
		{"navigation to a 500 page", facts{st: watchState{navigated: true, seen: []seenRequest{doc(500)}}}, SubmitUnverified, "HTTP 500", 0},
		{"fetch 200", facts{st: watchState{seen: []seenRequest{fetch(200, "")}}}, SubmitVerified, "", 0},
		{"fetch 200, subresource 404 ignored", facts{st: watchState{seen: []seenRequest{fetch(200, ""), img}}}, SubmitVerified, "", 0},
		{"fetch 422 with the page's alert", facts{st: watchState{seen: []seenRequest{fetch(422, "")}}, issues: []Issue{alert}}, SubmitUnverified, "/api answered HTTP 422", 1},
		{"fetch failed", facts{st: watchState{seen: []seenRequest{fetch(0, "net::ERR_CONNECTION_REFUSED")}}}, SubmitUnverified, "failed (net::ERR_CONNECTION_REFUSED)", 0},
		{"fetch 200 but fields marked invalid", facts{st: watchState{seen: []seenRequest{fetch(200, "")}}, issues: []Issue{invalid}}, SubmitBlocked, "marked 1 field(s) invalid", 1},
		{"fetch 200, a mark left from before", facts{st: watchState{seen: []seenRequest{fetch(200, "")}}, issues: []Issue{leftover}}, SubmitVerified, "", 0},
		{"fetch 422, a mark left from before", facts{st: watchState{seen: []seenRequest{fetch(422, "")}}, issues: []Issue{leftover}}, SubmitUnverified, "answered HTTP 422", 0},
		{"a mark left from before, nothing sent", facts{issues: []Issue{leftover}}, SubmitBlocked, "still marks 1 field(s) invalid and sent nothing", 1},
		{"a mark left from before, fragment change", facts{st: watchState{sameDocument: true}, issues: []Issue{leftover}}, SubmitUnverified, "fragment changed", 0},
		{"a new mark beside a leftover", facts{issues: []Issue{leftover, invalid}}, SubmitBlocked, "marked 1 field(s) invalid", 1},
		{"page alert, nothing sent", facts{issues: []Issue{alert}}, SubmitBlocked, "sent nothing", 1},
		{"fragment change only", facts{st: watchState{sameDocument: true}}, SubmitUnverified, "fragment changed", 0},
		{"nothing at all", facts{}, SubmitUnverified, "no navigation and no network request", 0},
		{"expectation holds: it decides", facts{expect: true, st: watchState{seen: []seenRequest{fetch(500, "")}}}, SubmitVerified, "", 0},
		{"expectation fails: what was seen", facts{expect: true, expectFailed: "the page text does not contain the expected text", st: watchState{seen: []seenRequest{fetch(500, "")}}, issues: []Issue{alert, leftover}}, SubmitUnverified, "POST /api → 500", 1},
		{"timed out navigating", facts{timedOut: true, st: watchState{navRequested: true}}, SubmitUnverified, "did not finish", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, reason, issues := judge(tt.f)
			if status != tt.status || !strings.Contains(reason, tt.says) || len(issues) != tt.issues {
				t.Errorf("judge = %s %q issues=%+v; want %s saying %q with %d issue(s)", status, reason, issues, tt.status, tt.says, tt.issues)
			}
			if strings.Contains(reason, "secret=1") || strings.Contains(reason, "q=typed") {
				t.Errorf("the reason carries a query string: %q", reason)
			}
		})
	}
}

func TestResponsesDropQueries(t *testing.T) {
	st := watchState{seen: []seenRequest{{method: "GET", url: "http://h/s?email=ada%40x#top", typ: "Document", status: 200}}}
	if got := responses(st); len(got) != 1 || got[0].URL != "http://h/s" || got[0].Status != 200 {
		t.Errorf("responses = %+v", got)
	}
}
