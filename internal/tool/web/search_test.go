package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/tooltest"
	"github.com/deltaharness/delta/internal/tool/web"
	"github.com/deltaharness/delta/internal/tool/web/exatest"
)

var hits = []exatest.Result{
	{ID: "a", Title: "SQLite WAL mode", URL: "https://sqlite.org/wal.html", PublishedDate: "2024-03-01T00:00:00.000Z", Author: "D. Richard Hipp", Score: 0.9, Text: "Write-ahead logging " + strings.Repeat("x", 3000)},
	{ID: "b", Title: "Go database/sql", URL: "https://go.dev/doc/database", Text: "Accessing relational databases"},
	{ID: "c", Title: "", URL: "https://example.com/c", Text: ""},
}

func run(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	return tooltest.Run(t, tl, tool.Call{Args: json.RawMessage(args)})
}

func TestSearch(t *testing.T) {
	srv := exatest.Start("k-123", hits...)
	defer srv.Close()
	tl := web.Search(web.SearchOptions{APIKey: "k-123", Endpoint: srv.URL()})
	if !tl.ReadOnly() {
		t.Fatal("web_search must be read-only")
	}
	if reason, bad := tl.Unusable(); bad {
		t.Fatalf("Unusable with a key = %q", reason)
	}
	res := run(t, tl, `{"query":"sqlite write-ahead log","num_results":2,"include_domains":["sqlite.org","go.dev"]}`)
	if res.IsError {
		t.Fatalf("search failed: %s", res.Text)
	}
	for _, w := range []string{"1. SQLite WAL mode\n   https://sqlite.org/wal.html\n   published 2024-03-01, by D. Richard Hipp\n   Write-ahead logging", "2. Go database/sql\n   https://go.dev/doc/database"} {
		if !strings.Contains(res.Text, w) {
			t.Errorf("result lacks %q:\n%s", w, res.Text)
		}
	}
	if strings.Contains(res.Text, "3.") || len(res.Text) > 1500 {
		t.Errorf("result not bounded to 2 results with 1000-character excerpts:\n%s", res.Text)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.APIKey != "k-123" || r.Query != "sqlite write-ahead log" || r.NumResults != 2 || r.Type != "auto" ||
		strings.Join(r.IncludeDomains, ",") != "sqlite.org,go.dev" || r.Contents.Text == nil || r.Contents.Text.MaxCharacters != 1000 {
		t.Fatalf("request on the wire = %+v", r)
	}

	res = run(t, tl, `{"query":"anything"}`)
	if !strings.Contains(res.Text, "3. (untitled)\n   https://example.com/c") {
		t.Errorf("default count should return all 3 fake results:\n%s", res.Text)
	}
	if got := srv.Requests()[1].NumResults; got != 5 {
		t.Errorf("default numResults = %d, want 5", got)
	}
}

func TestSearchWithoutKey(t *testing.T) {
	srv := exatest.Start("k-123", hits...)
	defer srv.Close()
	var key atomic.Value
	key.Store("")
	tl := web.Search(web.SearchOptions{Key: func() string { return key.Load().(string) }, Endpoint: srv.URL()})
	reason, bad := tl.Unusable()
	if !bad || !strings.Contains(reason, "EXA_API_KEY") {
		t.Fatalf("Unusable() = %q, %v; want unusable naming EXA_API_KEY", reason, bad)
	}
	res := run(t, tl, `{"query":"x"}`)
	if !res.IsError || !strings.Contains(res.Text, "no Exa API key") {
		t.Fatalf("keyless search = %q", res.Text)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("keyless search sent %d requests", n)
	}
	// A key that arrives later heals the tool without rebuilding it.
	key.Store("k-123")
	if _, bad := tl.Unusable(); bad {
		t.Fatal("still unusable after the key arrived")
	}
	if res := run(t, tl, `{"query":"x"}`); res.IsError {
		t.Fatalf("search after the key arrived: %s", res.Text)
	}
}

func TestSearchBadInputs(t *testing.T) {
	srv := exatest.Start("good", hits...)
	defer srv.Close()
	good := web.Search(web.SearchOptions{APIKey: "good", Endpoint: srv.URL()})
	tests := []struct {
		name string
		tl   tool.Tool
		fail int
		args string
		want string
	}{
		{"missing query", good, 0, `{}`, `missing required field "query"`},
		{"empty query", good, 0, `{"query":"   "}`, "query is empty"},
		{"long query", good, 0, `{"query":"` + strings.Repeat("q", 2100) + `"}`, "under 2000"},
		{"zero results", good, 0, `{"query":"x","num_results":-1}`, "between 1 and 10"},
		{"too many results", good, 0, `{"query":"x","num_results":50}`, "between 1 and 10"},
		{"blank domain", good, 0, `{"query":"x","include_domains":[""]}`, "not a domain"},
		{"domains wrong type", good, 0, `{"query":"x","include_domains":"go.dev"}`, `expected array of string`},
		{"wrong key", web.Search(web.SearchOptions{APIKey: "bad-key-value", Endpoint: srv.URL()}), 0, `{"query":"x"}`, "rejected the API key (HTTP 401: Invalid API key)"},
		{"rate limited", good, http.StatusTooManyRequests, `{"query":"x"}`, "rate limited"},
		{"server error", good, http.StatusBadGateway, `{"query":"x"}`, "HTTP 502"},
		{"unreachable", web.Search(web.SearchOptions{APIKey: "good", Endpoint: "http://127.0.0.1:1/search"}), 0, `{"query":"x"}`, "could not reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.FailWith(tt.fail)
			defer srv.FailWith(0)
			res := run(t, tt.tl, tt.args)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result %q, want an error naming %q", res.Text, tt.want)
			}
			if strings.Contains(res.Text, "bad-key-value") {
				t.Fatalf("the API key leaked into the result: %s", res.Text)
			}
		})
	}
}
