package browser

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// MaxCookies bounds how many cookies one Cookies call returns and one
// SetCookies call takes.
const MaxCookies = 500

// Cookie is one cookie of a session, in the shape the MCP tools report.
type Cookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Domain   string `json:"domain"`
	Path     string `json:"path"`
	Expires  *int64 `json:"expires"` // Unix seconds; null for a session cookie
	HTTPOnly bool   `json:"httpOnly"`
	Secure   bool   `json:"secure"`
	SameSite string `json:"sameSite,omitempty"`
}

// CookieFilter selects cookies. Zero fields match everything.
type CookieFilter struct {
	// URL keeps the cookies a request to it would send (domain, path and
	// secure rules).
	URL string `json:"url,omitempty"`
	// Name keeps cookies with exactly this name.
	Name string `json:"name,omitempty"`
	// Domain keeps cookies whose domain is this one (a leading dot is
	// ignored on both sides).
	Domain string `json:"domain,omitempty"`
}

// NewCookie is a cookie to set. Either URL or Domain is required; Path
// defaults to "/".
type NewCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	URL      string `json:"url,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Path     string `json:"path,omitempty"`
	Expires  int64  `json:"expires,omitempty"` // Unix seconds; 0 is a session cookie
	HTTPOnly bool   `json:"httpOnly,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
	SameSite string `json:"sameSite,omitempty"` // Strict, Lax or None
}

// Cookies returns the session's cookies that match the filter, sorted by
// domain, path and name, at most MaxCookies (truncated reports more).
func (s *Session) Cookies(ctx context.Context, f CookieFilter) (cookies []Cookie, truncated bool, err error) {
	var u *url.URL
	if f.URL != "" {
		if u, err = cookieURL(f.URL); err != nil {
			return nil, false, fmt.Errorf("get cookies: %w", err)
		}
	}
	all, err := s.rawCookies(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("get cookies: %w", err)
	}
	for _, c := range all {
		if !f.matches(c, u) {
			continue
		}
		if len(cookies) == MaxCookies {
			truncated = true
			break
		}
		cookies = append(cookies, toCookie(c))
	}
	slices.SortFunc(cookies, func(a, b Cookie) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return cookies, truncated, nil
}

// SetCookies stores cookies in the session's browser context, where every
// page of the session (and DownloadURL) sends them.
func (s *Session) SetCookies(ctx context.Context, in []NewCookie) error {
	if len(in) == 0 || len(in) > MaxCookies {
		return fmt.Errorf("set cookies: %w", invalidf("give 1..%d cookies, got %d", MaxCookies, len(in)))
	}
	params := make([]*network.CookieParam, 0, len(in))
	for i, c := range in {
		p, err := c.param()
		if err != nil {
			return fmt.Errorf("set cookies: cookie %d: %w", i, err)
		}
		params = append(params, p)
	}
	if err := s.err(); err != nil {
		return fmt.Errorf("set cookies: %w", err)
	}
	s.touch()
	cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(cctx, storage.SetCookies, storage.SetCookiesParams{Cookies: params, BrowserContextID: s.contextID}); err != nil {
		if isProtocolError(err) {
			return fmt.Errorf("set cookies: %w", invalidf("the browser refused a cookie: %v", err))
		}
		return fmt.Errorf("set cookies: %w", s.inst.classify(err))
	}
	return nil
}

// DeleteCookies removes the session's cookies that match the filter and
// returns how many it removed. An empty filter removes every cookie.
func (s *Session) DeleteCookies(ctx context.Context, f CookieFilter) (int, error) {
	var u *url.URL
	var err error
	if f.URL != "" {
		if u, err = cookieURL(f.URL); err != nil {
			return 0, fmt.Errorf("delete cookies: %w", err)
		}
	}
	all, err := s.rawCookies(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete cookies: %w", err)
	}
	var gone []*network.CookieParam
	for _, c := range all {
		if !f.matches(c, u) {
			continue
		}
		// Setting a cookie that expired in the past deletes the one with
		// the same name, domain and path.
		gone = append(gone, &network.CookieParam{
			Name: c.Name, Value: "", Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
			SameSite: c.SameSite, Expires: cdp.TimeSinceEpoch(1), PartitionKey: c.PartitionKey,
		})
	}
	if len(gone) == 0 {
		return 0, nil
	}
	cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(cctx, storage.SetCookies, storage.SetCookiesParams{Cookies: gone, BrowserContextID: s.contextID}); err != nil {
		return 0, fmt.Errorf("delete cookies: %w", s.inst.classify(err))
	}
	return len(gone), nil
}

func (s *Session) rawCookies(ctx context.Context) ([]*network.Cookie, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	s.touch()
	cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
	defer cancel()
	res, err := chromedp.CallBrowser(cctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: s.contextID})
	if err != nil {
		return nil, s.inst.classify(err)
	}
	return res.Cookies, nil
}

func (f CookieFilter) matches(c *network.Cookie, u *url.URL) bool {
	if f.Name != "" && c.Name != f.Name {
		return false
	}
	if f.Domain != "" && !strings.EqualFold(strings.TrimPrefix(c.Domain, "."), strings.TrimPrefix(f.Domain, ".")) {
		return false
	}
	return u == nil || cookieApplies(c, u)
}

func toCookie(c *network.Cookie) Cookie {
	out := Cookie{
		Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
		HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite),
	}
	if !c.Session && c.Expires > 0 {
		sec := int64(c.Expires)
		out.Expires = &sec
	}
	return out
}

func (c NewCookie) param() (*network.CookieParam, error) {
	if strings.TrimSpace(c.Name) == "" {
		return nil, invalidf("name is empty")
	}
	if strings.ContainsAny(c.Name, "=;, \t\r\n") || strings.ContainsAny(c.Value, ";\r\n") {
		return nil, invalidf("name or value holds a character cookies cannot carry")
	}
	if (c.URL == "") == (c.Domain == "") {
		return nil, invalidf("give url or domain (exactly one)")
	}
	p := &network.CookieParam{
		Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
		Secure: c.Secure, HTTPOnly: c.HTTPOnly,
	}
	if c.URL != "" {
		u, err := cookieURL(c.URL)
		if err != nil {
			return nil, err
		}
		p.URL = u.String()
	}
	if p.Path == "" && c.URL == "" {
		p.Path = "/"
	}
	if c.Expires != 0 {
		if c.Expires < 0 {
			return nil, invalidf("expires must be Unix seconds in the future or 0 for a session cookie")
		}
		p.Expires = cdp.TimeSinceEpoch(c.Expires)
	}
	switch strings.ToLower(c.SameSite) {
	case "":
	case "strict":
		p.SameSite = network.CookieSameSiteStrict
	case "lax":
		p.SameSite = network.CookieSameSiteLax
	case "none":
		p.SameSite = network.CookieSameSiteNone
		p.Secure = true // browsers drop SameSite=None without Secure
	default:
		return nil, invalidf("sameSite %q: want Strict, Lax or None", c.SameSite)
	}
	return p, nil
}

func cookieURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, invalidf("cookie url must be an absolute http or https url")
	}
	return u, nil
}

// Matches reports whether the cookie c passes the filter: the same rules
// Cookies applies, for an engine that lists cookies its own way (Firefox).
func (f CookieFilter) Matches(c Cookie) (bool, error) {
	var u *url.URL
	if f.URL != "" {
		var err error
		if u, err = cookieURL(f.URL); err != nil {
			return false, err
		}
	}
	return f.matches(&network.Cookie{Name: c.Name, Domain: c.Domain, Path: c.Path, Secure: c.Secure}, u), nil
}

// Resolve checks the cookie as SetCookies does and returns where it is
// stored: its domain (a url's host when url is given), path ("/" unless
// the url's directory says otherwise) and whether it is Secure.
func (c NewCookie) Resolve() (domain, path string, secure bool, err error) {
	p, err := c.param()
	if err != nil {
		return "", "", false, err
	}
	domain, path, secure = p.Domain, p.Path, p.Secure
	if p.URL != "" {
		u, _ := url.Parse(p.URL)
		domain = u.Hostname()
		if path == "" {
			path = "/"
			if i := strings.LastIndex(u.Path, "/"); i > 0 {
				path = u.Path[:i]
			}
		}
	}
	return domain, path, secure, nil
}
