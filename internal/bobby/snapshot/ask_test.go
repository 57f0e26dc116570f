package snapshot

import (
	"fmt"
	"testing"
)

// askPage is a retained snapshot as an agent would have taken it.
var askPage = &Snapshot{Nodes: []Node{
	{Ref: "e1", Role: "button", Name: "Checkout"},
	{Ref: "e2", Role: "link", Name: "Checkout"},
	{Ref: "e3", Role: "textbox", Name: "Email address"},
	{Ref: "e4", Role: "textbox", Name: "Password", HasValue: true},
	{Ref: "e5", Role: "button", Name: "Remove Blue mug"},
	{Ref: "e6", Role: "button", Name: "Remove Red mug"},
	{Ref: "e7", Role: "button", Name: "Add to wishlist"},
	{Ref: "e8", Role: "button", Name: "Add to wishlist"},
	{Ref: "e9", Role: "checkbox", Name: "Gift wrap extra service"},
	{Ref: "e10", Role: "heading", Name: "Your cart", Level: 1},
	{Ref: "e11", Role: "searchbox", Name: "Search"},
	{Ref: "e12", Role: "button", Name: "Search"},
	{Ref: "e13", Role: "combobox", Name: "Country"},
	{Role: "text", Name: "Shipping address"},
}}

func TestAsk(t *testing.T) {
	for _, tt := range []struct {
		question string
		wantRef  string // "" = no answer
		wantConf float64
	}{
		{"the checkout button", "e1", 1},
		{"Where is the checkout link?", "e2", 1},
		{"email field", "e3", 0.8},
		{"the EMAIL input", "e3", 0.8},
		{"password box", "e4", 1},
		{"remove blue mug", "e5", 0.9},
		{"the search button", "e12", 1},
		{"search field", "e11", 1},
		{"country dropdown", "e13", 1},
		{"your cart heading", "e10", 1},
		// Two equally good controls: refuse to guess.
		{"add to wishlist button", "", 0},
		{"remove button", "", 0},
		{"search", "", 0},
		// Partial: a content word matches nothing.
		{"shipping address field", "", 0},
		{"checkout button for guests", "", 0},
		// Below the confidence floor: the wrong role and one word of four.
		{"wrap button", "", 0},
		// Nothing to match.
		{"", "", 0},
		{"the", "", 0},
		{"button", "", 0},
	} {
		t.Run(tt.question, func(t *testing.T) {
			got, ok := Ask(askPage, tt.question)
			if tt.wantRef == "" {
				if ok {
					t.Fatalf("Ask(%q) = %+v, want no answer", tt.question, got)
				}
				return
			}
			if !ok {
				t.Fatalf("Ask(%q) gave no answer, want %s", tt.question, tt.wantRef)
			}
			if got.Ref != tt.wantRef || got.Target.Ref != tt.wantRef || got.Confidence != tt.wantConf {
				t.Errorf("Ask(%q) = %+v, want %s at %.2f", tt.question, got, tt.wantRef, tt.wantConf)
			}
			if got.Confidence < ConfidenceFloor || got.Target.Role == "" || got.Target.Name == "" {
				t.Errorf("answer %+v is not a usable target above the floor", got)
			}
		})
	}
	if _, ok := Ask(nil, "checkout"); ok {
		t.Error("Ask(nil) answered")
	}
}

func TestRetained(t *testing.T) {
	r := NewRetained()
	if _, ok := r.Ask("p1", "the checkout button"); ok {
		t.Fatal("empty Retained answered")
	}
	r.Put("p1", askPage)
	if a, ok := r.Ask("p1", "the checkout button"); !ok || a.Ref != "e1" {
		t.Fatalf("Ask after Put = %+v, %v", a, ok)
	}
	if _, ok := r.Ask("p2", "the checkout button"); ok {
		t.Error("another page answered from p1's snapshot")
	}
	r.Invalidate("p1")
	if _, ok := r.Get("p1"); ok {
		t.Error("Get returned an invalidated snapshot")
	}
	if _, ok := r.Ask("p1", "the checkout button"); ok {
		t.Error("Ask answered from an invalidated snapshot")
	}
	r.Put("p1", askPage)
	if _, ok := r.Get("p1"); !ok {
		t.Error("Put did not make the page valid again")
	}
	r.Forget("p1")
	if _, ok := r.Get("p1"); ok {
		t.Error("Get returned a forgotten page")
	}

	r.MaxPages = 3
	for i := range 5 {
		r.Put(fmt.Sprintf("page%d", i), askPage)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := r.Get(fmt.Sprintf("page%d", i)); ok != want {
			t.Errorf("page%d kept=%v, want %v (oldest evicted first)", i, ok, want)
		}
	}
	r.Put("nil", nil)
	if _, ok := r.Get("nil"); ok {
		t.Error("a nil snapshot was stored")
	}
}

func TestRetainedConcurrent(t *testing.T) {
	r := NewRetained()
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			id := fmt.Sprintf("p%d", g%2)
			for range 200 {
				r.Put(id, askPage)
				r.Ask(id, "checkout button")
				r.Invalidate(id)
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func FuzzAsk(f *testing.F) {
	for _, q := range []string{"the checkout button", "email field", "", "ÉMAIL ☃ field", "remove   blue\tmug", "buttons boxes addresses"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		a, ok := Ask(askPage, q)
		if ok && (a.Confidence < ConfidenceFloor || a.Confidence > 1 || a.Ref == "" || a.Target.Ref != a.Ref) {
			t.Fatalf("Ask(%q) = %+v", q, a)
		}
	})
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"e1", "e123456", "e0", "e-1", "x1", "e", "", "e9999999999999999999", "e12abc", "e012", "e+12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseRef(s)
		if err != nil {
			return
		}
		if id <= 0 || RefOf(id) != s {
			t.Fatalf("ParseRef(%q) = %d, which renders as %s", s, id, RefOf(id))
		}
		if back, err := ParseRef(RefOf(id)); err != nil || back != id {
			t.Fatalf("round trip of %d: %d, %v", id, back, err)
		}
	})
}

func FuzzTargetValidate(f *testing.F) {
	f.Add("e12", "button", "Save", "", 0)
	f.Add("", "", "", "iframe#a >> input", -1)
	f.Add("", "", "", ">>", 2)
	f.Add("bad", "", "", "#x", 0)
	f.Fuzz(func(t *testing.T, ref, role, name, sel string, idx int) {
		tg := Target{Ref: ref, Role: role, Name: name, Selector: sel}
		if idx != 0 {
			tg.Index = &idx
		}
		_ = tg.Validate() // must not panic
		_ = tg.String()
	})
}

func FuzzDecodeSelectorResult(f *testing.F) {
	f.Add([]byte(`[["els",{"type":"array","value":[{"type":"node","value":{"backendNodeId":7}}]}],["total",{"type":"number","value":1}]]`))
	f.Add([]byte(`[["invalid",{"type":"string","value":"bad"}]]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"x":1}`))
	f.Add([]byte(`[["els",{"type":"array","value":7}]]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = decodeSelectorResult(raw)
	})
}

func TestDecodeSelectorResult(t *testing.T) {
	got, err := decodeSelectorResult([]byte(`[["frame",{"type":"node","value":{"backendNodeId":3}}],["total",{"type":"number","value":2}],` +
		`["els",{"type":"array","value":[{"type":"node","value":{"backendNodeId":7}},{"type":"node","value":{"backendNodeId":9}}]}]]`))
	if err != nil || got.total != 2 || len(got.ids) != 2 || got.ids[1] != 9 || got.frame != 3 {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	if _, err := decodeSelectorResult([]byte(`{"not":"pairs"}`)); err == nil {
		t.Error("decoding an object succeeded")
	}
}
