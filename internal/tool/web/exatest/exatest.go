// Package exatest is a fake Exa search API for tests: it speaks the wire of
// POST https://api.exa.ai/search (an x-api-key header, a JSON body with
// query, type, numResults, includeDomains and contents) and answers with
// Exa's JSON shape (requestId, resolvedSearchType, results with id, title,
// url, publishedDate, author, score, text; costDollars). A wrong key gets
// 401 and a malformed body 400, each as Exa's {"requestId", "error"} object.
//
// It binds 127.0.0.1 only and serves until Close.
package exatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Result is one search hit the fake returns.
type Result struct {
	ID            string  `json:"id"`
	Title         string  `json:"title"`
	URL           string  `json:"url"`
	PublishedDate string  `json:"publishedDate,omitempty"`
	Author        string  `json:"author,omitempty"`
	Score         float64 `json:"score,omitempty"`
	Text          string  `json:"text,omitempty"`
}

// Request is one decoded search request, as Exa reads it.
type Request struct {
	APIKey         string
	Query          string   `json:"query"`
	Type           string   `json:"type"`
	NumResults     int      `json:"numResults"`
	IncludeDomains []string `json:"includeDomains"`
	Contents       struct {
		Text *struct {
			MaxCharacters int `json:"maxCharacters"`
		} `json:"text"`
	} `json:"contents"`
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server
	key string

	mu      sync.Mutex
	results []Result
	status  int // when non-zero, every search fails with it
	reqs    []Request
	seq     int
}

// Start serves a fake that accepts key and answers every search with results
// (cut to the request's numResults).
func Start(key string, results ...Result) *Server {
	s := &Server{key: key, results: results}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", s.search)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, "Not found: "+r.Method+" "+r.URL.Path)
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the search endpoint, for web.SearchOptions.Endpoint.
func (s *Server) URL() string { return s.srv.URL + "/search" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// FailWith makes every following search answer with status (0 restores).
func (s *Server) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Requests returns every search request received so far, key included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	decodeErr := dec.Decode(&req)
	req.APIKey = r.Header.Get("x-api-key")

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.seq++
	status, results := s.status, append([]Result(nil), s.results...)
	s.mu.Unlock()

	switch {
	case req.APIKey == "" || req.APIKey != s.key:
		s.fail(w, http.StatusUnauthorized, "Invalid API key")
		return
	case decodeErr != nil:
		s.fail(w, http.StatusBadRequest, "Invalid request body: "+decodeErr.Error())
		return
	case strings.TrimSpace(req.Query) == "":
		s.fail(w, http.StatusBadRequest, "query: Required")
		return
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		s.fail(w, http.StatusBadRequest, "Content-Type must be application/json")
		return
	case status != 0:
		s.fail(w, status, http.StatusText(status))
		return
	}
	n := req.NumResults
	if n <= 0 {
		n = 10 // Exa's default
	}
	if n < len(results) {
		results = results[:n]
	}
	for i := range results {
		if req.Contents.Text == nil {
			results[i].Text = "" // Exa sends text only when asked
		} else if m := req.Contents.Text.MaxCharacters; m > 0 && len([]rune(results[i].Text)) > m {
			results[i].Text = string([]rune(results[i].Text)[:m])
		}
	}
	resolved := req.Type
	if resolved == "" || resolved == "auto" {
		resolved = "neural"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"requestId":          s.requestID(),
		"resolvedSearchType": resolved,
		"searchType":         resolved,
		"results":            results,
		"costDollars":        map[string]any{"total": 0.007, "search": map[string]any{"neural": 0.007}},
	})
}

func (s *Server) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%032x", s.seq)
}

func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"requestId": s.requestID(), "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
