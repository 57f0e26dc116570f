package e2e

// The two halves of the delta+bobby tests that are not assertions: the
// fixture shop the browser visits, and the scripted agent that drives bobby
// from what its tool results say.

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// shopItem is one item of the fixture shop; prices and SKUs are random per
// test, so only the real pages can tell them.
type shopItem struct{ Slug, Name, Price, SKU string }

// shop is the fixture site: a catalog, a detail page per product with a
// question form, and the answer page that echoes the question with a
// ticket number it makes up. It counts requests per method and path.
type shop struct {
	*httptest.Server
	products []shopItem

	mu      sync.Mutex
	hits    map[string]int
	asked   []url.Values
	tickets []string
}

func randomPrice() string { return fmt.Sprintf("$%d.%02d", 20+rand.IntN(480), rand.IntN(100)) }

func startShop(t *testing.T) *shop {
	t.Helper()
	pages := template.Must(template.ParseGlob(filepath.Join("testdata", "web", "*.html")))
	s := &shop{hits: map[string]int{}, products: []shopItem{
		{"ridge-tent", "Ridge Tent", randomPrice(), fmt.Sprintf("RT-%06d", rand.IntN(1e6))},
		{"trail-kayak-paddle", "Trail Kayak Paddle", randomPrice(), fmt.Sprintf("TKP-%06d", rand.IntN(1e6))},
		{"otter-dry-bag", "Otter Dry Bag", randomPrice(), fmt.Sprintf("ODB-%06d", rand.IntN(1e6))},
	}}
	render := func(w http.ResponseWriter, name string, data any) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := pages.ExecuteTemplate(w, name, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { render(w, "catalog.html", s.products) })
	mux.HandleFunc("GET /product/{slug}", func(w http.ResponseWriter, r *http.Request) {
		for _, p := range s.products {
			if p.Slug == r.PathValue("slug") {
				render(w, "product.html", p)
				return
			}
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("POST /ask", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ticket := fmt.Sprintf("Q-%08x", rand.Uint32())
		s.mu.Lock()
		s.asked = append(s.asked, r.PostForm)
		s.tickets = append(s.tickets, ticket)
		s.mu.Unlock()
		render(w, "answer.html", map[string]string{"Product": r.PostForm.Get("product"), "Question": r.PostForm.Get("q"), "Ticket": ticket})
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *shop) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

// convo is what the scripted agent knows: the user's task fields and every
// tool result so far, by call id.
type convo struct {
	task    map[string]string
	results map[string]string
}

func readConvo(req modeltest.ChatRequest) convo {
	c := convo{task: map[string]string{}, results: map[string]string{}}
	for _, m := range req.Messages {
		switch {
		case m.Role == "tool":
			c.results[m.ToolCallID] = m.Content
		case m.Role == "user" && strings.HasPrefix(m.Content, "Shop: "):
			for line := range strings.Lines(m.Content) {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
					c.task[k] = v
				}
			}
		}
	}
	return c
}

// find returns the first submatch of pattern in the result of call id.
func (c convo) find(id, what, pattern string) (string, error) {
	text, ok := c.results[id]
	if !ok {
		return "", fmt.Errorf("no result for %s yet", id)
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("no %s in the %s result: %.600s", what, id, text)
	}
	return m[1], nil
}

func (c convo) handle() (string, error) {
	return c.find("start", "workflowHandle", `workflowHandle=(wf_[0-9a-f]+)`)
}

// planStep is one tool call of the agent's plan. args reads what it needs
// from earlier results; an error stops the agent with a message the test
// shows.
type planStep struct {
	id, tool string // call id; tool name as delta registers it
	args     func(c convo) (any, error)
	// fails: the call is expected to fail; the agent reads the error and
	// carries on instead of stopping.
	fails bool
}

// bobbyStep calls bobby's tool with the workflow handle from workflow_start
// merged into the arguments extra returns.
func bobbyStep(id, tool string, extra func(c convo) (map[string]any, error)) planStep {
	return planStep{id: id, tool: "bobby__" + tool, args: func(c convo) (any, error) {
		h, err := c.handle()
		if err != nil {
			return nil, err
		}
		args := map[string]any{"workflowHandle": h}
		if extra != nil {
			more, err := extra(c)
			if err != nil {
				return nil, err
			}
			for k, v := range more {
				args[k] = v
			}
		}
		return args, nil
	}}
}

// webAgent plays the plan one call per turn, then answers with finish. A
// tool that is not offered (progressive loading) is looked for with
// search_tools first, as a real model would; a call that fails unexpectedly
// stops the run with the tool's error as the answer.
func webAgent(plan []planStep, finish func(c convo) string) modeltest.Script {
	return func(req modeltest.ChatRequest) modeltest.Reply {
		c := readConvo(req)
		for _, s := range plan {
			if text, done := c.results[s.id]; done {
				if failed := strings.HasPrefix(text, "error"); failed != s.fails {
					return modeltest.TextReply(fmt.Sprintf("stopped after %s (%s), error=%v: %s", s.id, s.tool, failed, text))
				}
				continue
			}
			if !req.HasTool(s.tool) {
				// A tool a server announced a moment ago may take one more
				// search to show up, as it would for a real model.
				search := ""
				for n := range 3 {
					if id := fmt.Sprintf("search_%s_%d", s.id, n); c.results[id] == "" {
						search = id
						break
					}
				}
				if search == "" || !req.HasTool("search_tools") {
					return modeltest.TextReply("stopped: " + s.tool + " is not offered and search_tools did not activate it")
				}
				q, _ := json.Marshal(map[string]string{"query": strings.ReplaceAll(s.tool, "_", " ")})
				return modeltest.ToolReply(modeltest.ToolCall{ID: search, Name: "search_tools", Arguments: string(q)})
			}
			args, err := s.args(c)
			if err != nil {
				return modeltest.TextReply("stopped before " + s.id + ": " + err.Error())
			}
			b, _ := json.Marshal(args)
			return modeltest.ToolReply(modeltest.ToolCall{ID: s.id, Name: s.tool, Arguments: string(b)})
		}
		return modeltest.TextReply(finish(c))
	}
}

// shopTask is the user's request; the agent reads its fields.
func shopTask(shopURL, product, question string) string {
	return "Shop: " + shopURL + "/\nProduct: " + product + "\nQuestion: " + question + "\n" +
		"Open the product's detail page in the browser, note its price and SKU, send the question with the form there, " +
		"read the shop's answer, take a screenshot of it, and write report.md with what you found."
}

// productLink finds the catalog link to the task's product in a snapshot:
// a `link "Name" [ref=eN]` line, or, where the catalogue's items render as
// rows under a shape header (`3 × listitem (link | text):`), the first cell
// of the item's `- "Name" [ref=eN] | $12.00` line, which that header says
// is the link.
func productLink(c convo, snapID string) (string, error) {
	name := regexp.QuoteMeta(c.task["Product"])
	return c.find(snapID, "link to "+c.task["Product"],
		`(?m)(?:link "`+name+`"[^\n]*?|^ *\d+ × \S* ?\(link[^\n]*\n(?: *- [^\n]*\n)*? *- "`+name+`" )\[ref=(e\d+)\]`)
}

// reportFacts are the facts the agent extracted from the pages.
type reportFacts struct{ name, price, sku, asked, ticket, shot string }

func (c convo) facts() (reportFacts, error) {
	var f reportFacts
	var err error
	for _, x := range []struct {
		dst           *string
		id, what, pat string
	}{
		{&f.name, "detail", "product heading", `heading "([^"]+)" \[level=1\]`},
		{&f.price, "detail", "price", `text: Price: (\S+)`},
		{&f.sku, "detail", "SKU", `text: SKU: (\S+)`},
		{&f.asked, "answer", "echoed question", `text: You asked: (.+)`},
		{&f.ticket, "answer", "ticket", `text: Ticket: (\S+)`},
		{&f.shot, "shot", "image marker", `\[image: (\S+) \(image/png`},
	} {
		if *x.dst, err = c.find(x.id, x.what, x.pat); err != nil {
			return f, err
		}
	}
	return f, nil
}

// shopPlan is the whole job: open, look, click through by ref, fill and
// submit by ref and by semantic target, read the answer, screenshot, report.
func shopPlan() []planStep {
	return []planStep{
		{id: "start", tool: "bobby__workflow_start", args: func(c convo) (any, error) {
			return map[string]any{"profile": "default", "url": c.task["Shop"]}, nil
		}},
		bobbyStep("catalog", "a11y_snapshot", nil),
		bobbyStep("open", "click", func(c convo) (map[string]any, error) {
			ref, err := productLink(c, "catalog")
			return map[string]any{"target": map[string]any{"ref": ref}}, err
		}),
		bobbyStep("detail", "a11y_snapshot", nil),
		bobbyStep("fill", "control_action", func(c convo) (map[string]any, error) {
			ref, err := c.find("detail", "question textbox", `textbox "[^"]*"[^\n]*?\[ref=(e\d+)\]`)
			return map[string]any{"target": map[string]any{"ref": ref}, "action": map[string]any{"kind": "setText", "text": c.task["Question"]}}, err
		}),
		bobbyStep("send", "click", func(c convo) (map[string]any, error) {
			name, err := c.find("detail", "submit button", `button "([^"]+)"[^\n]*?\[ref=e\d+\]`)
			return map[string]any{"target": map[string]any{"role": "button", "name": name}}, err
		}),
		bobbyStep("answer", "a11y_snapshot", nil),
		{id: "shot", tool: "bobby__command_execute", args: func(c convo) (any, error) {
			h, err := c.handle()
			return map[string]any{"envelope": map[string]any{"kind": "screenshot", "workflowHandle": h}}, err
		}},
		{id: "report", tool: "write_file", args: func(c convo) (any, error) {
			f, err := c.facts()
			if err != nil {
				return nil, err
			}
			return map[string]any{"path": "report.md", "content": fmt.Sprintf(
				"# %s\n\n- Price: %s\n- SKU: %s\n- Question sent: %s\n- Shop ticket: %s\n- Screenshot: %s\n",
				f.name, f.price, f.sku, f.asked, f.ticket, f.shot)}, nil
		}},
	}
}
