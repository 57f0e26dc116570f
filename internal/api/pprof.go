package api

import (
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"strconv"
)

// maxProfileSeconds bounds profile?seconds= and trace?seconds=.
const maxProfileSeconds = 60

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
	case "profile", "trace":
		// A bad seconds would silently become 30; refuse it instead, so a
		// client's own timeout is never outlasted by surprise. One
		// recording at a time: the runtime allows only one CPU profile.
		if v := r.URL.Query().Get("seconds"); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > maxProfileSeconds {
				writeError(w, s.o.Logger, badRequest("seconds must be a whole number from 1 to "+strconv.Itoa(maxProfileSeconds)))
				return
			}
		}
		if !s.cpuProfile.TryLock() {
			writeError(w, s.o.Logger, &requestError{status: http.StatusConflict, msg: "a CPU profile or trace is already being recorded; try again when it ends"})
			return
		}
		defer s.cpuProfile.Unlock()
		if name == "profile" {
			pprof.Profile(w, r)
		} else {
			pprof.Trace(w, r)
		}
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "the command line is not served"})
	default:
		if rpprof.Lookup(name) == nil {
			writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no profile named " + strconv.Quote(name)})
			return
		}
		pprof.Handler(name).ServeHTTP(w, r)
	}
}
