// Package otlptest is an OTLP/HTTP trace receiver for tests: a loopback
// HTTP server that decodes POST /v1/traces bodies (protobuf, gzip or not)
// with the official OTLP proto types and keeps every span it was sent.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's attributes.
type Span struct {
	TraceID, SpanID, ParentID  string // hex; ParentID "" for a root
	Name                       string
	Kind                       tracepb.Span_SpanKind
	StartUnixNano, EndUnixNano uint64
	Attrs                      map[string]string // every value as text
	Resource                   map[string]string
	StatusCode                 tracepb.Status_StatusCode
	StatusMessage              string
	Events                     []string
}

// Receiver is a running OTLP/HTTP trace receiver.
type Receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []Span
	rejected []Span
	headers  []http.Header
	bodies   [][]byte
	requests int
	fail     func(n int) int
}

// Start serves POST /v1/traces on a loopback port until Close.
func Start() *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serve)
	r.srv = httptest.NewServer(mux)
	return r
}

// URL is the receiver's base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Receiver) Close() { r.srv.Close() }

// FailFirst makes the first request answer with status and the following
// ones succeed; the first request's spans are kept apart (Rejected).
func (r *Receiver) FailFirst(status int) {
	r.FailWith(func(n int) int {
		if n == 1 {
			return status
		}
		return 0
	})
}

// FailWith makes the n-th request (from 1) answer with fail(n) when it is
// not 0 or 200; its spans are kept apart (Rejected).
func (r *Receiver) FailWith(fail func(n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = fail
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &msg) != nil {
		http.Error(w, "want an application/x-protobuf ExportTraceServiceRequest", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	r.bodies = append(r.bodies, b)
	var got []Span
	for _, rs := range msg.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), ParentID: hex.EncodeToString(s.ParentSpanId),
					Name: s.Name, Kind: s.Kind, StartUnixNano: s.StartTimeUnixNano, EndUnixNano: s.EndTimeUnixNano,
					Attrs: attrs(s.Attributes), Resource: res, StatusCode: s.GetStatus().GetCode(), StatusMessage: s.GetStatus().GetMessage()}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				got = append(got, sp)
			}
		}
	}
	if r.fail != nil {
		if code := r.fail(r.requests); code != 0 && code != http.StatusOK {
			r.rejected = append(r.rejected, got...)
			w.WriteHeader(code)
			return
		}
	}
	r.spans = append(r.spans, got...)
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// Spans returns every span accepted so far (not those of failed requests).
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Rejected returns the spans of the requests FailWith failed.
func (r *Receiver) Rejected() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.rejected...)
}

// Headers returns the headers of every request, failed ones included.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Bodies returns the decoded (uncompressed) body of every request.
func (r *Receiver) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// Requests counts the requests that decoded.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = text(kv.Value)
	}
	return m
}

func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		s := "["
		for i, e := range x.ArrayValue.Values {
			if i > 0 {
				s += ","
			}
			s += text(e)
		}
		return s + "]"
	}
	return ""
}
