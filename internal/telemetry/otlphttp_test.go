package telemetry

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deltaharness/delta/internal/telemetry/otlptest"
)

// The request body is byte for byte the official ExportTraceServiceRequest
// encoding, whatever the spans hold (and however many resources).
func FuzzEncodeTraceRequest(f *testing.F) {
	f.Add("svc", "chat m", "k", "v", uint64(1_700_000_000_000_000_000), 2)
	f.Add("", "", "", "", uint64(0), 0)
	f.Add("é\x00", "turn 1", "gen_ai.usage", "\xff", uint64(1<<63), 3)
	f.Fuzz(func(t *testing.T, service, name, key, val string, at uint64, resources int) {
		var rs []*tracepb.ResourceSpans
		for i := range resources % 4 {
			rs = append(rs, &tracepb.ResourceSpans{
				Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
					Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}}}},
				ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
					TraceId: bytes.Repeat([]byte{byte(i + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(i + 2)}, 8), Name: name,
					StartTimeUnixNano: at, EndTimeUnixNano: at + 1, Kind: tracepb.Span_SPAN_KIND_CLIENT,
					Attributes: []*commonpb.KeyValue{{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(i)}}}},
					Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: val},
				}}}},
			})
		}
		got, err := encodeTraceRequest(rs)
		if err != nil {
			// Invalid UTF-8 in a string field: proto.Marshal refuses it too.
			if _, perr := proto.Marshal(&coltrace.ExportTraceServiceRequest{ResourceSpans: rs}); perr == nil {
				t.Fatalf("encode failed (%v) where proto.Marshal succeeds", err)
			}
			return
		}
		want, err := proto.Marshal(&coltrace.ExportTraceServiceRequest{ResourceSpans: rs})
		if err != nil {
			t.Fatalf("proto.Marshal failed where the encoder succeeded: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("body differs from proto.Marshal of the request:\n got %x\nwant %x", got, want)
		}
	})
}

// A 503 is retried (after the backoff) within the request timeout, and
// the run goes through on the second attempt.
func TestTracesRetryA503(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	rcv := otlptest.Start()
	defer rcv.Close()
	rcv.FailFirst(http.StatusServiceUnavailable)
	simulatedRun(t, s, "run-a", time.UnixMilli(1_700_000_000_000))
	x := newTraces(t, s, rcv.URL(), func(o *TracesOptions) { o.Timeout = 10 * time.Second })
	if err := x.Flush(ctx); err != nil {
		t.Fatalf("flush with one 503 then a 200: %v", err)
	}
	if rcv.Requests() != 2 || len(rcv.Spans()) != 6 || len(rcv.Rejected()) != 6 {
		t.Fatalf("%d requests, %d spans accepted, %d refused: want 2, 6, 6", rcv.Requests(), len(rcv.Spans()), len(rcv.Rejected()))
	}
	if o, _ := s.TraceOutbox(ctx); o.Pending != 0 {
		t.Fatalf("the cursor did not pass the run: %+v", o)
	}
}

// A receiver that answers 200 with a partial success (spans rejected) has
// not taken the round: the cursor stays.
func TestTracesPartialSuccessIsAFailure(t *testing.T) {
	for _, tc := range []struct {
		ctype string
		body  func() []byte
	}{
		{"application/x-protobuf", func() []byte {
			b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{PartialSuccess: &coltrace.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "quota"}})
			return b
		}},
		{"application/json", func() []byte { return []byte(`{"partialSuccess":{"rejectedSpans":"3","errorMessage":"quota"}}`) }},
	} {
		t.Run(tc.ctype, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				_, _ = w.Write(tc.body())
			}))
			defer srv.Close()
			simulatedRun(t, s, "run-a", time.UnixMilli(1_700_000_000_000))
			x := newTraces(t, s, srv.URL, nil)
			err := x.Flush(ctx)
			if err == nil || !strings.Contains(err.Error(), "quota (3 spans rejected)") {
				t.Fatalf("flush against a partial success: %v", err)
			}
			if o, _ := s.TraceOutbox(ctx); o.Traced != 0 || o.Pending != 1 {
				t.Fatalf("a partial success moved the cursor: %+v", o)
			}
		})
	}
}

// OTEL_EXPORTER_OTLP_CERTIFICATE and the client certificate pair: the
// exporter trusts the receiver's CA from the file and presents its
// certificate; a missing file refuses to start.
func TestTracesTLSFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var mu sync.Mutex
	var peers int
	var agent string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers, agent = len(r.TLS.PeerCertificates), r.Header.Get("User-Agent")
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	writePEM(t, ca, "CERTIFICATE", srv.Certificate().Raw)
	cert, key := clientCert(t, dir)

	s := openStore(t)
	simulatedRun(t, s, "run-a", time.UnixMilli(1_700_000_000_000))
	x := newTraces(t, s, srv.URL, func(o *TracesOptions) { o.TLS = OTLPTLS{CAFile: ca, CertFile: cert, KeyFile: key} })
	if err := x.Flush(ctx); err != nil {
		t.Fatalf("flush over TLS with the CA file and a client certificate: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if peers != 1 || !strings.HasPrefix(agent, "OTel OTLP Exporter Go/") {
		t.Fatalf("receiver saw %d client certificates, User-Agent %q", peers, agent)
	}

	// Each refusal names the variable to fix, as the boot error shows it.
	for name, tt := range map[string]struct {
		tls  OTLPTLS
		want string
	}{
		"missing CA file":   {OTLPTLS{CAFile: filepath.Join(dir, "nope.pem"), CAVar: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"}, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE=" + filepath.Join(dir, "nope.pem")},
		"CA file not PEM":   {OTLPTLS{CAFile: key + ".txt", CAVar: "OTEL_EXPORTER_OTLP_CERTIFICATE"}, "OTEL_EXPORTER_OTLP_CERTIFICATE=" + key + ".txt: no PEM certificate"},
		"certificate alone": {OTLPTLS{CertFile: cert, CertVar: "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"}, "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
		"key not a key":     {OTLPTLS{CertFile: cert, KeyFile: cert, CertVar: "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", KeyVar: "OTEL_EXPORTER_OTLP_CLIENT_KEY"}, "OTEL_EXPORTER_OTLP_CLIENT_KEY=" + cert},
	} {
		if name == "CA file not PEM" {
			_ = os.WriteFile(tt.tls.CAFile, []byte("not pem"), 0o600)
		}
		_, err := NewTraces(ctx, TracesOptions{URL: srv.URL + "/v1/traces", Store: s, TLS: tt.tls})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewTraces = %v, want a refusal saying %q", name, err, tt.want)
		}
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientCert writes a self-signed client certificate and its key.
func clientCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	writePEM(t, cert, "CERTIFICATE", der)
	writePEM(t, key, "PRIVATE KEY", kd)
	return cert, key
}
