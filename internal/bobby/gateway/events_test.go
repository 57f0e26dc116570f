package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func collect(t *testing.T, s *eventStore, session, stream string, index int) ([]string, error) {
	t.Helper()
	var out []string
	for d, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			return out, err
		}
		out = append(out, string(d))
	}
	return out, nil
}

// kept reads every record a session's GET stream still keeps.
func kept(t *testing.T, s *eventStore, session string) []string {
	t.Helper()
	first, _ := s.gap(session, "alice", "", -1)
	got, err := collect(t, s, session, "", first-1)
	if err != nil {
		t.Fatalf("read what %s keeps: %v", session, err)
	}
	return got
}

func TestEventStoreBounds(t *testing.T) {
	ctx := context.Background()
	alice := func(context.Context) string { return "alice" }
	s := newEventStore(MaxEventRecords, maxSessionEventBytes, maxEventBytes)
	s.ownerOf = alice
	if err := s.Open(ctx, "S", ""); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := s.Append(ctx, "S", "", []byte(fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name        string
		index       int
		n           int
		first, last string
		purged      bool
	}{
		{name: "from the start, with records dropped", index: -1, purged: true},
		{name: "resume at the oldest kept", index: 43, n: 256, first: "r44", last: "r299"},
		{name: "resume in the middle", index: 290, n: 9, first: "r291", last: "r299"},
		{name: "resume at the end", index: 299, n: 0},
		{name: "resume before what is kept", index: 42, purged: true},
		{name: "resume from the start", index: 0, purged: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, s, "S", "", tt.index)
			if tt.purged {
				if !errors.Is(err, mcp.ErrEventsPurged) || len(got) != 0 {
					t.Fatalf("After(%d) = %d records, %v; want ErrEventsPurged and nothing", tt.index, len(got), err)
				}
				return
			}
			if err != nil || len(got) != tt.n {
				t.Fatalf("After(%d) = %d records, %v; want %d", tt.index, len(got), err, tt.n)
			}
			if tt.n > 0 && (got[0] != tt.first || got[len(got)-1] != tt.last) {
				t.Errorf("After(%d) = %s … %s, want %s … %s", tt.index, got[0], got[len(got)-1], tt.first, tt.last)
			}
		})
	}
	if first, gone := s.gap("S", "alice", "", 42); !gone || first != 44 {
		t.Errorf("gap(42) = %d %v, want 44 true", first, gone)
	}
	if first, gone := s.gap("S", "alice", "", -1); !gone || first != 44 {
		t.Errorf("gap(-1) = %d %v, want 44 true", first, gone)
	}
	if _, gone := s.gap("S", "alice", "", 43); gone {
		t.Error("gap(43) reported a gap")
	}
	if _, gone := s.gap("S", "bob", "", 0); gone {
		t.Error("gap answered for another principal's session")
	}
	if _, err := collect(t, s, "nope", "", -1); err == nil {
		t.Error("After on an unknown session succeeded")
	}
	if err := s.Append(ctx, "S", "never-opened", []byte("x")); err == nil {
		t.Error("Append to a stream never opened succeeded")
	}

	// The session cap drops finished request streams before the GET stream.
	small := newEventStore(MaxEventRecords, 4096, maxEventBytes)
	small.ownerOf = alice
	_ = small.Open(ctx, "S", "")
	_ = small.Append(ctx, "S", "", []byte("get-record"))
	for i := range 20 {
		id := fmt.Sprint(i + 1)
		_ = small.Open(ctx, "S", id)
		if err := small.Append(ctx, "S", id, []byte(strings.Repeat("x", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	if _, b := small.stats(); b > 4096 {
		t.Errorf("session keeps %d bytes, cap 4096", b)
	}
	if got, err := collect(t, small, "S", "", -1); err != nil || len(got) != 1 {
		t.Errorf("GET stream after eviction = %v, %v; want its one record", got, err)
	}
	if _, err := collect(t, small, "S", "1", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resume of an evicted request stream = %v, want ErrEventsPurged", err)
	}
	if got, err := collect(t, small, "S", "20", -1); err != nil || len(got) != 1 {
		t.Errorf("newest request stream = %d records, %v", len(got), err)
	}

	// The store cap takes from the session keeping the most.
	total := newEventStore(MaxEventRecords, 1<<20, 8192)
	total.ownerOf = alice
	for _, sid := range []string{"A", "B"} {
		_ = total.Open(ctx, sid, "")
	}
	for range 6 {
		_ = total.Append(ctx, "A", "", []byte(strings.Repeat("a", 1000)))
	}
	for range 6 {
		_ = total.Append(ctx, "B", "", []byte(strings.Repeat("b", 1000)))
	}
	if _, b := total.stats(); b > 8192 {
		t.Errorf("store keeps %d bytes, cap 8192", b)
	}
	a, b := kept(t, total, "A"), kept(t, total, "B")
	if len(a) == 0 || len(b) == 0 || len(a)+len(b) > 8 {
		t.Errorf("kept A=%d B=%d records; want both sessions kept, 8 at most", len(a), len(b))
	}

	if err := s.SessionClosed(ctx, "S"); err != nil {
		t.Fatal(err)
	}
	if n, b := s.stats(); n != 0 || b != 0 {
		t.Errorf("after SessionClosed: %d sessions, %d bytes", n, b)
	}
}

func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"_0", "3_12", "", "_", "a_b", "1_2_3", "_-1", "x_99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		stream, n, ok := parseEventID(id)
		if !ok {
			return
		}
		// What parses names a stream without "_" and an index >= 0, and the
		// transport's own spelling of it parses back to the same.
		s2, n2, ok2 := parseEventID(fmt.Sprintf("%s_%d", stream, n))
		if n < 0 || strings.Contains(stream, "_") || !ok2 || s2 != stream || n2 != n {
			t.Errorf("parseEventID(%q) = %q %d", id, stream, n)
		}
	})
}

// rawMCP is a hand-driven streamable HTTP client: the test sees the SSE
// stream itself (event ids, replay), which the SDK client hides.
type rawMCP struct {
	t       *testing.T
	base    string
	token   string
	session string
}

func (c *rawMCP) request(method, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(testCtx(c.t), method, c.base+MCPPath, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *rawMCP) initialize() {
	c.t.Helper()
	resp := c.request(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	_, _ = io.Copy(io.Discard, resp.Body) // drained only so the connection is reused
	resp.Body.Close()
	c.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || c.session == "" {
		c.t.Fatalf("initialize = %s, session %q", resp.Status, c.session)
	}
	resp = c.request(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	_, _ = io.Copy(io.Discard, resp.Body) // drained only so the connection is reused
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized = %s", resp.Status)
	}
}

// reconnect opens the GET stream again. The server releases the previous
// one when it notices the disconnect, and answers 409 until then.
func (c *rawMCP) reconnect(hdr map[string]string) *http.Response {
	c.t.Helper()
	ctx := testCtx(c.t)
	for {
		resp := c.request(http.MethodGet, "", hdr)
		if resp.StatusCode != http.StatusConflict {
			return resp
		}
		resp.Body.Close()
		select {
		case <-ctx.Done():
			c.t.Fatal("the previous GET stream was never released")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type sseEvent struct{ id, data string }

// readSSE sends the events of r (comments skipped) to the returned channel.
func readSSE(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 512)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.id != "" || ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id:"):
				ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "data:"):
				ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return ch
}

func serverSession(t *testing.T, g *Gateway, id string) *mcp.ServerSession {
	t.Helper()
	var found *mcp.ServerSession
	g.forEachClient(func(cs *clientSession) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		for _, ss := range cs.mcpSess {
			if ss.ID() == id {
				found = ss
			}
		}
	})
	if found == nil {
		t.Fatalf("no server session %s", id)
	}
	return found
}

func notifyProgress(t *testing.T, ss *mcp.ServerSession, msg string) {
	t.Helper()
	if err := ss.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: "p", Message: msg}); err != nil {
		t.Fatalf("notify %s: %v", msg, err)
	}
}

// untilMarker reads events up to the one whose data carries marker and
// returns those before it.
func untilMarker(t *testing.T, ch <-chan sseEvent, marker string) []sseEvent {
	t.Helper()
	var got []sseEvent
	for ev := range ch {
		if strings.Contains(ev.data, `"message":"`+marker+`"`) {
			return got
		}
		got = append(got, ev)
	}
	t.Fatalf("stream ended before %s (after %d events)", marker, len(got))
	return nil
}

// TestEventReplayOverHTTP: notifications sent while no GET stream is open
// wait in the bounded store; a GET replays the last 256 of them, a
// reconnect with Last-Event-ID resumes exactly after it, and one older than
// what is kept is refused with a JSON error saying what to do.
func TestEventReplayOverHTTP(t *testing.T) {
	g, base := httpGateway(t)
	c := &rawMCP{t: t, base: base, token: "alice-token"}
	c.initialize()
	ss := serverSession(t, g, c.session)
	for i := range 300 {
		notifyProgress(t, ss, fmt.Sprintf("n%d", i))
	}

	get := c.request(http.MethodGet, "", nil)
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET = %s", get.Status)
	}
	events := readSSE(get.Body)
	notifyProgress(t, ss, "marker1") // live, after the replay
	replayed := untilMarker(t, events, "marker1")
	get.Body.Close()
	if len(replayed) != MaxEventRecords {
		t.Fatalf("a GET replayed %d records, want %d", len(replayed), MaxEventRecords)
	}
	if !strings.Contains(replayed[0].data, `"n44"`) || !strings.Contains(replayed[len(replayed)-1].data, `"n299"`) {
		t.Errorf("replayed %s … %s, want n44 … n299", replayed[0].data, replayed[len(replayed)-1].data)
	}
	// Event ids name the stream and the index: the 45th record is index 44.
	firstID := replayed[0].id
	if stream, idx, ok := parseEventID(firstID); !ok || stream != "" || idx != 44 {
		t.Fatalf("first replayed id %q", firstID)
	}

	// Resume after n290: n291 … n299 and marker1, then live.
	resume := c.reconnect(map[string]string{"Last-Event-ID": "_290"})
	if resume.StatusCode != http.StatusOK {
		t.Fatalf("resume GET = %s", resume.Status)
	}
	events = readSSE(resume.Body)
	notifyProgress(t, ss, "marker2")
	got := untilMarker(t, events, "marker2")
	resume.Body.Close()
	if len(got) != 10 || !strings.Contains(got[0].data, `"n291"`) || !strings.Contains(got[9].data, `"marker1"`) {
		var ds []string
		for _, e := range got {
			ds = append(ds, e.data)
		}
		t.Fatalf("resume after _290 = %d events %v, want n291 … n299, marker1", len(got), ds)
	}

	// Older than what is kept: a 400 with a JSON error, never a silent hole.
	old := c.reconnect(map[string]string{"Last-Event-ID": "_10"})
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err := json.NewDecoder(old.Body).Decode(&body)
	old.Body.Close()
	if old.StatusCode != http.StatusBadRequest || err != nil || body.Error.Code != "eventsPurged" ||
		!strings.Contains(body.Error.Message, "256") || !strings.Contains(body.Error.Message, "without Last-Event-ID") {
		t.Fatalf("stale resume = %s %+v (%v)", old.Status, body, err)
	}
	// Another principal learns nothing about alice's session.
	bob := &rawMCP{t: t, base: base, token: "bob-token", session: c.session}
	other := bob.request(http.MethodGet, "", map[string]string{"Last-Event-ID": "_10"})
	other.Body.Close()
	if other.StatusCode != http.StatusForbidden {
		t.Errorf("bob resuming alice's session = %s, want 403", other.Status)
	}
}

// cuttableProxy forwards to a gateway; Cut drops every client connection,
// and while Hold is set a GET waits until Release.
type cuttableProxy struct {
	srv  *httptest.Server
	gets chan string // the Last-Event-ID of each GET that arrives
	mu   sync.Mutex
	gate chan struct{}
}

func newCuttableProxy(t *testing.T, base string) *cuttableProxy {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	p := &cuttableProxy{gets: make(chan string, 16)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.gets <- r.Header.Get("Last-Event-ID")
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			if gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *cuttableProxy) hold() {
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
}

func (p *cuttableProxy) release() {
	p.mu.Lock()
	close(p.gate)
	p.gate = nil
	p.mu.Unlock()
}

func nextGet(t *testing.T, p *cuttableProxy) string {
	t.Helper()
	select {
	case id := <-p.gets:
		return id
	case <-testCtx(t).Done():
		t.Fatal("the bridge never opened its GET stream")
		return ""
	}
}

// TestBridgeResumesEventStream: a bridge whose GET stream drops resumes it
// with Last-Event-ID; when the server no longer keeps what it missed, the
// bridge tells the client to list tools again and receives the records
// kept (the last 256) instead of giving up on notifications.
func TestBridgeResumesEventStream(t *testing.T) {
	g, base := httpGateway(t)
	proxy := newCuttableProxy(t, base)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, proxy.srv.URL+MCPPath, BridgeOptions{Token: "alice-token"}, inR, outW, slog.New(slog.DiscardHandler))
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	until := func(what string) []string {
		t.Helper()
		var before []string
		for l := range lines {
			if strings.Contains(l, what) {
				return before
			}
			before = append(before, l)
		}
		t.Fatalf("the bridge never wrote %s", what)
		return nil
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bridged","version":"1"}}}`)
	until(`"id":1`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if id := nextGet(t, proxy); id != "" {
		t.Fatalf("first GET carried Last-Event-ID %q", id)
	}
	var ss *mcp.ServerSession
	g.forEachClient(func(cs *clientSession) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if len(cs.mcpSess) > 0 {
			ss = cs.mcpSess[0]
		}
	})
	if ss == nil {
		t.Fatal("no MCP session")
	}
	notifyProgress(t, ss, "live")
	until(`"live"`)

	// The stream drops; the bridge's reconnect waits at the proxy while the
	// server sends 300 notifications, more than a stream keeps.
	proxy.hold()
	proxy.srv.CloseClientConnections()
	if id := nextGet(t, proxy); id == "" {
		t.Fatal("the reconnect carried no Last-Event-ID")
	}
	for i := range 300 {
		notifyProgress(t, ss, fmt.Sprintf("n%d", i))
	}
	proxy.release()
	if id := nextGet(t, proxy); id != "" {
		t.Fatalf("after the refused resume the bridge sent Last-Event-ID %q, want a fresh GET", id)
	}
	// The replay ends with n299 (records keep their order).
	got := until(`"n299"`)
	listChanged, n, first := false, 1, ""
	for _, l := range got {
		switch {
		case strings.Contains(l, "notifications/tools/list_changed"):
			listChanged = true
		case strings.Contains(l, `"message":"n`):
			if n++; first == "" {
				first = l
			}
		}
	}
	if !listChanged || n != MaxEventRecords || !strings.Contains(first, `"n44"`) {
		t.Errorf("after the refused resume: list_changed %v, %d records from %s (want %d, n44 … n299)", listChanged, n, first, MaxEventRecords)
	}
}
