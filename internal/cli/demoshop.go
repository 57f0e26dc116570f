package cli

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"html"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

//go:embed demoshop/*.html
var demoShopPages embed.FS

// shopProduct is one product of the demo shop. Prices and SKUs are drawn
// at random per run, so only the live pages can tell them.
type shopProduct struct{ Slug, Name, Price, SKU string }

// shopQuestion is one question the shop's form received.
type shopQuestion struct{ Product, Email, Question, Ticket string }

// demoShop is the fixture site `delta demo --browse` serves on loopback: a
// catalog with a search form (a search naming exactly one product goes
// straight to its page), a page per product with a question form, and the
// answer page that echoes the question with a ticket number it makes up.
type demoShop struct {
	srv      *http.Server
	url      string
	products []shopProduct
	pages    map[string]string // file name → page with {{name}} placeholders

	mu    sync.Mutex
	asked []shopQuestion
}

func randomInt(n int64) int64 {
	v, _ := rand.Int(rand.Reader, big.NewInt(n)) // crypto/rand never fails on Linux
	return v.Int64()
}

func shopPrice() string { return fmt.Sprintf("$%d.%02d", 20+randomInt(480), randomInt(100)) }

// startDemoShop serves the shop on a free loopback port until Close; ctx
// bounds the listen only.
func startDemoShop(ctx context.Context) (*demoShop, error) {
	pages, err := loadShopPages()
	if err != nil {
		return nil, err
	}
	s := &demoShop{pages: pages, products: []shopProduct{
		{"ridge-tent", "Ridge Tent", shopPrice(), fmt.Sprintf("RT-%06d", randomInt(1e6))},
		{"trail-kayak-paddle", "Trail Kayak Paddle", shopPrice(), fmt.Sprintf("TKP-%06d", randomInt(1e6))},
		{"otter-dry-bag", "Otter Dry Bag", shopPrice(), fmt.Sprintf("ODB-%06d", randomInt(1e6))},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, "index.html", "items", productItems(s.products))
	})
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /product/{slug}", func(w http.ResponseWriter, r *http.Request) {
		if p, ok := s.product(r.PathValue("slug")); ok {
			s.render(w, "product.html", "name", html.EscapeString(p.Name), "price", html.EscapeString(p.Price),
				"sku", html.EscapeString(p.SKU), "slug", html.EscapeString(p.Slug))
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("POST /ask", s.ask)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo shop: listen: %w", err)
	}
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }() // ends with ErrServerClosed at Close
	return s, nil
}

// loadShopPages reads the embedded pages.
func loadShopPages() (map[string]string, error) {
	entries, err := demoShopPages.ReadDir("demoshop")
	if err != nil {
		return nil, fmt.Errorf("demo shop pages: %w", err)
	}
	pages := make(map[string]string, len(entries))
	for _, e := range entries {
		b, err := demoShopPages.ReadFile("demoshop/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("demo shop pages: %w", err)
		}
		pages[e.Name()] = string(b)
	}
	return pages, nil
}

// render writes the page with each {{name}} replaced by its value, given
// as name, value pairs of HTML already escaped. The pages are filled by
// hand rather than by html/template: text/template's method lookup by
// name makes the linker keep every exported method of every type in the
// delta binary (cmd/delta's deps test bans the package).
func (s *demoShop) render(w http.ResponseWriter, name string, pairs ...string) {
	page, ok := s.pages[name]
	if !ok {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	for i := range pairs {
		if i%2 == 0 {
			pairs[i] = "{{" + pairs[i] + "}}"
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = strings.NewReplacer(pairs...).WriteString(w, page)
}

// productItems is the catalog's list items for products.
func productItems(products []shopProduct) string {
	var b strings.Builder
	for _, p := range products {
		fmt.Fprintf(&b, "<li><a href=\"/product/%s\">%s</a> <span>%s</span></li>\n",
			html.EscapeString(p.Slug), html.EscapeString(p.Name), html.EscapeString(p.Price))
	}
	return b.String()
}

func (s *demoShop) product(slug string) (shopProduct, bool) {
	for _, p := range s.products {
		if p.Slug == slug {
			return p, true
		}
	}
	return shopProduct{}, false
}

// search lists the products whose name holds every word of the query; a
// query that names exactly one goes to its page.
func (s *demoShop) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var hits []shopProduct
	for _, p := range s.products {
		name := strings.ToLower(p.Name)
		all := q != ""
		for _, word := range strings.Fields(strings.ToLower(q)) {
			all = all && strings.Contains(name, word)
		}
		if all {
			hits = append(hits, p)
		}
	}
	if len(hits) == 1 {
		http.Redirect(w, r, "/product/"+hits[0].Slug, http.StatusSeeOther)
		return
	}
	results := "<p>Nothing matches. Try one word of a product's name.</p>"
	if len(hits) > 0 {
		results = "<ul>\n" + productItems(hits) + "</ul>"
	}
	s.render(w, "results.html", "query", html.EscapeString(q), "results", results)
}

func (s *demoShop) ask(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := s.product(r.PostForm.Get("product"))
	if !ok {
		http.Error(w, "unknown product", http.StatusBadRequest)
		return
	}
	q := shopQuestion{Product: p.Name, Email: r.PostForm.Get("email"), Question: r.PostForm.Get("q"),
		Ticket: fmt.Sprintf("Q-%08x", randomInt(1<<32))}
	s.mu.Lock()
	s.asked = append(s.asked, q)
	s.mu.Unlock()
	s.render(w, "answer.html", "product", html.EscapeString(q.Product), "question", html.EscapeString(q.Question),
		"email", html.EscapeString(q.Email), "ticket", html.EscapeString(q.Ticket))
}

// questions returns what the question form received so far.
func (s *demoShop) questions() []shopQuestion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]shopQuestion(nil), s.asked...)
}

// Close stops the shop.
func (s *demoShop) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop the demo shop: %w", err)
	}
	return nil
}
