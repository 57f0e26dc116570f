package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/deltaharness/delta/internal/config"
)

// refresher holds the one rotating MCP credential: an OAuth2
// refresh_token grant against cfg.URL, with the refresh token kept in
// cfg.File. The file is authoritative: it is read before every rotation,
// seeded from cfg.Token only when absent, never repaired when empty or
// corrupt, and rewritten atomically (temp file + rename in the same
// directory, whose existence is the operator's job). Rotations are
// coalesced in process: callers that saw the same stale access token share
// one grant.
type refresher struct {
	cfg    config.MCPRefresh
	client *http.Client
	log    *slog.Logger

	mu     sync.Mutex // serialises rotations
	access string
	amu    sync.RWMutex // guards access for readers
	seeded bool
}

// newRefresher grants with a copy of client that follows no redirect: a
// 307 or 308 would repeat the POST, the refresh token in its body, to
// wherever the token endpoint points.
func newRefresher(cfg config.MCPRefresh, client *http.Client, log *slog.Logger) *refresher {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &refresher{cfg: cfg, client: &c, log: log}
}

func (r *refresher) current() string {
	r.amu.RLock()
	defer r.amu.RUnlock()
	return r.access
}

// rotate exchanges the refresh token for a new access token, unless another
// caller already replaced the access token stale was.
func (r *refresher) rotate(ctx context.Context, stale string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.current(); cur != stale {
		return nil // rotated meanwhile: use the new token
	}
	if err := r.seed(); err != nil {
		return err
	}
	b, err := os.ReadFile(r.cfg.File)
	if err != nil {
		return fmt.Errorf("read refresh token file: %w", err)
	}
	rt := strings.TrimSpace(string(b))
	if rt == "" {
		return fmt.Errorf("refresh token file %s is empty: re-provision it", r.cfg.File)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	if r.cfg.ClientID != "" {
		form.Set("client_id", r.cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("refresh request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("refresh grant: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("refresh grant: read: %w", err)
	}
	if to, err := resp.Location(); err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("refresh grant: token endpoint answered %d, a redirect to %s, not followed so the refresh token goes nowhere else; configure the token URL it names if that is right",
			resp.StatusCode, origin(to))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("refresh grant: token endpoint answered %d", resp.StatusCode)
	}
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		return errors.New("refresh grant: no access_token in the answer")
	}
	if tok.RefreshToken != "" && tok.RefreshToken != rt {
		// Persist before using the access token: the old refresh token is
		// spent, and losing the new one would lock the daemon out.
		if err := writeAtomic(r.cfg.File, []byte(tok.RefreshToken+"\n")); err != nil {
			return fmt.Errorf("persist rotated refresh token: %w", err)
		}
	}
	r.amu.Lock()
	r.access = tok.AccessToken
	r.amu.Unlock()
	r.log.Info("mcp credential rotated")
	return nil
}

// seed writes the initial refresh token when the file is absent (once).
func (r *refresher) seed() error {
	if r.seeded {
		return nil
	}
	r.seeded = true
	if _, err := os.Stat(r.cfg.File); err == nil || !errors.Is(err, os.ErrNotExist) || r.cfg.Token == "" {
		return nil
	}
	if err := writeAtomic(r.cfg.File, []byte(r.cfg.Token+"\n")); err != nil {
		return fmt.Errorf("seed refresh token file: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data via a temp file and rename in the
// same directory; the directory is not created.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
