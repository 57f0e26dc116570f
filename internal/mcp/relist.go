package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// relist answers a server's notifications/tools/list_changed: it lists the
// tools again and hands the ones it has not seen to Options.OnToolsAdded,
// so a server that reveals tools as a session progresses (bobby's phases)
// is usable without a restart. Tools are only ever added: one that
// disappeared stays registered, and a call to it gets the server's own
// error, which says why.
func (s *server) relist(ctx context.Context, sess *sdk.ClientSession) {
	if !s.discovered() || s.m.o.OnToolsAdded == nil {
		return // boot lists everything itself
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.o.ConnectTimeout)
	defer cancel()
	var fresh []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			s.log.Warn("mcp tools changed, but listing them failed; the new ones stay absent", "err", fmt.Errorf("list tools: %w", err))
			return
		}
		fresh = append(fresh, t)
	}
	s.listMu.Lock()
	defer s.listMu.Unlock()
	s.mu.Lock()
	known := map[string]bool{}
	seen := map[string]bool{}
	for _, d := range s.tools {
		known[d.Name] = true
		if name, ok := ToolName(s.cfg.Name, d.Name); ok {
			seen[name] = true
		}
	}
	var added []*sdk.Tool
	for _, d := range fresh {
		if !known[d.Name] {
			known[d.Name] = true
			added = append(added, d)
		}
	}
	s.tools = append(s.tools, added...)
	s.mu.Unlock()
	if len(added) == 0 {
		return
	}
	ts, dropped := s.adapt(added, seen)
	s.setStatus(func(st *ServerStatus) { st.Tools += len(ts); st.Dropped += dropped })
	if ts = s.m.claim(s, ts); len(ts) == 0 {
		return
	}
	s.log.Info("mcp server added tools after tools/list_changed", "added", len(ts))
	s.m.o.OnToolsAdded(ts)
}

// relistSoon answers a tools/list_changed notification: one relist runs at
// a time, and the notifications that arrive while it runs are answered by
// one more, so a server that sends thousands gets a few lists, not one
// request each.
func (s *server) relistSoon(sess *sdk.ClientSession) {
	s.relistSess.Store(sess) // the newest session, should the server have reconnected
	s.relistAgain.Store(true)
	if !s.relisting.CompareAndSwap(false, true) {
		return // the running one sees relistAgain
	}
	go func() {
		for {
			for s.relistAgain.Swap(false) {
				s.relist(s.m.ctx, s.relistSess.Load())
			}
			s.relisting.Store(false)
			// A notification between the last Swap and the Store found
			// relisting still set: take it over, unless another did.
			if !s.relistAgain.Load() || !s.relisting.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// probe checks, in the background, that a server whose call timed out
// still answers: it pings it (within ConnectTimeout), and a server that
// does not answer even that is wedged, so its session is dropped — a stdio
// server's process group is stopped — and the next call starts afresh,
// instead of every later call waiting out its ceiling. A server that
// answers (an error answer too) is only slow at that tool, and is kept.
func (s *server) probe(sess *sdk.ClientSession, tool string) {
	if !s.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.probing.Store(false)
		ctx, cancel := context.WithTimeout(s.m.ctx, s.m.o.ConnectTimeout)
		defer cancel()
		err := sess.Ping(ctx, nil)
		var werr *jsonrpc.Error
		if err == nil || errors.As(err, &werr) || s.m.ctx.Err() != nil {
			return
		}
		err = fmt.Errorf("no answer to a ping within %s after %s timed out (%w): restarted on the next call", s.m.o.ConnectTimeout, tool, err)
		s.log.Warn("mcp server wedged", "err", err)
		s.drop(sess, err)
	}()
}

// announcesToolChanges reports whether the server said at initialisation
// that its tool list can change.
func announcesToolChanges(sess *sdk.ClientSession) bool {
	init := sess.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged
}
