package snapshot

import (
	"strings"
	"testing"
)

func TestParseDescribe(t *testing.T) {
	raw := `{"next":12,"nodes":[{"id":4,"r":"textbox","n":"Coupon"},null,{"id":7},{"id":9,"r":"Date","n":"  Birthday  "},{"id":10,"r":"Iframe","n":"Promo"}]}`
	ds, next, err := ParseDescribe([]byte(raw), []string{"", "", "", "", "ctx-1"})
	if err != nil {
		t.Fatal(err)
	}
	if next != 12 || len(ds) != 5 {
		t.Fatalf("next %d, %d entries", next, len(ds))
	}
	if d := ds[0]; d.Ref != "e4" || d.Node == nil || d.Node.Role != "textbox" || d.Node.Name != "Coupon" || d.Node.Ref != "e4" {
		t.Errorf("shown element = %+v %+v", d, d.Node)
	}
	if ds[1] != (Described{}) {
		t.Errorf("no element = %+v", ds[1])
	}
	if d := ds[2]; d.Ref != "e7" || d.Node != nil {
		t.Errorf("hidden element = %+v", d)
	}
	// Roles and names render as a snapshot renders them.
	if n := ds[3].Node; n == nil || n.Role != "date" || n.Name != "Birthday" {
		t.Errorf("date input = %+v", n)
	}
	if d := ds[4]; d.Frame != "ctx-1" || d.Node == nil || d.Node.Role != "iframe" {
		t.Errorf("iframe = %+v", d)
	}
	for _, bad := range []string{``, `[]`, `{"nodes":{}}`, `{"nodes":[{"id":"x"}]}`} {
		if _, _, err := ParseDescribe([]byte(bad), nil); err == nil {
			t.Errorf("ParseDescribe(%q) succeeded", bad)
		}
	}
}

func FuzzParseDescribe(f *testing.F) {
	f.Add([]byte(`{"next":3,"nodes":[{"id":1,"r":"button","n":"Go"},null,{"id":2}]}`), 1)
	f.Add([]byte(`{"nodes":[{"id":-4,"r":""}]}`), 0)
	f.Add([]byte(`null`), 3)
	f.Fuzz(func(t *testing.T, raw []byte, frames int) {
		fr := make([]string, max(0, min(frames, 8)))
		ds, _, err := ParseDescribe(raw, fr)
		if err != nil {
			return
		}
		for _, d := range ds {
			if d.Ref != "" {
				if _, err := ParseRef(d.Ref); err != nil {
					t.Fatalf("entry ref %q does not parse: %v", d.Ref, err)
				}
			}
			if d.Node != nil && d.Node.Ref != d.Ref {
				t.Fatalf("node ref %q beside entry ref %q", d.Node.Ref, d.Ref)
			}
		}
	})
}

// TestFirefoxDescribeAgreesWithWalk: the describe op hands an exposed
// element the ref, role and name a walk shows for it, gives a hidden one a
// ref of its own (no node), and names an iframe's browsing context.
func TestFirefoxDescribeAgreesWithWalk(t *testing.T) {
	p := ffOpen(t, allFixtures().URL+"/page.html")
	s := p.take(t, Options{})
	fn := `function(base) {
  const w = ` + WalkFunction() + `;
  const hidden = document.createElement('input');
  hidden.style.display = 'none';
  document.body.append(hidden);
  const els = [document.getElementById('coupon'), document.getElementById('host').shadowRoot.getElementById('shadow-btn'),
    document.getElementById('promo'), hidden, document.getElementById('promo').contentDocument.getElementById('promo-code')];
  return w('describe', {base, els});
}`
	v, err := p.b.CallFunctionIn(ffCtx(t), p.bc, sandbox, fn, p.next)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := v.Field("json")
	raw, _ := js.Decode()
	text, _ := raw.(string)
	fr, _ := v.Field("frames")
	var frames []string
	for _, f := range fr.Items() {
		frames = append(frames, f.WindowContext())
	}
	ds, next, err := ParseDescribe([]byte(text), frames)
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string]Node{}
	for _, n := range s.Nodes {
		byRef[n.Ref] = n
	}
	for i, want := range []struct{ role, name string }{{"textbox", "Coupon"}, {"button", "Shadow action"}, {"iframe", "Promotions"}, {}, {"textbox", "Promo code"}} {
		d := ds[i]
		if want.role == "" {
			if d.Ref == "" || d.Node != nil || byRef[d.Ref].Ref != "" || next <= p.next {
				t.Errorf("hidden element = %+v (next %d after %d)", d, next, p.next)
			}
			continue
		}
		n, ok := byRef[d.Ref]
		if d.Node == nil || !ok || d.Node.Role != want.role || d.Node.Name != want.name || n.Role != want.role || n.Name != want.name {
			t.Errorf("element %d = %+v %+v, snapshot has %+v; want %s %q", i, d, d.Node, n, want.role, want.name)
		}
	}
	if ds[2].Frame == "" || !strings.Contains(s.Text, `iframe "Promotions" [ref=`+ds[2].Ref+`]`) {
		t.Errorf("iframe entry = %+v", ds[2])
	}
}

// TestFirefoxRefsNeverRestartAfterALocate: a stale ref looked up on a new
// document (a locate before any walk) finds nothing and leaves the
// numbering to the next walk's base, so the new document's refs never
// reuse the old one's.
func TestFirefoxRefsNeverRestartAfterALocate(t *testing.T) {
	p := ffOpen(t, allFixtures().URL+"/page.html")
	p.take(t, Options{})
	if p.next < 10 {
		t.Fatalf("the first document handed out only %d refs", p.next-1)
	}
	p.navigate(t, allFixtures().URL+"/frame.html")
	if l := p.locate(t, "e3"); l.Found {
		t.Fatalf("a stale ref found %+v on the new document", l)
	}
	base := p.next
	s := p.take(t, Options{})
	for _, n := range s.Nodes {
		if n.Ref == "" {
			continue
		}
		id, err := ParseRef(n.Ref)
		if err != nil || int64(id) < base {
			t.Errorf("%s %q got ref %s, below the base %d of the new document", n.Role, n.Name, n.Ref, base)
		}
	}
}
