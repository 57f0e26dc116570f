package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpHTTP is the OTLP/HTTP protobuf transport under the SDK's
// otlptrace.Exporter, which turns the spans into the official OTLP proto
// messages. It replaces the SDK's otlptracehttp client, whose
// configuration package is shared with the gRPC exporter and links
// google.golang.org/grpc, its gateway and golang.org/x/net/trace, whose
// html/template pages make the linker keep every exported method of every
// linked type (cmd/delta's deps test bans them). It speaks the same wire as that
// client: POST of an ExportTraceServiceRequest as application/x-protobuf,
// gzip when asked, the same User-Agent, retries of 429, 502, 503 and 504
// (and of temporary network errors) with exponential backoff and
// Retry-After within the request timeout, and a partial success in the
// answer reported as a failed export.
type otlpHTTP struct {
	url     string
	headers map[string]string
	gzip    bool
	timeout time.Duration // one attempt; retries stop once it has elapsed
	client  *http.Client

	stop     chan struct{} // closed by Stop: in-flight requests end
	stopOnce sync.Once
}

var _ otlptrace.Client = (*otlpHTTP)(nil)

// Retry schedule: the SDK's otlptracehttp exporter with delta's settings
// (1 s first, ×1.5 per retry, capped at 5 s, each randomised by ±50 %).
const (
	otlpRetryFirst = time.Second
	otlpRetryMax   = 5 * time.Second
)

// OTLPTLS names the PEM files of the TLS settings of the OTLP/HTTP
// exporter (OTEL_EXPORTER_OTLP_CERTIFICATE, _CLIENT_CERTIFICATE,
// _CLIENT_KEY, read by internal/config). Empty fields keep the system's
// roots and no client certificate. The *Var fields name the variable each
// file came from, so a file that cannot be used is refused naming it.
type OTLPTLS struct {
	CAFile, CertFile, KeyFile string
	CAVar, CertVar, KeyVar    string
}

// tlsConfig loads the files; nil when none is set.
func (t OTLPTLS) tlsConfig() (*tls.Config, error) {
	if t.CAFile == "" && t.CertFile == "" && t.KeyFile == "" {
		return nil, nil
	}
	name := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	caVar := name(t.CAVar, "OTEL_EXPORTER_OTLP_CERTIFICATE")
	certVar := name(t.CertVar, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
	keyVar := name(t.KeyVar, "OTEL_EXPORTER_OTLP_CLIENT_KEY")
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w; set it to a readable PEM file of the CA certificates to trust", caVar, t.CAFile, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%s: no PEM certificate in it; set it to a PEM file of the CA certificates to trust", caVar, t.CAFile)
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, fmt.Errorf("a client certificate takes both %s and %s", certVar, keyVar)
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s=%s with %s=%s: %w; set them to the PEM files of the client certificate and its private key", certVar, t.CertFile, keyVar, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// newOTLPHTTP builds the transport; hc nil = a client of its own (the
// default transport's settings, with the TLS settings when given).
func newOTLPHTTP(o TracesOptions) (*otlpHTTP, error) {
	hc := o.Client
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tc, err := o.TLS.tlsConfig()
		if err != nil {
			return nil, err
		}
		if tc != nil {
			tr.TLSClientConfig = tc
		}
		hc = &http.Client{Transport: tr}
	}
	return &otlpHTTP{url: o.URL, headers: o.Headers, gzip: o.Gzip, timeout: o.Timeout, client: hc, stop: make(chan struct{})}, nil
}

func (*otlpHTTP) Start(ctx context.Context) error { return ctx.Err() }

// Stop ends any request in flight.
func (c *otlpHTTP) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.stop) })
	return ctx.Err()
}

// UploadTraces posts one ExportTraceServiceRequest, retrying what the
// OTLP specification calls retryable until the timeout has elapsed.
func (c *otlpHTTP) UploadTraces(ctx context.Context, rs []*tracepb.ResourceSpans) error {
	body, err := encodeTraceRequest(rs)
	if err != nil {
		return err
	}
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body) // writes to a bytes.Buffer do not fail
		if err := zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the call (the deferred cancel) or at Stop
		select {
		case <-ctx.Done():
		case <-c.stop:
			cancel()
		}
	}()
	start := time.Now()
	wait := otlpRetryFirst
	for {
		retry, throttle, err := c.attempt(ctx, body)
		if err == nil || !retry {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		delay := max(throttle, time.Duration(float64(wait)*(0.5+rand.Float64()))) //nolint:gosec // jitter, not a secret
		if c.timeout > 0 && time.Since(start)+throttle > c.timeout {
			return fmt.Errorf("max retry time elapsed: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case <-t.C:
		}
		wait = min(time.Duration(float64(wait)*1.5), otlpRetryMax)
	}
}

// attempt sends the body once; retry says whether another attempt may
// succeed, after at least throttle (the receiver's Retry-After).
func (c *otlpHTTP) attempt(ctx context.Context, body []byte) (retry bool, throttle time.Duration, err error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("User-Agent", "OTel OTLP Exporter Go/"+otlptrace.Version())
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req) //nolint:gosec // the URL is the operator's configured endpoint
	if err != nil {
		var ue *url.Error
		return errors.As(err, &ue) && ue.Temporary(), 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return false, 0, fmt.Errorf("read the receiver's answer: %w", err)
		}
		return false, 0, partialSuccess(resp.Header.Get("Content-Type"), b)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = "(empty)"
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("retry-able request failure: %s (body: %s)", resp.Status, msg)
	}
	return false, 0, fmt.Errorf("failed to send to %s: %s (body: %s)", c.url, resp.Status, msg)
}

// encodeTraceRequest is the protobuf encoding of an
// ExportTraceServiceRequest: its one field, resource_spans (1), repeated.
// Byte for byte what proto.Marshal of that message gives (the message
// type itself lives in a package that links gRPC).
func encodeTraceRequest(rs []*tracepb.ResourceSpans) ([]byte, error) {
	var out []byte
	for _, r := range rs {
		b, err := proto.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode spans: %w", err)
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// partialSuccess reads an ExportTraceServiceResponse (protobuf or JSON):
// an error when the receiver says it rejected spans or sent a message.
func partialSuccess(contentType string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var rejected int64
	var msg string
	switch contentType {
	case "application/x-protobuf":
		ps, err := protoField(b, 1)
		if err != nil {
			return err
		}
		for len(ps) > 0 {
			num, typ, n := protowire.ConsumeTag(ps)
			if n < 0 {
				return fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(n))
			}
			ps = ps[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				v, m := protowire.ConsumeVarint(ps)
				if m < 0 {
					return fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(m))
				}
				rejected, n = int64(v), m //nolint:gosec // int64 on the wire
			case num == 2 && typ == protowire.BytesType:
				v, m := protowire.ConsumeBytes(ps)
				if m < 0 {
					return fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(m))
				}
				msg, n = string(v), m
			default:
				n = protowire.ConsumeFieldValue(num, typ, ps)
				if n < 0 {
					return fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(n))
				}
			}
			ps = ps[n:]
		}
	case "application/json":
		var r struct {
			PartialSuccess *struct {
				RejectedSpans json.RawMessage `json:"rejectedSpans"` // int64: a string in protojson
				ErrorMessage  string          `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decode the receiver's answer: %w", err)
		}
		if r.PartialSuccess != nil {
			rejected, _ = strconv.ParseInt(strings.Trim(string(r.PartialSuccess.RejectedSpans), `"`), 10, 64)
			msg = r.PartialSuccess.ErrorMessage
		}
	default:
		return nil
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	return fmt.Errorf("OTLP partial success: %s (%d spans rejected)", msg, rejected)
}

// protoField returns the last value of the length-delimited field num of
// a message (nil when absent).
func protoField(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(l))
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(m))
			}
			out, l = v, m
		} else {
			l = protowire.ConsumeFieldValue(n, typ, b)
			if l < 0 {
				return nil, fmt.Errorf("decode the receiver's answer: %w", protowire.ParseError(l))
			}
		}
		b = b[l:]
	}
	return out, nil
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
