package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// maxRevokedSessions bounds how many ended MCP session ids are remembered
// to answer with the reason; older ones get the SDK's plain 404.
const maxRevokedSessions = 1024

// revokedSessions remembers the MCP sessions a principal reload ended, and
// whose credential it was, so a request on one is told why and what to do.
type revokedSessions struct {
	mu    sync.Mutex
	ids   map[string]string // Mcp-Session-Id → principal name
	order []string
}

func (r *revokedSessions) add(id, principal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	if _, ok := r.ids[id]; ok {
		return
	}
	r.ids[id] = principal
	r.order = append(r.order, id)
	if len(r.order) > maxRevokedSessions {
		delete(r.ids, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *revokedSessions) lookup(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.ids[id]
	return p, ok
}

// ReloadPrincipals replaces the bearer principals with those of cfg,
// without a restart. A principal whose token, capabilities or expiry
// changed, or that is gone, has its MCP sessions ended: its tool list was
// built for the old credential, so the client must initialize again (a
// request on an ended session gets HTTP 404 saying so; a removed token gets
// 401). Principals that stay the same keep their sessions. It returns the
// names whose sessions were ended; on error nothing changes.
func (g *Gateway) ReloadPrincipals(cfg config.Config) ([]string, error) {
	next, err := PrincipalsFromConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reload principals: %w", err)
	}
	prev := g.principals.Swap(next)
	var changed []string
	for _, p := range prev.Principals() {
		if q, ok := next.Lookup(p.Name); !ok || !p.SameCredential(q) {
			changed = append(changed, p.Name)
		}
	}
	var ended []string
	g.forEachClient(func(cs *clientSession) {
		if !slices.Contains(changed, cs.principal.Name) {
			return
		}
		cs.mu.Lock()
		for _, ss := range cs.mcpSess {
			if id := ss.ID(); id != "" {
				g.revoked.add(id, cs.principal.Name)
			}
		}
		cs.mu.Unlock()
		cs.closeMCP()
		g.removeClient(cs)
		if !slices.Contains(ended, cs.principal.Name) {
			ended = append(ended, cs.principal.Name)
		}
	})
	slices.Sort(ended)
	g.log.Info("principals reloaded", "principals", len(next.Principals()), "changed", changed, "sessions_ended_for", ended)
	return ended, nil
}

// refuseRevoked answers a request on an MCP session that a principal
// reload ended: HTTP 404 (the status that tells a client to initialize a
// new session) with a JSON-RPC error naming the reason. It reports whether
// it answered.
func (g *Gateway) refuseRevoked(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return false
	}
	principal, ok := g.revoked.lookup(id)
	if !ok {
		return false
	}
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(io.LimitReader(r.Body, MaxHTTPBodyBytes))
		_ = json.Unmarshal(body, &head) // a batch or no body: the error has a null id
	}
	if len(head.ID) == 0 {
		head.ID = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = writeRPCError(w, head.ID, rpcInvalidRequest,
		"this MCP session ended because the credential of principal "+principal+
			" was rotated or revoked: send initialize again (without Mcp-Session-Id, with the current token) to start a new session",
		CodeNotInitialized)
	return true
}

// registry is the current principal registry.
func (g *Gateway) registry() *policy.Registry { return g.principals.Load() }
