package browser

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestWaitForEachKind(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name         string
		cond         Condition
		wantMatched  bool
		wantObserved string
	}{
		{"page text contains", Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "contains", Value: "Ready   now"}}, true, ""},
		{"body css target is page level", Condition{Kind: WaitText, Target: &NodeRef{Selector: "body"}, Matcher: &TextMatch{Kind: "contains", Value: "late element"}}, true, ""},
		{"element text exact", Condition{Kind: WaitText, Target: &NodeRef{Selector: "#msg"}, Matcher: &TextMatch{Kind: "exact", Value: "Ready now"}}, true, ""},
		{"element value", Condition{Kind: WaitValue, Target: &NodeRef{Selector: "#field"}, Matcher: &TextMatch{Kind: "exact", Value: "filled-late"}}, true, ""},
		{"page-level value reads body text", Condition{Kind: WaitValue, Matcher: &TextMatch{Kind: "regex", Value: `Ready\s+now`}}, true, ""},
		{"url regex", Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "regex", Value: `mutate\.html\?gate=[\w-]+#done$`}}, true, ""},
		{"document complete", Condition{Kind: WaitDocument}, true, "complete"},
		{"document interactive is satisfied by complete", Condition{Kind: WaitDocument, ReadyState: "interactive"}, true, "complete"},
		{"element appears", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#late"}}, true, "visible"},
		{"element present", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#late"}, State: ElementPresent}, true, "visible"},
		{"element hides", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#spinner"}, State: ElementHidden}, true, "hidden"},
		{"absent element is hidden", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#never"}, State: ElementHidden}, true, "absent"},
		{"network quiet", Condition{Kind: WaitNetworkQuiet, IdleMs: 100}, true, ""},
		{"text timeout", Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "contains", Value: "never shown"}, TimeoutMs: 300}, false, ""},
		{"element timeout", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#never"}, TimeoutMs: 300}, false, "absent"},
	}
	p := testPage(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh load each time: the page changes only when its gate
			// opens, which happens once the wait is under way, so the wait
			// starts before its condition holds however loaded the machine.
			name := "wait-" + strconv.Itoa(i)
			open(t, p, "/mutate.html?gate="+name)
			if got := eval[string](t, p, `document.getElementById("msg").textContent`); got != "Loading…" {
				t.Fatalf("page already mutated before the wait (%q): the test proves nothing", got)
			}
			go func() {
				time.Sleep(200 * time.Millisecond) // lets WaitFor begin; its order, not its speed, matters
				openGate(name)
			}()
			res, err := p.WaitFor(ctx, tt.cond)
			if err != nil {
				t.Fatalf("WaitFor: %v", err)
			}
			if res.Matched != tt.wantMatched || res.TimedOut == tt.wantMatched || res.Kind != tt.cond.Kind {
				t.Errorf("WaitFor = %+v, want matched %v", res, tt.wantMatched)
			}
			if tt.wantObserved != "" && res.Observed != tt.wantObserved {
				t.Errorf("observed = %q, want %q", res.Observed, tt.wantObserved)
			}
		})
	}
}

func TestWaitNetworkQuietOnSlowEndpoint(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/slow.html")
	if _, err := p.Click(ctx, NodeRef{Selector: "#fetch"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	// The request sleeps 400 ms: too long for a 150 ms wait.
	res, err := p.WaitFor(ctx, Condition{Kind: WaitNetworkQuiet, IdleMs: 50, TimeoutMs: 150})
	if err != nil || res.Matched || !res.TimedOut {
		t.Fatalf("short networkQuiet wait = %+v, %v; want a timeout while /slow is pending", res, err)
	}
	if n := p.State().PendingRequests; n != 1 {
		t.Errorf("pending_requests = %d while /slow is in flight, want 1", n)
	}
	res, err = p.WaitFor(ctx, Condition{Kind: WaitNetworkQuiet, IdleMs: 100})
	if err != nil || !res.Matched {
		t.Fatalf("networkQuiet wait = %+v, %v", res, err)
	}
	if n := p.State().PendingRequests; n != 0 {
		t.Errorf("pending_requests = %d after quiet, want 0", n)
	}
	// Quiet came after the response: the page already shows it.
	if got := eval[string](t, p, `document.getElementById("out").textContent`); got != "slow done" {
		t.Errorf("out = %q after networkQuiet, want the slow response", got)
	}
}

func TestWaitForRejectsBadConditions(t *testing.T) {
	p := testPage(t)
	tests := []struct {
		name string
		cond Condition
	}{
		{"unknown kind", Condition{Kind: "vibes"}},
		{"text without matcher", Condition{Kind: WaitText}},
		{"bad matcher kind", Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "fuzzy", Value: "x"}}},
		{"bad regex", Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "regex", Value: "("}}},
		{"url with target", Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "exact", Value: "x"}, Target: &NodeRef{Selector: "a"}}},
		{"element without target", Condition{Kind: WaitElement}},
		{"element bad state", Condition{Kind: WaitElement, Target: &NodeRef{Selector: "a"}, State: "shiny"}},
		{"document bad state", Condition{Kind: WaitDocument, ReadyState: "done"}},
		{"negative timeout", Condition{Kind: WaitDocument, TimeoutMs: -1}},
		{"huge timeout", Condition{Kind: WaitDocument, TimeoutMs: 1 << 30}},
		{"negative idle", Condition{Kind: WaitNetworkQuiet, IdleMs: -5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.WaitFor(context.Background(), tt.cond); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("WaitFor = %v, want ErrInvalidArgument", err)
			}
		})
	}
	// A backend node that left the document never comes back: no polling
	// until the timeout.
	open(t, p, "/mutate.html")
	id := backendOf(t, p, "#msg")
	eval[any](t, p, `document.getElementById("msg").remove(); null`)
	_, err := p.WaitFor(context.Background(), Condition{Kind: WaitText, Target: &NodeRef{BackendNodeID: id}, Matcher: &TextMatch{Kind: "contains", Value: "x"}})
	if !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("WaitFor on removed node = %v, want ErrNodeNotFound", err)
	}
	if _, err := p.Click(context.Background(), NodeRef{BackendNodeID: id}, ClickOptions{}); !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("Click on removed node = %v, want ErrNodeNotFound", err)
	}
}

func TestTextMatch(t *testing.T) {
	tests := []struct {
		m       TextMatch
		s       string
		want    bool
		wantErr bool
	}{
		{TextMatch{"exact", "Hello world"}, "  Hello\n\tworld ", true, false},
		{TextMatch{"exact", "Hello"}, "Hello world", false, false},
		{TextMatch{"contains", "lo  wo"}, "Hello world", true, false},
		{TextMatch{"contains", ""}, "anything", true, false},
		{TextMatch{"regex", `^\d{3}$`}, "123", true, false},
		{TextMatch{"regex", `^\d{3}$`}, "1234", false, false},
		{TextMatch{"regex", `[`}, "", false, true},
		{TextMatch{"Exact", "x"}, "x", false, true},
		{TextMatch{"", "x"}, "x", false, true},
	}
	for _, tt := range tests {
		f, err := tt.m.Matcher()
		if (err != nil) != tt.wantErr {
			t.Errorf("%+v.Matcher() error = %v, want error %v", tt.m, err, tt.wantErr)
			continue
		}
		if err == nil && f(tt.s) != tt.want {
			t.Errorf("%+v matches %q = %v, want %v", tt.m, tt.s, !tt.want, tt.want)
		}
	}
}

func TestPageLevelTargets(t *testing.T) {
	for _, r := range []string{"main", "RootWebArea", "document", "application", "generic", "body", " MAIN "} {
		if !PageLevelRole(r) {
			t.Errorf("PageLevelRole(%q) = false", r)
		}
	}
	for _, r := range []string{"button", "link", "", "region"} {
		if PageLevelRole(r) {
			t.Errorf("PageLevelRole(%q) = true", r)
		}
	}
	for _, s := range []string{"body", "html", ":root", "HTML"} {
		if !PageLevelCSS(s) {
			t.Errorf("PageLevelCSS(%q) = false", s)
		}
	}
	if PageLevelCSS("body > main") {
		t.Error(`PageLevelCSS("body > main") = true`)
	}
}
