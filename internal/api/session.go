package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/web"
)

// A browser cannot attach a bearer to EventSource, so an operator trades
// the inspect token for a cookie: POST /v1/dev/session. The cookie is
// HttpOnly, SameSite=Strict, Secure on TLS, valid for sessionTTL, and
// signed with a key made at boot (a restart signs everyone out). Only the
// inspection gate reads it, so it opens /dev and /v1/dev/* and nothing
// else. A write authenticated by the cookie must also carry X-Delta-CSRF,
// the value the session exchange returned (derived from the cookie and the
// key), which a cross-site form cannot read or set. Signing out
// (DELETE /v1/dev/session, a write like any other) revokes the cookie on
// the server, so a copy of it stops working too.
const (
	sessionCookie = "delta_inspect"
	csrfHeader    = "X-Delta-Csrf"
	sessionTTL    = 8 * time.Hour
)

func newSessionKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

func (s *Server) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.sessionKey)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// mintSession returns a cookie value: expiry and nonce, then their MAC.
func (s *Server) mintSession(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.Add(sessionTTL).Unix()))
	_, _ = rand.Read(b[8:])
	payload := base64.RawURLEncoding.EncodeToString(b[:])
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac("session", payload))
}

// revokedSessions holds the cookies signed out before they expire, by
// payload (expiry and nonce), until that expiry. It lives in memory: the
// signing key does too, so a restart ends every session anyway. An entry is
// dropped once its cookie would have expired, so the set is bounded by the
// sessions signed out in the last sessionTTL.
type revokedSessions struct {
	mu    sync.Mutex
	until map[string]int64 // payload → expiry (unix seconds)
}

func (rs *revokedSessions) revoke(payload string, expiry int64, now time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.until == nil {
		rs.until = map[string]int64{}
	}
	for p, exp := range rs.until {
		if now.Unix() >= exp {
			delete(rs.until, p)
		}
	}
	rs.until[payload] = expiry
}

func (rs *revokedSessions) has(payload string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.until[payload]
	return ok
}

// sessionOK checks a cookie value's MAC in constant time, then its expiry
// and that it was not signed out.
func (s *Server) sessionOK(v string, now time.Time) bool {
	payload, expiry, ok := s.sessionPayload(v)
	return ok && now.Unix() < expiry && !s.revoked.has(payload)
}

// sessionPayload checks a cookie value's MAC in constant time and returns
// its payload and expiry.
func (s *Server) sessionPayload(v string) (payload string, expiry int64, ok bool) {
	payload, sig, ok := strings.Cut(v, ".")
	if !ok {
		return "", 0, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("session", payload)) {
		return "", 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(b) != 16 {
		return "", 0, false
	}
	return payload, int64(binary.BigEndian.Uint64(b[:8])), true
}

func (s *Server) csrfFor(cookie string) string { return hex.EncodeToString(s.mac("csrf", cookie))[:32] }

// cookieAuth reports whether r carries a valid session cookie, and for a
// method that changes state whether it also carries the matching CSRF
// header.
func (s *Server) cookieAuth(r *http.Request) (valid, csrfOK bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !s.sessionOK(c.Value, time.Now()) {
		return false, false
	}
	want := s.csrfFor(c.Value)
	got := r.Header.Get(csrfHeader)
	return true, subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// tokenFrom reads the inspect token of a session exchange: the bearer, a
// form field (the login page) or a JSON body {"token": …}.
func tokenFrom(r *http.Request) (tok string, form bool) {
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(got), false
	}
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return strings.TrimSpace(r.PostFormValue("token")), true
	}
	var body struct {
		Token string `json:"token"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	return strings.TrimSpace(body.Token), false
}

func tokenEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// createSession is POST /v1/dev/session.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if s.o.InspectOff {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "inspection is disabled (DELTA_INSPECT=off)"})
		return
	}
	if s.o.InspectToken == "" {
		writeError(w, s.o.Logger, badRequest("no DELTA_INSPECT_TOKEN is set: inspection is open to loopback clients without a session"))
		return
	}
	tok, form := tokenFrom(r)
	if tok == "" || !tokenEqual(tok, s.o.InspectToken) {
		if form {
			loginPage(w, true)
			return
		}
		writeError(w, s.o.Logger, &requestError{status: http.StatusUnauthorized, msg: "missing or wrong inspection token"})
		return
	}
	v := s.mintSession(time.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	if form {
		http.Redirect(w, r, "/dev", http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"csrf": s.csrfFor(v), "expires_in": int(sessionTTL.Seconds())})
}

// sessionInfo is GET /v1/dev/session (behind the gate): how this client is
// let in, and the CSRF value its writes carry when that is a cookie.
func (s *Server) sessionInfo(w http.ResponseWriter, r *http.Request) {
	via, csrf := "loopback", ""
	switch {
	case s.o.InspectToken != "" && bearerOK(r, s.o.InspectToken):
		via = "bearer"
	case s.o.InspectToken != "":
		via = "cookie"
		if c, err := r.Cookie(sessionCookie); err == nil {
			csrf = s.csrfFor(c.Value)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"via": via, "csrf": csrf, "write": s.o.InspectWrite})
}

// deleteSession is DELETE /v1/dev/session (behind the gate, so a cookie
// needs its CSRF header): the session the cookie carries is revoked on the
// server and the browser is told to drop it.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if payload, expiry, ok := s.sessionPayload(c.Value); ok {
			s.revoked.revoke(payload, expiry, time.Now())
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// loginPage answers 401 with the sign-in form (failed: after a wrong
// token). The form posts to this origin and runs no script.
func loginPage(w http.ResponseWriter, failed bool) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(web.Login(failed))
}
