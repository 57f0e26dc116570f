// Package wiretest is the test kit the three model wire clients share
// (model/openai, model/anthropic, model/responses): a conformance suite
// every wire must pass against the scripted fake on loopback (Run), and
// the plumbing their own tests repeat otherwise: encoder-versus-SDK
// comparison through a capturing transport (Captured, CheckSame), golden
// files (Golden), the 50-message history and benchmark loops (History50,
// BenchEncode, BenchParse, BenchComplete), a stream recorder and JSON
// canonical form.
//
// Each wire keeps its own goldens and the cases only it has (reasoning
// carry, base-URL forms, lanes); what every wire must do the same way lives
// here once, so a fourth wire gets it by calling Run.
//
// It is imported by tests only.
package wiretest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// update is the -update flag of every test binary that imports this kit:
// Golden rewrites the files instead of comparing.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Recorder collects a call's stream deltas in order: "t:" text, "r:"
// reasoning.
type Recorder struct{ Events []string }

// Stream returns the callbacks that record into r.
func (r *Recorder) Stream() model.Stream {
	return model.Stream{
		OnText:      func(d string) { r.Events = append(r.Events, "t:"+d) },
		OnReasoning: func(d string) { r.Events = append(r.Events, "r:"+d) },
	}
}

// Joined returns the deltas of one kind ("t:" or "r:") joined, and how many
// there were.
func (r *Recorder) Joined(prefix string) (s string, n int) {
	for _, e := range r.Events {
		if strings.HasPrefix(e, prefix) {
			s += strings.TrimPrefix(e, prefix)
			n++
		}
	}
	return s, n
}

// Canonical is raw re-encoded by encoding/json (sorted keys, no space,
// numbers as written), so two encodings of the same value compare equal.
func Canonical(t testing.TB, raw []byte) string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Recorded wraps a recorded event-stream body as the response a stream
// parser reads.
func Recorded(body []byte) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
}

// Parse is a wire's own stream parser: it reads r, handing text and
// reasoning to s as they arrive, and assembles the response.
type Parse func(r *http.Response, s model.Stream) (model.Response, error)

// Accumulate is the Parse of a wire whose stream reader is an
// accumulator, run as the wire's client runs it: newAcc makes one for the
// stream, read feeds it the response and response assembles the answer.
// A wire's tests pass its own with method expressions:
// Accumulate(newAccumulator, (*accumulator).read, (*accumulator).response).
func Accumulate[A any](newAcc func(model.Stream) A, read func(A, *http.Response) error, response func(A) model.Response) Parse {
	return func(r *http.Response, s model.Stream) (model.Response, error) {
		acc := newAcc(s)
		err := read(acc, r)
		return response(acc), err
	}
}

// ParseRecorded reads the recorded event stream in the file at path with
// parse, and returns the response with the text and the reasoning the
// stream was handed.
func ParseRecorded(t testing.TB, path string, parse Parse) (res model.Response, text, reasoning string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tb, rb strings.Builder
	res, err = parse(Recorded(body), model.Stream{OnText: func(d string) { tb.WriteString(d) }, OnReasoning: func(d string) { rb.WriteString(d) }})
	if err != nil {
		t.Fatal(err)
	}
	return res, tb.String(), rb.String()
}

// SHA256 is the hex digest the fake records for an image.
func SHA256(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// Golden compares got with the file at path, or rewrites the file under
// go test -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request differs from %s (go test -update rewrites it after review):\n--- got\n%s", path, got)
	}
}

// GoldenRequest renders what the fake received the way the golden files
// pin it: method and path, the named headers in that order, then the body
// indented (key order and values exactly as sent). Headers that vary with
// the Go runtime (the SDKs' X-Stainless-*) are left out by not naming them.
func GoldenRequest(t testing.TB, got modeltest.ChatRequest, headers ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s\n", got.Path)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\n", h, got.Header.Get(h))
	}
	b.WriteByte('\n')
	if err := json.Indent(&b, got.Raw, "", "  "); err != nil {
		t.Fatalf("indent body: %v", err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// ServeEvents answers every request with body as an event stream, until t
// ends, and returns the base URL (ending /v1) to point a client at.
func ServeEvents(t testing.TB, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body)) // the client under test sees a short body as it would a cut one
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// Items is the JSON array under key ("messages", or the Responses API's
// "input") of the body the fake recorded, one raw item each; nil when the
// body has no such member.
func Items(t testing.TB, got modeltest.ChatRequest, key string) []json.RawMessage {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(got.Raw, &body); err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if raw, ok := body[key]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	return items
}

// CheckImages fails t unless the fake recorded exactly the images want,
// in order: each one's MIME type, size and SHA-256.
func CheckImages(t testing.TB, got modeltest.ChatRequest, want ...model.Image) {
	t.Helper()
	ims := got.Images()
	ok := len(ims) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = ims[i] == modeltest.ChatImage{MIME: want[i].MIME, Bytes: len(want[i].Data), SHA256: SHA256(want[i].Data)}
	}
	if !ok {
		t.Errorf("fake recorded images %+v", ims)
	}
}
