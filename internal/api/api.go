// Package api is Delta's HTTP surface: an OpenAI-Responses-compatible
// endpoint, durable tasks with live and paged events, and the inspection
// stream. The route table is in routes; errors become HTTP answers only in
// writeError; every handled error is {"error":{"message":…}} with a 4xx.
package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/web"
)

// Options configures a Server.
type Options struct {
	Service      *engine.Service
	ControlToken string // bearer for /v1/* except /v1/dev/*; "" = open
	InspectToken string // bearer for /v1/dev/*; "" = loopback clients only
	InspectOff   bool   // DELTA_INSPECT=off: /v1/dev/* and /dev answer 404
	MaxBodyBytes int64
	Version      string
	Build        string
	Placement    func(requested string) (tier string, known bool) // request profile → effective tier; known false for a name that is no profile
	Heartbeat    time.Duration                                    // SSE keep-alive comment interval (default 15s)
	Status       func() any                                       // GET /v1/status body (secret-free); nil = 404
	Secrets      Secrets                                          // the vault; nil = routes answer 503
	InspectWrite bool                                             // DELTA_INSPECT_WRITE: rotate/delete through /v1/dev/*
	Profiling    bool                                             // DELTA_PPROF: Go runtime profiles under /v1/dev/pprof/
	StrictTenant bool                                             // DELTA_STRICT_TENANT: every run owned; unowned runs unreachable
	DevConfig    func() any                                       // GET /v1/dev/config body (secret-free); nil = 404
	Uploads      *Uploads                                         // POST /v1/files; nil = 404
	SelfFile     SelfFile                                         // DELTA.md revisions under /v1/dev/revisions; nil = 404
	Files        Files                                            // /v1/dev/files (the workspace); nil = 404
	// TrustReviewMetadata keeps review_kind and widen_authorized in the
	// request metadata a run stores and echoes (DELTA_TRUST_REVIEW_METADATA);
	// by default they are stripped. authToken is never kept.
	TrustReviewMetadata bool
	Logger              *slog.Logger
}

// Server handles HTTP.
type Server struct {
	o          Options
	mux        *http.ServeMux
	sessionKey []byte // signs inspection session cookies; made at boot
	revoked    revokedSessions
	cpuProfile sync.Mutex // held while a CPU profile or trace is recorded
}

// New builds the handler.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Placement == nil {
		o.Placement = func(string) (string, bool) { return "trusted", true }
	}
	s := &Server{o: o, mux: http.NewServeMux(), sessionKey: newSessionKey()}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("POST /v1/responses", s.control(s.createResponse))
	s.mux.Handle("POST /v1/tasks", s.control(s.createTask))
	s.mux.Handle("GET /v1/tasks/{id}", s.control(s.getTask))
	s.mux.Handle("DELETE /v1/tasks/{id}", s.control(s.cancelTask))
	s.mux.Handle("GET /v1/tasks/{id}/events", s.control(s.taskEvents))
	s.mux.Handle("GET /v1/busy", s.control(s.busy))
	s.mux.Handle("POST /v1/files", s.control(s.uploadFiles))
	s.mux.Handle("GET /v1/status", s.control(s.view(s.o.Status, "status")))
	s.mux.Handle("PUT /v1/secrets/{name}", s.control(func(w http.ResponseWriter, r *http.Request) { s.putSecret(w, r, false) }))
	s.mux.Handle("GET /v1/secrets", s.control(s.listSecrets))
	s.mux.Handle("POST /v1/dev/secrets/{name}", s.inspectWrite(func(w http.ResponseWriter, r *http.Request) { s.putSecret(w, r, true) }))
	s.mux.Handle("DELETE /v1/dev/secrets/{name}", s.inspectWrite(s.deleteSecret))
	s.mux.Handle("GET /v1/queue", s.control(s.queue))
	s.mux.Handle("GET /v1/dev/runs", s.inspect(s.devRuns))
	s.mux.Handle("GET /v1/dev/runs/{id}", s.inspect(s.devRun))
	s.mux.Handle("GET /v1/dev/runs/{id}/calls", s.inspect(s.devCalls))
	s.mux.Handle("POST /v1/dev/runs/{id}/cancel", s.inspectWrite(s.devCancel))
	s.mux.Handle("GET /v1/dev/memory", s.inspect(s.devMemory))
	s.mux.Handle("GET /v1/dev/sessions", s.inspect(s.devSessions))
	s.mux.Handle("GET /v1/dev/files", s.inspect(s.devFiles))
	s.mux.Handle("GET /v1/dev/files/{path...}", s.inspect(s.devFile))
	s.mux.Handle("PUT /v1/dev/files/{path...}", s.inspectWrite(s.putFile))
	s.mux.Handle("GET /v1/dev/config", s.inspect(s.view(s.o.DevConfig, "config view")))
	s.mux.Handle("GET /v1/dev/stream", s.inspect(s.devStream))
	s.mux.Handle("GET /v1/dev/pprof/{name...}", s.inspect(s.profile))
	s.mux.Handle("POST /v1/dev/pprof/symbol", s.inspect(s.profile))
	s.mux.Handle("GET /v1/dev/revisions", s.inspect(s.listRevisions))
	s.mux.Handle("GET /v1/dev/revisions/{id}/compare", s.inspect(s.compareRevision))
	s.mux.Handle("POST /v1/dev/revisions/{id}/restore", s.inspectWrite(s.restoreRevision))
	s.mux.HandleFunc("POST /v1/dev/session", s.createSession)
	s.mux.Handle("GET /v1/dev/session", s.inspect(s.sessionInfo))
	s.mux.Handle("DELETE /v1/dev/session", s.inspect(s.deleteSession))
	s.mux.Handle("GET /dev", s.inspect(func(w http.ResponseWriter, _ *http.Request) { s.asset(w, "index.html") }))
	s.mux.Handle("GET /dev/{file}", s.inspect(func(w http.ResponseWriter, r *http.Request) { s.asset(w, r.PathValue("file")) }))
	s.mux.Handle("/v1/", s.control(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no such endpoint: " + r.Method + " " + r.URL.Path})
	}))
}

// view answers with body()'s JSON, or a 404 naming what is not available
// when the daemon supplied no body.
func (s *Server) view(body func() any, what string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if body == nil {
			writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: what + " is not available"})
			return
		}
		writeJSON(w, http.StatusOK, body())
	}
}

// asset serves one Cockpit file. The page runs only its own scripts and
// styles and talks only to this origin.
func (s *Server) asset(w http.ResponseWriter, name string) {
	b, err := fs.ReadFile(web.Assets, name)
	if err != nil {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no such Cockpit file: " + name})
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if strings.HasSuffix(name, ".js") {
		ct = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// ServeHTTP implements http.Handler; it caps every request body. Uploads
// stream to disk, so their cap is the upload batch limit instead.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := s.o.MaxBodyBytes
	if r.Method == http.MethodPost && r.URL.Path == "/v1/files" {
		limit = max(limit, uploadBodyMax)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if s.unrouted(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// unrouted answers, in the error envelope, a request no route takes, where
// the mux would answer in plain text or HTML: a known path with another
// method is a 405 with Allow, a path not in its clean form a 404 (an API
// client is not redirected), any other path a 404. It reports whether it
// answered.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	// Cleaned as the mux cleans it: the escaped path, so an encoded slash
	// stays inside its segment and reaches the handler that refuses it.
	if e := r.URL.EscapedPath(); e != "" && path.Clean(e) != e && path.Clean(e)+"/" != e {
		c := path.Clean(e)
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no such endpoint: " + r.Method + " " + p + " (did you mean " + c + "?)"})
		return true
	}
	if _, pattern := s.mux.Handler(r); pattern != "" && pattern != "/v1/" {
		return false
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := s.mux.Handler(r2); pattern != "" && pattern != "/v1/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, s.o.Logger, &requestError{status: http.StatusMethodNotAllowed, msg: r.Method + " is not allowed on " + p + "; allowed: " + strings.Join(allow, ", ")})
		return true
	}
	if strings.HasPrefix(p, "/v1/") {
		return false // the catch-all: behind the control bearer, then 404
	}
	writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no such endpoint: " + r.Method + " " + p})
	return true
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"ok": true, "version": s.o.Version}
	if s.o.Build != "" {
		body["build"] = s.o.Build
	}
	writeJSON(w, http.StatusOK, body)
}

// control requires the control bearer when one is configured.
func (s *Server) control(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.o.ControlToken != "" && !bearerOK(r, s.o.ControlToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="delta"`)
			writeError(w, s.o.Logger, &requestError{status: http.StatusUnauthorized, msg: "missing or wrong bearer token"})
			return
		}
		h(w, r)
	})
}

// inspect gates /dev and /v1/dev/*: the inspect bearer or a session cookie
// (with its CSRF header on writes) when a token is configured, otherwise
// loopback clients only.
func (s *Server) inspect(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.o.InspectOff:
			writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "inspection is disabled (DELTA_INSPECT=off)"})
			return
		case s.o.InspectToken != "":
			if bearerOK(r, s.o.InspectToken) {
				break
			}
			valid, csrfOK := s.cookieAuth(r)
			switch {
			case valid && (csrfOK || safeMethod(r.Method)):
			case valid:
				writeError(w, s.o.Logger, &requestError{status: http.StatusForbidden, msg: "a write with the session cookie needs the X-Delta-CSRF header from POST /v1/dev/session"})
				return
			case r.Method == http.MethodGet && r.URL.Path == "/dev":
				// The browser's way in: a form that trades the token for a cookie.
				loginPage(w, false)
				return
			default:
				w.Header().Set("WWW-Authenticate", `Bearer realm="delta-inspect"`)
				writeError(w, s.o.Logger, &requestError{status: http.StatusUnauthorized, msg: "missing or wrong inspection bearer token (or session cookie)"})
				return
			}
		case !loopback(r):
			writeError(w, s.o.Logger, &requestError{status: http.StatusForbidden, msg: "inspection is served to loopback clients only unless DELTA_INSPECT_TOKEN is set"})
			return
		}
		h(w, r)
	})
}

// bearerOK compares digests in constant time, so neither the token's
// content nor its length leaks through timing.
func bearerOK(r *http.Request, want string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got, ok = strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	}
	if !ok {
		return false
	}
	g, w := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ownerMaxBytes bounds the x-delta-user principal.
const ownerMaxBytes = 256

// owner is the tenancy principal asserted by a trusted gateway, trimmed of
// surrounding white space. A value longer than ownerMaxBytes or not valid
// UTF-8 is refused rather than cut or repaired: two distinct principals
// must never be folded into one.
func owner(r *http.Request) (string, error) {
	o := strings.TrimSpace(r.Header.Get("X-Delta-User"))
	switch {
	case len(o) > ownerMaxBytes:
		return "", badRequest("x-delta-user is longer than 256 bytes")
	case !utf8.ValidString(o):
		return "", badRequest("x-delta-user is not valid UTF-8")
	}
	return o, nil
}
