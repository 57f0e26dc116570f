package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/tooltest"
)

// fakeResolver maps names to fixed addresses, standing in for DNS.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// publicAddr is a public address no test ever really connects to: the test
// dialer sends its connections to the loopback listener instead.
const publicAddr = "93.184.216.34"

// target is a loopback server that counts the requests that reach it.
type target struct {
	srv  *httptest.Server
	port string
	hits atomic.Int64
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Internal</title></head><body><p>internal secret page</p></body></html>`)
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	tg.srv = httptest.NewServer(mux)
	t.Cleanup(tg.srv.Close)
	_, tg.port, _ = net.SplitHostPort(tg.srv.Listener.Addr().String())
	return tg
}

// fetchTool builds a fetcher whose raw dialer sends connections meant for
// publicAddr to the loopback target, so a "public" site exists in tests.
// The guard's checks run unchanged before that dialer.
func fetchTool(t *testing.T, tg *target, allow bool, resolver Resolver) tool.Tool {
	t.Helper()
	f := newFetcher(FetchOptions{AllowPrivate: allow, Resolver: resolver})
	real := f.guard.dial
	f.guard.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(address)
		if host == publicAddr {
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}
		return real(ctx, network, address)
	}
	return tool.Func(FetchName, doc(fetchDoc), true, f.run)
}

func call(t *testing.T, tl tool.Tool, args any) tool.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	return tooltest.Run(t, tl, tool.Call{Args: b})
}

func TestFetchSSRF(t *testing.T) {
	tg := newTarget(t)
	p := tg.port
	v6 := ""
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		srv := &http.Server{Handler: tg.srv.Config.Handler}
		go func() { _ = srv.Serve(ln) }() // ends with http.ErrServerClosed at cleanup
		t.Cleanup(func() { srv.Close() })
		_, v6, _ = net.SplitHostPort(ln.Addr().String())
	}
	resolver := fakeResolver{
		"localhost.test":   {netip.MustParseAddr("127.0.0.1")},
		"public.test":      {netip.MustParseAddr(publicAddr)},
		"mixed.test":       {netip.MustParseAddr(publicAddr), netip.MustParseAddr("127.0.0.1")},
		"ten.test":         {netip.MustParseAddr("10.1.2.3")},
		"oneseventwo.test": {netip.MustParseAddr("172.20.0.5")},
		"oneninetwo.test":  {netip.MustParseAddr("192.168.0.10")},
		"metadata.test":    {netip.MustParseAddr("169.254.169.254")},
		"ula.test":         {netip.MustParseAddr("fd00::5")},
		"ec2v6.test":       {netip.MustParseAddr("fd00:ec2::254")},
	}
	tests := []struct {
		name string
		url  string
		// reach: with AllowPrivate the fetch really reaches the loopback
		// listener; otherwise only the refusal is checked (no such network here).
		reach  bool
		reason string
	}{
		{"loopback", "http://127.0.0.1:" + p + "/", true, "loopback"},
		{"loopback other", "http://127.9.9.9:" + p + "/", false, "loopback"},
		{"decimal", "http://2130706433:" + p + "/", true, "loopback"},
		{"octal", "http://0177.0.0.1:" + p + "/", true, "loopback"},
		{"hex short", "http://0x7f.1:" + p + "/", true, "loopback"},
		{"mapped v6", "http://[::ffff:127.0.0.1]:" + p + "/", true, "IPv4-mapped"},
		{"name to loopback", "http://localhost.test:" + p + "/", true, "loopback"},
		{"name mixing public and loopback", "http://mixed.test:" + p + "/", true, "loopback"},
		{"redirect to loopback", "http://public.test:" + p + "/to?u=http://127.0.0.1:" + p + "/secret", true, "loopback"},
		{"redirect to name to loopback", "http://public.test:" + p + "/to?u=http://localhost.test:" + p + "/secret", true, "loopback"},
		{"redirect to decimal", "http://public.test:" + p + "/to?u=http://2130706433:" + p + "/secret", true, "loopback"},
		{"10/8", "http://10.0.0.1/", false, "private"},
		{"10/8 by name", "http://ten.test/", false, "private"},
		{"172.16/12", "http://172.16.5.4/", false, "private"},
		{"172.16/12 by name", "http://oneseventwo.test/", false, "private"},
		{"192.168/16", "http://192.168.1.1/", false, "private"},
		{"192.168/16 by name", "http://oneninetwo.test/", false, "private"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", false, "cloud metadata"},
		{"metadata by name", "http://metadata.test/", false, "cloud metadata"},
		{"metadata decimal", "http://2852039166/", false, "cloud metadata"},
		{"ula v6", "http://[fd00::1]/", false, "unique-local"},
		{"ula v6 by name", "http://ula.test/", false, "unique-local"},
		{"ec2 v6 metadata", "http://[fd00:ec2::254]/", false, "cloud metadata"},
		{"unspecified", "http://0.0.0.0:" + p + "/", false, "unspecified"},
		{"cgnat", "http://100.64.1.1/", false, "carrier-grade NAT"},
		{"multicast", "http://224.0.0.251/", false, "multicast"},
		{"link-local v6", "http://[fe80::1]/", false, "link-local"},
	}
	if v6 != "" {
		tests = append(tests, struct {
			name   string
			url    string
			reach  bool
			reason string
		}{"ipv6 loopback", "http://[::1]:" + v6 + "/", true, "loopback"})
	} else {
		tests = append(tests, struct {
			name   string
			url    string
			reach  bool
			reason string
		}{"ipv6 loopback", "http://[::1]:" + p + "/", false, "loopback"})
	}

	guarded := fetchTool(t, tg, false, resolver)
	open := fetchTool(t, tg, true, resolver)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tg.hits.Load()
			res := call(t, guarded, map[string]any{"url": tt.url})
			if !res.IsError || !strings.Contains(res.Text, "refused") || !strings.Contains(res.Text, tt.reason) {
				t.Fatalf("guarded fetch of %s = %q, want a refusal naming %q", tt.url, res.Text, tt.reason)
			}
			if strings.Contains(res.Text, "secret") && !strings.Contains(res.Text, "/secret") {
				t.Fatalf("refusal leaked the page: %s", res.Text)
			}
			isRedirect := strings.Contains(tt.url, "/to?")
			if hits := tg.hits.Load() - before; hits > 0 && !isRedirect || isRedirect && hits != 1 {
				t.Fatalf("guarded fetch reached the listener %d times", hits)
			}
			if !tt.reach {
				return
			}
			res = call(t, open, map[string]any{"url": tt.url})
			if res.IsError || !strings.Contains(res.Text, "internal secret page") {
				t.Fatalf("AllowPrivate fetch of %s = %q, want the page", tt.url, res.Text)
			}
		})
	}

	// Allowed with the escape, for the ranges no local listener can serve.
	g := newGuard(resolver, true, 0)
	for _, host := range []string{"10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "fd00::1", "ten.test", "metadata.test", "ula.test"} {
		if _, err := g.resolve(context.Background(), host); err != nil {
			t.Errorf("AllowPrivate guard refused %s: %v", host, err)
		}
	}
}

func TestFetchPublicAllowed(t *testing.T) {
	tg := newTarget(t)
	resolver := fakeResolver{"public.test": {netip.MustParseAddr(publicAddr)}}
	res := call(t, fetchTool(t, tg, false, resolver), map[string]any{"url": "http://public.test:" + tg.port + "/page"})
	if res.IsError || !strings.Contains(res.Text, "Title: Internal") || !strings.Contains(res.Text, "internal secret page") {
		t.Fatalf("public fetch = %q", res.Text)
	}
}

// page serves fixed bodies by path for the content tests.
func pageServer(t *testing.T, routes map[string]func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFetchContent(t *testing.T) {
	big := strings.Repeat("word ", 10000) // 50,000 characters
	base := pageServer(t, map[string]func(http.ResponseWriter, *http.Request){
		"/html": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><html><head><title> The  Page </title><style>.x{}</style><script>alert(1)</script></head>
<body><nav><a href="/">Home</a></nav><h1>Heading</h1><p>First <b>para</b>graph with a <a href="/doc?id=1">link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre>  code
    indented</pre><div hidden>secret hidden</div><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<footer>footer junk</footer></body></html>`)
		},
		"/json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a": 1}`)
		},
		"/big": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, big)
		},
		"/huge": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			chunk := strings.Repeat("z", 1<<16)
			for range 128 { // 8 MB, past the 5 MB read cap
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		},
		"/png": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		},
		"/missing": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<h1>Not here</h1>")
		},
		"/loop": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/loop", http.StatusFound)
		},
		"/ftp": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "ftp://example.com/x", http.StatusFound)
		},
	})
	tl := Fetch(FetchOptions{AllowPrivate: true})
	tests := []struct {
		name    string
		args    map[string]any
		isErr   bool
		want    []string
		notWant []string
	}{
		{"html", map[string]any{"url": base + "/html"}, false,
			[]string{"Title: The Page", "# Heading", "First paragraph with a [link](" + base + "/doc?id=1).", "- one\n- two", "  code\n    indented", "k | v", "a | 1"},
			[]string{"alert", ".x{}", "secret hidden", "footer junk", "Home"}},
		{"json", map[string]any{"url": base + "/json"}, false, []string{`{"a": 1}`}, nil},
		{"window", map[string]any{"url": base + "/big"}, false, []string{"[characters 0–16000 of 50000; call web_fetch again with offset 16000 for more]"}, nil},
		{"next window", map[string]any{"url": base + "/big", "offset": 48000}, false, []string{"[characters 48000–50000 of 50000: the end]"}, nil},
		{"past end", map[string]any{"url": base + "/big", "offset": 60000}, false, []string{"past the end"}, nil},
		{"size cap", map[string]any{"url": base + "/huge", "offset": 5<<20 - 10}, false, []string{"only its beginning was read", "of 5242880"}, nil},
		{"binary", map[string]any{"url": base + "/png"}, true, []string{"image/png", "not a web page"}, nil},
		{"404", map[string]any{"url": base + "/missing"}, true, []string{"HTTP 404", "Not here"}, nil},
		{"redirect loop", map[string]any{"url": base + "/loop"}, true, []string{"stopped after 10 redirects"}, nil},
		{"redirect scheme", map[string]any{"url": base + "/ftp"}, true, []string{`scheme "ftp" is not supported`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, tl, tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tt.isErr, res.Text)
			}
			tooltest.CheckText(t, res.Text, tt.want, tt.notWant)
		})
	}
}

func TestFetchBadInputs(t *testing.T) {
	tl := Fetch(FetchOptions{Resolver: fakeResolver{}})
	if !tl.ReadOnly() {
		t.Fatal("web_fetch must be read-only")
	}
	tests := []struct {
		name string
		args string
		want string
	}{
		{"missing url", `{}`, `missing required field "url"`},
		{"empty url", `{"url":"  "}`, "url is empty"},
		{"wrong type", `{"url":42}`, `field "url": expected string`},
		{"no scheme", `{"url":"example.com/page"}`, "no scheme"},
		{"file scheme", `{"url":"file:///etc/passwd"}`, `scheme "file" is not supported`},
		{"gopher scheme", `{"url":"gopher://127.0.0.1:70/"}`, `scheme "gopher" is not supported`},
		{"no host", `{"url":"http:///path"}`, "no host"},
		{"unparsable", `{"url":"http://[::1"}`, "not a valid URL"},
		{"negative offset", `{"url":"http://example.com","offset":-5}`, "offset must be 0 or more"},
		{"unknown host", `{"url":"http://nowhere.invalid/"}`, "does not resolve"},
		{"credentials to loopback", `{"url":"http://user:pw@127.0.0.1/"}`, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tl.Run(context.Background(), tool.Call{Args: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("result %q, want an error naming %q", res.Text, tt.want)
			}
		})
	}
}

func TestFetchHonoursContext(t *testing.T) {
	release := make(chan struct{})
	base := pageServer(t, map[string]func(http.ResponseWriter, *http.Request){
		"/slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		},
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	tl := Fetch(FetchOptions{AllowPrivate: true})
	done := make(chan error, 1)
	go func() {
		_, err := tl.Run(ctx, tool.Call{Args: json.RawMessage(`{"url":"` + base + `/slow"}`)})
		done <- err
	}()
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled fetch = %v, want context canceled", err)
	}

	// The tool's own time cap is an error result the model can act on.
	short := newFetcher(FetchOptions{AllowPrivate: true, Timeout: 50e6})
	res, err := short.run(context.Background(), tool.Call{}, fetchParams{URL: base + "/slow"})
	if err != nil || !res.IsError || !strings.Contains(res.Text, "timed out") {
		t.Fatalf("timed-out fetch = %q, %v", res.Text, err)
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"<p>hi</p>", "<a href='x'>y</a>", "<pre>a\n\nb</pre>", "<table><td>a<td>b", "<h1><a href=/x><div>z</div></a></h1>",
		strings.Repeat("<div>", 2000), "<script>x", "<img alt=cat>", "\x00<p>\xff</p>",
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.com/a/")
	f.Fuzz(func(t *testing.T, s string) {
		pg := extract(s, base)
		if strings.Contains(pg.text, "\n\n\n") {
			t.Fatalf("more than one blank line in a row: %q", pg.text)
		}
	})
}
