package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
)

const hydrateToken = "tok-e2e-hydrate-SECRET-4417"

// hydrateScript answers a main-loop call with the hydration block it was
// given, or says it had none, and keeps every request body it received.
type hydrateScript struct {
	mu   sync.Mutex
	raws []string
}

func (h *hydrateScript) reply(req modeltest.ChatRequest) modeltest.Reply {
	h.mu.Lock()
	h.raws = append(h.raws, string(req.Raw))
	h.mu.Unlock()
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "<delta:hydration>") {
			return modeltest.TextReply(m.Content)
		}
	}
	return modeltest.TextReply("no hydration")
}

func (h *hydrateScript) bodies() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.raws, "\n")
}

// TestHydrationThroughTheDaemon: the real binary, the scripted fake and the
// test MCP server acting as the product over HTTP. A new session's first
// request carries the hydration block with the product's answers to the
// exact argument objects (the search with the run's authToken as bearer);
// the next run of the session is not hydrated; without a subject key there
// is no subject read, without an authToken no search; an oversized answer
// is clipped to the block's bound. The token never reaches the database,
// the events, the model or the log.
func TestHydrationThroughTheDaemon(t *testing.T) {
	product := mcptest.NewHTTP(mcptest.Options{Hydrate: true})
	srv := httptest.NewServer(product)
	t.Cleanup(srv.Close)
	script := &hydrateScript{}
	fake := startScript(t, script.reply)
	servers, _ := json.Marshal([]map[string]any{{"name": "crm", "transport": "http", "url": srv.URL}})
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+string(servers), `DELTA_VOCAB={"subjectKeys":["account"]}`,
		"DELTA_HYDRATE_TOOLS=crm__get_dashboard,crm__list_recent_notes", "DELTA_HYDRATE_SEARCH_TOOL=crm__search_knowledge")
	calls := func(tool string) []mcptest.Call { return product.Counters.Calls(tool) }
	argsOf := func(c mcptest.Call) string { b, _ := json.Marshal(c.Args); return string(b) }

	// A new session with a subject and a token: every read and the search.
	first := d.as("alice", fmt.Sprintf(`{"input":"Prepare the account brief","metadata":{"account_id":"acct_7","authToken":%q}}`, hydrateToken))
	out := first["output_text"].(string)
	for _, want := range []string{"untrusted data", "get_dashboard answered for account_id=acct_7 limit=20",
		"list_recent_notes answered for account_id=acct_7 limit=20", "search_knowledge answered for account_id=acct_7 limit=8 q=Prepare the account brief"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the first request's hydration block lacks %q:\n%s\nlog:\n%s", want, out, d.logText())
		}
	}
	if c := calls("get_dashboard"); len(c) != 1 || argsOf(c[0]) != `{"account_id":"acct_7","limit":20}` {
		t.Fatalf("get_dashboard calls %+v", c)
	}
	search := calls("search_knowledge")
	if len(search) != 1 || argsOf(search[0]) != `{"account_id":"acct_7","limit":8,"q":"Prepare the account brief","query":"Prepare the account brief"}` ||
		search[0].Auth != "Bearer "+hydrateToken {
		t.Fatalf("search calls %+v", search)
	}

	// The session's next run is not hydrated.
	follow := d.as("alice", fmt.Sprintf(`{"input":"shorter","previous_response_id":%q,"metadata":{"account_id":"acct_7","authToken":%q}}`, first["id"], hydrateToken))
	if follow["output_text"] != "no hydration" || len(calls("get_dashboard")) != 1 || len(calls("search_knowledge")) != 1 {
		t.Fatalf("a later run of the session was hydrated: %v", follow["output_text"])
	}

	// No subject key: the search only.
	out = d.as("alice", fmt.Sprintf(`{"input":"What changed this week?","metadata":{"authToken":%q}}`, hydrateToken))["output_text"].(string)
	if strings.Contains(out, "get_dashboard") || !strings.Contains(out, "search_knowledge answered for limit=8") || len(calls("get_dashboard")) != 1 {
		t.Fatalf("without a subject key: %s", out)
	}

	// No authToken: the subject reads only.
	out = d.as("alice", `{"input":"Prepare the account brief","metadata":{"account":"acme"}}`)["output_text"].(string)
	if !strings.Contains(out, "get_dashboard answered for account=acme limit=20") || strings.Contains(out, "search_knowledge") || len(calls("search_knowledge")) != 2 {
		t.Fatalf("without an authToken: %s (search calls %d)", out, len(calls("search_knowledge")))
	}

	// An oversized answer is clipped to the block's bound.
	out = d.as("alice", fmt.Sprintf(`{"input":"brief","metadata":{"account":"big-co","authToken":%q}}`, hydrateToken))["output_text"].(string)
	if n := utf8.RuneCountInString(out); n > 16000 || !strings.Contains(out, "[clipped: ") || !strings.Contains(out, "search_knowledge answered") {
		t.Fatalf("oversized: %d characters, clipped note %v", n, strings.Contains(out, "[clipped: "))
	}

	_, st := d.call("GET", "/v1/status", "")
	hy := st["learning"].(map[string]any)["hydration"].(map[string]any)
	if hy["enabled"] != true || hy["search_tool"] != "crm__search_knowledge" || fmt.Sprint(hy["tools"]) != "[crm__get_dashboard crm__list_recent_notes]" {
		t.Fatalf("status hydration %v", hy)
	}

	// The events: one hydration per new session, names and sizes only.
	db := d.openStore()
	evs, err := db.Events(context.Background(), store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var hydrations []string
	var all strings.Builder
	for _, e := range evs {
		all.Write(e.Data)
		if e.Name == "hydration" {
			hydrations = append(hydrations, e.RunID+" "+string(e.Data))
			if e.RunID == follow["id"] {
				t.Fatalf("the follow-up run has a hydration event: %s", e.Data)
			}
			if strings.Contains(string(e.Data), "acct_7") || strings.Contains(string(e.Data), "answered for") {
				t.Fatalf("a hydration event carries content: %s", e.Data)
			}
		}
	}
	if len(hydrations) != 4 {
		t.Fatalf("hydration events %v, want one per new session (4)", hydrations)
	}
	if hydrated, err := db.RunUntrustedInput(context.Background(), first["id"].(string)); err != nil || hydrated != "hydration" {
		t.Fatalf("the hydrated run is not marked as having read untrusted input: %v %v", hydrated, err)
	}

	// The token: on the search's wire only.
	if strings.Contains(all.String(), hydrateToken) {
		t.Fatal("the authToken is in an event")
	}
	if strings.Contains(script.bodies(), hydrateToken) {
		t.Fatal("the authToken reached the model")
	}
	if strings.Contains(d.logText(), hydrateToken) {
		t.Fatal("the authToken is in the log")
	}
	file, _ := os.ReadFile(filepath.Join(d.dir, "state", "delta.db"))
	wal, _ := os.ReadFile(filepath.Join(d.dir, "state", "delta.db-wal"))
	if strings.Contains(string(file)+string(wal), hydrateToken) {
		t.Fatal("the authToken is stored in the database")
	}
}
