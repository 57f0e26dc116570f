package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// ErrDownloadTooLarge is returned when a download exceeds its maxBytes; the
// partial file is removed.
var ErrDownloadTooLarge = errors.New("download exceeds maxBytes")

// maxRedirects bounds the redirect hops of a download.
const maxRedirects = 10

// Download is the evidence of a completed download.
type Download struct {
	URL      string `json:"url"`
	FinalURL string `json:"finalUrl"`
	// SavedTo echoes the validated saveAs exactly as given, once the file
	// is in place: a failed download saved nothing and has none.
	SavedTo string `json:"savedTo,omitempty"`
	// Path is the absolute file written.
	Path        string `json:"-"`
	SHA256      string `json:"sha256"`
	Bytes       int64  `json:"bytes"`
	ContentType string `json:"contentType,omitempty"`
	HTTPStatus  int    `json:"httpStatus"`
}

// DownloadPath validates saveAs against the downloads root: a local relative
// path (subdirectories allowed, no .. segment even one that stays inside)
// or an absolute path directly in the root. It returns the absolute
// destination, or an error wrapping ErrPolicyDenied (outside the root) or
// ErrInvalidArgument.
func (r *Runtime) DownloadPath(saveAs string) (string, error) {
	return DownloadPathIn(r.opts.DownloadsDir, saveAs)
}

// DownloadPathIn is DownloadPath against the given downloads root.
func DownloadPathIn(downloadsRoot, saveAs string) (string, error) {
	if downloadsRoot == "" {
		return "", invalidf("downloads are not configured (no downloads directory)")
	}
	if strings.TrimSpace(saveAs) == "" || strings.ContainsRune(saveAs, 0) {
		return "", invalidf("saveAs is empty")
	}
	root, err := filepath.Abs(downloadsRoot)
	if err != nil {
		return "", fmt.Errorf("downloads root: %w", err)
	}
	var dest string
	if filepath.IsAbs(saveAs) {
		dest = filepath.Clean(saveAs)
		if filepath.Dir(dest) != root {
			return "", fmt.Errorf("%w: saveAs %q is not directly under the downloads root", ErrPolicyDenied, saveAs)
		}
	} else {
		if !filepath.IsLocal(saveAs) {
			return "", fmt.Errorf("%w: saveAs %q leaves the downloads root", ErrPolicyDenied, saveAs)
		}
		dest = filepath.Join(root, saveAs)
	}
	// A .. that stays inside still names the file by a detour: savedTo
	// must be where the file is.
	for _, seg := range strings.FieldsFunc(saveAs, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if seg == ".." {
			return "", invalidf("saveAs %q has a .. segment; name the file by its path under the downloads root", saveAs)
		}
	}
	if filepath.Base(dest) == "." || dest == root {
		return "", invalidf("saveAs %q names no file", saveAs)
	}
	return dest, nil
}

// DownloadURL fetches rawURL with the session's cookies and user agent and
// saves it to saveAs (see DownloadPath), at most maxBytes. Each redirect hop
// is checked against the NavigationPolicy and AllowURL. The file appears
// only when complete (written to a temporary name, then renamed).
func (s *Session) DownloadURL(ctx context.Context, rawURL, saveAs string, maxBytes int64) (Download, error) {
	return s.DownloadTo(ctx, s.rt.opts.DownloadsDir, rawURL, saveAs, maxBytes)
}

// DownloadTo is DownloadURL into the given downloads root (the gateway's
// configured one, which need not be the runtime's).
func (s *Session) DownloadTo(ctx context.Context, downloadsRoot, rawURL, saveAs string, maxBytes int64) (Download, error) {
	return Fetch(ctx, DownloadRequest{
		Root: downloadsRoot, URL: rawURL, SaveAs: saveAs, MaxBytes: maxBytes, Check: s.rt.checkURL,
		Jar: func(ctx context.Context) (string, []Cookie, error) {
			if err := s.err(); err != nil {
				return "", nil, err
			}
			s.touch()
			cctx, cancel := s.inst.callCtx(ctx, s.rt.opts.ActionTimeout)
			defer cancel()
			ver, err := chromedp.CallBrowser(cctx, browser.GetVersion, cdp.Empty{})
			if err != nil {
				return "", nil, s.inst.classify(err)
			}
			res, err := chromedp.CallBrowser(cctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: s.contextID})
			if err != nil {
				return "", nil, fmt.Errorf("read cookies: %w", s.inst.classify(err))
			}
			cookies := make([]Cookie, len(res.Cookies))
			for i, c := range res.Cookies {
				cookies[i] = toCookie(c)
			}
			return ver.UserAgent, cookies, nil
		},
	})
}

// DownloadRequest is one download: the URL, where it goes under the
// downloads root, its byte cap, the network policy and the session's jar.
type DownloadRequest struct {
	Root, URL, SaveAs string
	MaxBytes          int64
	// Check applies the network policy to the URL and to every redirect
	// hop; an error wrapping ErrPolicyDenied refuses it.
	Check func(raw string) (*url.URL, error)
	// Jar reads what the request carries from the session: its user
	// agent and cookies. It runs only once the request passed its checks.
	Jar func(ctx context.Context) (userAgent string, cookies []Cookie, err error)
}

// Fetch runs a download in Go with the session's cookies, whatever engine
// holds them: saveAs is checked against the root (see DownloadPathIn), the
// URL and each redirect hop against Check, and the body streams to a
// temporary name, at most MaxBytes, renamed into place only when complete.
func Fetch(ctx context.Context, r DownloadRequest) (Download, error) {
	d := Download{URL: r.URL}
	rawURL, maxBytes, downloadsRoot := r.URL, r.MaxBytes, r.Root
	if maxBytes < 1 {
		return d, fmt.Errorf("download: %w", invalidf("maxBytes %d must be at least 1", maxBytes))
	}
	dest, err := DownloadPathIn(downloadsRoot, r.SaveAs)
	if err != nil {
		return d, fmt.Errorf("download: %w", err)
	}
	if fi, err := os.Lstat(dest); err == nil && fi.IsDir() {
		return d, fmt.Errorf("download: %w", invalidf("saveAs %q is a directory; name a file in it", r.SaveAs))
	}
	u, err := r.Check(rawURL)
	if err != nil {
		return d, fmt.Errorf("download: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return d, fmt.Errorf("download: %w: only http and https urls download", ErrPolicyDenied)
	}
	ua, cookies, err := r.Jar(ctx)
	if err != nil {
		return d, fmt.Errorf("download: %w", err)
	}

	client := &http.Client{
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if _, err := r.Check(req.URL.String()); err != nil {
				return err
			}
			setCookies(req, cookies)
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return d, fmt.Errorf("download: %w", invalidf("%v", err))
	}
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	setCookies(req, cookies)
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, ErrPolicyDenied) {
			return d, fmt.Errorf("download: %w", ErrPolicyDenied)
		}
		return d, fmt.Errorf("download %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	d.FinalURL = resp.Request.URL.String()
	d.HTTPStatus = resp.StatusCode
	d.ContentType = resp.Header.Get("Content-Type")
	if resp.StatusCode >= 400 {
		return d, fmt.Errorf("download %s: the server answered HTTP %d", rawURL, resp.StatusCode)
	}
	if resp.ContentLength > maxBytes {
		return d, fmt.Errorf("download %s: %w (%d > %d bytes)", rawURL, ErrDownloadTooLarge, resp.ContentLength, maxBytes)
	}

	if err := insideRoot(downloadsRoot, filepath.Dir(dest), r.SaveAs); err != nil {
		return d, fmt.Errorf("download: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return d, fmt.Errorf("download: %w", saveErr(r.SaveAs, "make its directory", err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".download-*")
	if err != nil {
		return d, fmt.Errorf("download: %w", saveErr(r.SaveAs, "create a temporary file", err))
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return d, fmt.Errorf("download %s: %w", rawURL, pathless(err))
	}
	if n > maxBytes {
		return d, fmt.Errorf("download %s: %w (more than %d bytes)", rawURL, ErrDownloadTooLarge, maxBytes)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return d, fmt.Errorf("download: %w", saveErr(r.SaveAs, "put the file in place", err))
	}
	d.SavedTo = r.SaveAs
	d.Path = dest
	d.Bytes = n
	d.SHA256 = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

// setCookies adds the browser cookies that apply to the request URL.
func setCookies(req *http.Request, cookies []Cookie) {
	req.Header.Del("Cookie")
	for _, c := range cookies {
		if cookieApplies(&network.Cookie{Domain: c.Domain, Path: c.Path, Secure: c.Secure}, req.URL) {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
}

// cookieApplies implements the domain, path and secure rules of RFC 6265.
func cookieApplies(c *network.Cookie, u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	domain := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
	hostOnly := !strings.HasPrefix(c.Domain, ".")
	switch {
	case host == domain:
	case !hostOnly && strings.HasSuffix(host, "."+domain):
	default:
		return false
	}
	if c.Secure && u.Scheme != "https" {
		return false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	cp := c.Path
	if cp == "" {
		cp = "/"
	}
	return p == cp || strings.HasPrefix(p, strings.TrimSuffix(cp, "/")+"/")
}

// saveErr is a local failure to save the file as saveAs, named by saveAs
// alone: the absolute path under the downloads root is never echoed. A
// destination the filesystem cannot take as a file (a directory or a file
// where a directory must be) is a bad saveAs, ErrInvalidArgument.
func saveErr(saveAs, op string, err error) error {
	if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
		return invalidf("saveAs %q: cannot %s: %v", saveAs, op, pathless(err))
	}
	return fmt.Errorf("saveAs %q: cannot %s: %w", saveAs, op, pathless(err))
}

// pathless is err without the file paths of a *fs.PathError or an
// *os.LinkError: their cause alone, such as "file exists".
func pathless(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// insideRoot checks that dir, after resolving symlinks in its existing
// part, stays inside root: a symlink in the downloads directory must not
// lead a download elsewhere. Errors name saveAs, never an absolute path.
func insideRoot(root, dir, saveAs string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("downloads root: %w", pathless(err))
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("downloads root: %w", pathless(err))
	}
	existing := dir
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("saveAs %q: resolve its directory: %w", saveAs, pathless(err))
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return fmt.Errorf("%w: saveAs %q leads outside the downloads root", ErrPolicyDenied, saveAs)
	}
	return nil
}
