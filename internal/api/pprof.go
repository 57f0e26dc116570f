package api

import (
	"net/http"
	"net/http/pprof"
)

// profile serves Go's runtime profiles under /v1/dev/pprof/ when the
// operator turned them on (DELTA_PPROF): the index, a CPU profile
// (profile?seconds=N), an execution trace (trace?seconds=N), symbol lookup
// and the named profiles (heap, allocs, goroutine, block, mutex,
// threadcreate). They sit behind the inspection gate like every other
// /v1/dev route, because a goroutine dump shows what the daemon is doing.
// The command line is not served: it is not a profile, and an operator who
// passed a value on it did not mean to publish it.
func (s *Server) profile(w http.ResponseWriter, r *http.Request) {
	if !s.o.Profiling {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "profiling is off: set DELTA_PPROF=1"})
		return
	}
	name := r.PathValue("name")
	if r.Method == http.MethodPost {
		name = "symbol" // the only profile route that takes a POST
	}
	switch name {
	case "":
		pprof.Index(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "trace":
		pprof.Trace(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "the command line is not served"})
	default:
		pprof.Handler(name).ServeHTTP(w, r)
	}
}
