package cli

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The demo shop as a browser sees it: the catalog, a search (one hit goes
// to its page, none says so, the query is shown escaped), a product page
// with its hidden form field, and the answer page echoing the question
// escaped with a ticket; the question is recorded.
func TestDemoShopPages(t *testing.T) {
	ctx := context.Background()
	s, err := startDemoShop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(ctx) }()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := noRedirect.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	tent := s.products[0]

	code, _, page := get("/")
	for _, p := range s.products {
		if li := `<li><a href="/product/` + p.Slug + `">` + p.Name + `</a> <span>` + p.Price + `</span></li>`; !strings.Contains(page, li) {
			t.Errorf("catalog lacks %s", li)
		}
	}
	if code != 200 || strings.Contains(page, "{{") {
		t.Fatalf("catalog %d:\n%s", code, page)
	}

	if code, loc, _ := get("/search?q=ridge+TENT"); code != http.StatusSeeOther || loc != "/product/ridge-tent" {
		t.Errorf("a one-hit search: %d to %q, want 303 to the tent", code, loc)
	}
	code, _, page = get("/search?q=" + url.QueryEscape(`<script>x</script>`))
	if code != 200 || !strings.Contains(page, "Search results for “&lt;script&gt;x&lt;/script&gt;”") || !strings.Contains(page, "Nothing matches.") || strings.Contains(page, "<script>") {
		t.Errorf("a search with no hit and markup in the query:\n%s", page)
	}
	code, _, page = get("/search?q=e")
	if code != 200 || strings.Count(page, "<li>") != 3 || !strings.Contains(page, "<ul>\n<li>") || strings.Contains(page, "Nothing matches") {
		t.Errorf("a search matching every product:\n%s", page)
	}

	code, _, page = get("/product/" + tent.Slug)
	for _, want := range []string{"<title>Ridge Tent — Otter Outfitters</title>", "<h1>Ridge Tent</h1>", "Price: " + tent.Price, "SKU: " + tent.SKU,
		`<input type="hidden" name="product" value="ridge-tent">`} {
		if !strings.Contains(page, want) {
			t.Errorf("product page lacks %q", want)
		}
	}
	if code != 200 {
		t.Errorf("product page %d", code)
	}
	if code, _, _ := get("/product/nope"); code != http.StatusNotFound {
		t.Errorf("unknown product: %d, want 404", code)
	}

	resp, err := http.PostForm(s.url+"/ask", url.Values{"product": {tent.Slug}, "email": {"a@b.example"}, "q": {`Is it <b>waterproof</b> & "light"? {{ticket}}`}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page = string(b)
	asked := s.questions()
	if resp.StatusCode != 200 || len(asked) != 1 || asked[0].Product != "Ridge Tent" {
		t.Fatalf("ask: %d, recorded %+v", resp.StatusCode, asked)
	}
	for _, want := range []string{"About: Ridge Tent", "You asked: Is it &lt;b&gt;waterproof&lt;/b&gt; &amp; &#34;light&#34;? {{ticket}}",
		"We will answer at: a@b.example", "Ticket: " + asked[0].Ticket} {
		if !strings.Contains(page, want) {
			t.Errorf("answer page lacks %q:\n%s", want, page)
		}
	}
	resp, err = http.PostForm(s.url+"/ask", url.Values{"product": {"nope"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("ask about an unknown product: %d, want 400", resp.StatusCode)
	}
}
