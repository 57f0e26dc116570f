package browser

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Bounds of the per-page request log.
const (
	// DefaultNetLogSize is how many requests a page remembers; older ones
	// are dropped (and counted) first.
	DefaultNetLogSize = 500
	// MaxNetLogURL clips a logged URL (data: URLs can be megabytes).
	MaxNetLogURL = 2048
	// DefaultNetBodyBytes and MaxNetBodyBytes bound a response body that
	// NetLog includes on request.
	DefaultNetBodyBytes = 4096
	MaxNetBodyBytes     = 65536
	// MaxNetBodies bounds how many bodies one NetLog call reads.
	MaxNetBodies = 20
)

// NetEntry is one request of a page, as the network log reports it. It
// holds no headers, cookies or request bodies; a response body only when
// asked for.
type NetEntry struct {
	Seq        uint64  `json:"seq"`
	RequestID  string  `json:"requestId"`
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	Type       string  `json:"type,omitempty"`
	Status     int64   `json:"status,omitempty"`
	MimeType   string  `json:"mimeType,omitempty"`
	Bytes      float64 `json:"bytes,omitempty"` // encoded bytes received
	FromCache  bool    `json:"fromCache,omitempty"`
	Failed     string  `json:"failed,omitempty"` // network error text
	Redirected bool    `json:"redirected,omitempty"`
	Done       bool    `json:"done"`
	// DurationMs is from the request to its end, 0 while in flight.
	DurationMs float64 `json:"durationMs,omitempty"`
	Body       *string `json:"body,omitempty"`
	// BodyNote explains a missing or cut body ("binary 2048 bytes",
	// "clipped at 4096 bytes", "no longer available").
	BodyNote string `json:"bodyNote,omitempty"`

	started time.Time
}

// NetQuery selects log entries. Zero fields match everything.
type NetQuery struct {
	// Since keeps entries with Seq > Since (pass the last Seq seen to read
	// only what is new).
	Since uint64 `json:"since,omitempty"`
	// Limit keeps the newest Limit entries (default and maximum
	// DefaultNetLogSize).
	Limit int `json:"limit,omitempty"`
	// URLContains keeps entries whose URL contains it.
	URLContains string `json:"urlContains,omitempty"`
	// Types keeps these resource types (Document, XHR, Fetch, Script, …),
	// case-insensitive.
	Types []string `json:"types,omitempty"`
	// FailedOnly keeps failed requests and HTTP statuses of 400 and above.
	FailedOnly bool `json:"failedOnly,omitempty"`
	// IncludeBodies reads the response bodies of the selected finished
	// text responses (at most MaxNetBodies), each cut at MaxBodyBytes.
	IncludeBodies bool `json:"includeBodies,omitempty"`
	MaxBodyBytes  int  `json:"maxBodyBytes,omitempty"`
}

// NetLog is the answer of Page.NetLog.
type NetLog struct {
	Entries []NetEntry `json:"entries"`
	// Dropped counts the requests that fell out of the bounded log since
	// the page opened.
	Dropped uint64 `json:"dropped"`
	// Matched counts the entries the query matched before Limit cut them.
	Matched int `json:"matched"`
	// LastSeq is the newest sequence number logged (use it as Since).
	LastSeq uint64 `json:"lastSeq"`
}

// netLog is a page's bounded request log, fed by the page listener.
type netLog struct {
	mu      sync.Mutex
	size    int
	entries []*NetEntry // oldest first
	byID    map[network.RequestID]*NetEntry
	seq     uint64
	dropped uint64
}

func newNetLog(size int) *netLog {
	return &netLog{size: size, byID: make(map[network.RequestID]*NetEntry)}
}

// listen feeds every CDP event of the page to its tracker and its log.
func (p *Page) listen(ev any) {
	p.tr.handle(ev)
	p.net.handle(ev)
}

// handle runs on the target's read loop: memory only.
func (l *netLog) handle(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if prev := l.byID[ev.RequestID]; prev != nil && ev.RedirectResponse != nil {
			prev.Status = ev.RedirectResponse.Status
			prev.MimeType = ev.RedirectResponse.MimeType
			prev.Redirected = true
			prev.finish()
		}
		e := &NetEntry{RequestID: string(ev.RequestID), Type: string(ev.Type), started: time.Now()}
		if ev.Request != nil {
			e.Method = ev.Request.Method
			e.URL = clipURL(ev.Request.URL + ev.Request.URLFragment)
		}
		l.add(ev.RequestID, e)
	case *network.EventResponseReceived:
		if e := l.byID[ev.RequestID]; e != nil && ev.Response != nil {
			e.Status = ev.Response.Status
			e.MimeType = ev.Response.MimeType
			e.FromCache = ev.Response.FromDiskCache || ev.Response.FromPrefetchCache || ev.Response.FromServiceWorker
			if e.Type == "" {
				e.Type = string(ev.Type)
			}
		}
	case *network.EventLoadingFinished:
		if e := l.byID[ev.RequestID]; e != nil {
			e.Bytes = ev.EncodedDataLength
			e.finish()
		}
	case *network.EventLoadingFailed:
		if e := l.byID[ev.RequestID]; e != nil {
			e.Failed = ev.ErrorText
			if ev.BlockedReason != "" {
				e.Failed += " (blocked: " + string(ev.BlockedReason) + ")"
			}
			if e.Type == "" {
				e.Type = string(ev.Type)
			}
			e.finish()
		}
	}
}

func (e *NetEntry) finish() {
	if e.Done {
		return
	}
	e.Done = true
	e.DurationMs = float64(time.Since(e.started).Microseconds()) / 1000
}

// add appends an entry, dropping the oldest past the bound. The caller
// holds l.mu.
func (l *netLog) add(id network.RequestID, e *NetEntry) {
	l.seq++
	e.Seq = l.seq
	if len(l.entries) == l.size {
		old := l.entries[0]
		l.entries = l.entries[1:]
		if l.byID[network.RequestID(old.RequestID)] == old {
			delete(l.byID, network.RequestID(old.RequestID))
		}
		l.dropped++
	}
	l.entries = append(l.entries, e)
	l.byID[id] = e
}

func clipURL(u string) string {
	if len(u) <= MaxNetLogURL {
		return u
	}
	cut := MaxNetLogURL
	for cut > 0 && !utf8Start(u[cut]) {
		cut--
	}
	return u[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// NetLog returns the page's logged requests that match the query, oldest
// first. It answers from memory (also while a dialog is open) unless
// IncludeBodies asks for response bodies.
func (p *Page) NetLog(ctx context.Context, q NetQuery) (NetLog, error) {
	if q.Limit < 0 || q.MaxBodyBytes < 0 || q.MaxBodyBytes > MaxNetBodyBytes {
		return NetLog{}, fmt.Errorf("network log: %w", invalidf("limit must be ≥ 0 and maxBodyBytes 0..%d", MaxNetBodyBytes))
	}
	limit := q.Limit
	if limit == 0 || limit > DefaultNetLogSize {
		limit = DefaultNetLogSize
	}
	types := make(map[string]bool, len(q.Types))
	for _, t := range q.Types {
		types[strings.ToLower(t)] = true
	}
	l := p.net
	l.mu.Lock()
	var out NetLog
	out.Dropped, out.LastSeq = l.dropped, l.seq
	for _, e := range l.entries {
		if e.Seq <= q.Since ||
			(q.URLContains != "" && !strings.Contains(e.URL, q.URLContains)) ||
			(len(types) > 0 && !types[strings.ToLower(e.Type)]) ||
			(q.FailedOnly && e.Failed == "" && e.Status < 400) {
			continue
		}
		out.Entries = append(out.Entries, *e)
	}
	l.mu.Unlock()
	out.Matched = len(out.Entries)
	if len(out.Entries) > limit {
		out.Entries = out.Entries[len(out.Entries)-limit:]
	}
	if out.Entries == nil {
		out.Entries = []NetEntry{}
	}
	if q.IncludeBodies {
		max := q.MaxBodyBytes
		if max == 0 {
			max = DefaultNetBodyBytes
		}
		if err := p.readBodies(ctx, out.Entries, max); err != nil {
			return out, fmt.Errorf("network log: %w", err)
		}
	}
	return out, nil
}

// readBodies fills Body for finished responses, newest first, at most
// MaxNetBodies.
func (p *Page) readBodies(ctx context.Context, entries []NetEntry, max int) error {
	return p.Do(ctx, func(pctx context.Context) error {
		t := chromedp.FromContext(pctx).Target
		read := 0
		for i := len(entries) - 1; i >= 0; i-- {
			e := &entries[i]
			if !e.Done || e.Failed != "" || e.Redirected {
				continue
			}
			if read == MaxNetBodies {
				e.BodyNote = fmt.Sprintf("not read: at most %d bodies per call", MaxNetBodies)
				continue
			}
			read++
			res, err := cdp.Call(pctx, t, network.GetResponseBody, network.GetResponseBodyParams{RequestID: network.RequestID(e.RequestID)})
			if err != nil {
				if isProtocolError(err) {
					e.BodyNote = "no longer available"
					continue
				}
				return err
			}
			// The body arrives decoded; binary content is described, not
			// returned.
			if !textual(e.MimeType) || !utf8.Valid(res.Body) {
				e.BodyNote = fmt.Sprintf("binary %d bytes", len(res.Body))
				continue
			}
			body := string(res.Body)
			if len(body) > max {
				cut := max
				for cut > 0 && !utf8Start(body[cut]) {
					cut--
				}
				body = body[:cut]
				e.BodyNote = fmt.Sprintf("clipped at %d bytes", max)
			}
			e.Body = &body
		}
		return nil
	})
}

func textual(mime string) bool {
	m := strings.ToLower(mime)
	return strings.HasPrefix(m, "text/") || strings.Contains(m, "json") || strings.Contains(m, "xml") || strings.Contains(m, "javascript")
}
