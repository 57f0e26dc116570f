package snapshot

import (
	"errors"
	"strings"
	"testing"
)

func TestParseWalkRendersLikeTheTree(t *testing.T) {
	raw := `{"next":9,"root":{"r":"RootWebArea","n":"Shop","p":{"url":"http://x/"},"c":[
		{"r":"navigation","id":1,"n":"Primary","c":[{"r":"link","id":2,"n":"Home","p":{"url":"http://x/home"},"c":[{"r":"StaticText","n":"Home"}]}]},
		{"r":"LabelText","id":3,"c":[{"r":"StaticText","n":"Coupon "},{"r":"textbox","id":4,"n":"Coupon","v":"SAVE10","l":[3]}]},
		{"r":"textbox","id":5,"n":"Password","v":"\u2022"},
		{"r":"Iframe","id":6,"n":"Promo","f":0,"g":true,"c":[{"r":"button","id":7,"n":"Apply"}]},
		{"r":"Iframe","id":8,"n":"Ads","f":1}
	]}}`
	w, err := ParseWalk([]byte(raw), []string{"ctx-1", "ctx-2"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Next != 9 {
		t.Errorf("next = %d", w.Next)
	}
	s, err := w.Snapshot(Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "navigation \"Primary\"\n" +
		"  link \"Home\" [ref=e2]\n" +
		"textbox \"Coupon\" [ref=e4]: \"SAVE10\"\n" +
		"textbox \"Password\" [hasValue] [ref=e5]\n" +
		"iframe \"Promo\" [ref=e6]\n" +
		"  button \"Apply\" [ref=e7]\n" +
		"iframe \"Ads\" [ref=e8]\n"
	if s.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", s.Text, want)
	}
	if s.Title != "Shop" || s.URL != "http://x/" || s.SkippedFrames != 1 {
		t.Errorf("title %q url %q skipped %d", s.Title, s.URL, s.SkippedFrames)
	}
	if n, _ := s.Find("e7"); n.FrameID != "ctx-1" {
		t.Errorf("frame of the grafted button = %q", n.FrameID)
	}
	if n, _ := s.Find("e2"); n.URL != "http://x/home" {
		t.Errorf("link url %q", n.URL)
	}
	if ref, err := w.Pick(Target{Role: "button", Name: "apply"}); err != nil || ref.Ref() != "e7" || ref.FrameID != "ctx-1" {
		t.Errorf("pick = %+v, %v", ref, err)
	}
	if _, err := w.Snapshot(Options{Target: &Target{Ref: "e99"}}); !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("scope to an unknown ref: %v", err)
	}
}

func TestParseWalkRefusesMalformedInput(t *testing.T) {
	for _, raw := range []string{``, `[]`, `{"root":null}`, `{"root":{"r":"x","id":-1}}`, `{"root":{"c":[{"c":"no"}]}}`} {
		if _, err := ParseWalk([]byte(raw), nil); err == nil {
			t.Errorf("ParseWalk(%q) accepted", raw)
		}
	}
	if _, err := ParseLocation([]byte(`{"found":`)); err == nil {
		t.Error("ParseLocation accepted a cut document")
	}
	l := Location{Found: true, Connected: true, Role: "textbox"}
	if err := l.Check(Target{Ref: "e1", Role: "button"}); !errors.Is(err, ErrTargetNotFound) || !strings.Contains(err.Error(), "textbox") {
		t.Errorf("role changed: %v", err)
	}
	if err := (Location{}).Check(Target{Ref: "e1"}); !errors.Is(err, ErrTargetNotFound) {
		t.Errorf("unknown ref: %v", err)
	}
}

func FuzzParseWalk(f *testing.F) {
	f.Add([]byte(`{"next":3,"root":{"r":"RootWebArea","c":[{"r":"button","id":1,"n":"Go"},{"r":"Iframe","id":2,"f":0}]}}`))
	f.Add([]byte(`{"root":{"r":"StaticText","n":"x","f":-4}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		w, err := ParseWalk(raw, []string{"a"})
		if err != nil {
			return
		}
		if _, err := w.Snapshot(Options{}); err != nil {
			t.Fatalf("a parsed walk does not render: %v", err)
		}
	})
}
