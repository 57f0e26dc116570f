package browser

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExtractContentShapes(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/extract.html")
	x := func(sel string, max int) Extraction {
		t.Helper()
		var ref *NodeRef
		if sel != "" {
			ref = &NodeRef{Selector: sel}
		}
		e, err := p.ExtractContent(ctx, ref, max)
		if err != nil {
			t.Fatalf("ExtractContent(%q): %v", sel, err)
		}
		return e
	}
	if e := x("#prices", 0); e.Kind != ExtractTable || !reflect.DeepEqual(e.Headers, []string{"Plan", "Price"}) ||
		!reflect.DeepEqual(e.Rows, [][]string{{"Solo", "$5"}, {"Team", "$20"}}) || e.Total != 2 {
		t.Errorf("table = %+v", e)
	}
	if e := x("#features", 2); e.Kind != ExtractList || len(e.Items) != 2 || e.Total != 3 || !e.Truncated ||
		e.Items[1].Text != "Private more" || !strings.HasSuffix(e.Items[1].Href, "/home.html") {
		t.Errorf("list = %+v", e)
	}
	if e := x("#cards", 0); e.Kind != ExtractList || len(e.Items) != 3 || e.Items[2].Text != "Chair View" || !strings.HasSuffix(e.Items[2].Href, "/p/chair") {
		t.Errorf("cards = %+v", e)
	}
	e := x("#about", 0)
	if e.Kind != ExtractText || !strings.Contains(e.Text, "We sell furniture.") || len(e.Links) != 1 || strings.Contains(e.Text, "hunter2") {
		t.Errorf("text = %+v", e)
	}
	if _, err := p.ExtractContent(ctx, nil, MaxExtractItems+1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("maxItems over the bound = %v", err)
	}
}

func TestWaitStateAllAtOnce(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/extract.html")
	res, err := p.WaitState(ctx, []StateCondition{
		{Condition: Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "exact", Value: "done"}, Target: &NodeRef{Selector: "#status"}}},
		{Condition: Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "contains", Value: "step=done"}}},
		{Condition: Condition{Kind: WaitElement, Target: &NodeRef{Selector: "#spinner"}, State: ElementHidden}},
		{Condition: Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "contains", Value: "working"}}, Not: true},
		{Condition: Condition{Kind: WaitNetworkQuiet, IdleMs: 100}},
	}, 10*time.Second)
	if err != nil || !res.Matched || len(res.Conditions) != 5 {
		t.Fatalf("WaitState = %+v, %v", res, err)
	}
	// A state that never comes is a result, with the part that failed. The
	// timeout leaves each probe room on a loaded machine (a probe cut short
	// by the deadline counts as "not yet"); what is asserted is the outcome,
	// not how fast it came.
	res, err = p.WaitState(ctx, []StateCondition{
		{Condition: Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "contains", Value: "step=done"}}},
		{Condition: Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "contains", Value: "never there"}}},
	}, 3*time.Second)
	if err != nil || res.Matched || !res.TimedOut || len(res.Conditions) != 2 || !res.Conditions[0].Matched ||
		!strings.Contains(res.Conditions[0].Observed, "step=done") || res.Conditions[1].Matched {
		t.Errorf("unreachable state = %+v, %v", res, err)
	}
	if _, err := p.WaitState(ctx, nil, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no conditions = %v", err)
	}
	if _, err := p.WaitState(ctx, []StateCondition{{Condition: Condition{Kind: WaitURL}}}, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("url without matcher = %v", err)
	}
}
