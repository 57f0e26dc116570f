package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropicsse "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	openaisse "github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deltaharness/delta/internal/model"
)

// stdString is s as encoding/json writes it, with or without HTML escaping.
func stdString(t testing.TB, s string, escapeHTML bool) string {
	t.Helper()
	return stdEncode(t, s, escapeHTML)
}

func stdEncode(t testing.TB, v any, escapeHTML bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %q: %v", v, err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var stringCases = []string{
	"",
	"plain ascii",
	"quote \" backslash \\ slash /",
	"\b\f\n\r\t \x00 \x01 \x1f \x7f",
	"<b>&amp;</b>",
	"\u2028 \u2029 \u2027 \u202a",
	"bad \xff \xfe\xfd end \xc3",
	"é 日本 🎉 \U0010ffff",
	"\xe2\x80",
}

// TestArgumentsText: blank arguments are echoed as an empty object, any
// others as given.
func TestArgumentsText(t *testing.T) {
	for raw, want := range map[string]string{"": "{}", " \n\t": "{}", `{"a":1}`: `{"a":1}`, ` {"a":1} `: ` {"a":1} `, "not json": "not json"} {
		if got := model.ArgumentsText(json.RawMessage(raw)); got != want {
			t.Errorf("ArgumentsText(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestToolMembers: a tool's definition is its schema's members; a tool
// without a name has none.
func TestToolMembers(t *testing.T) {
	if _, err := model.ToolMembers(model.ToolSpec{Parameters: json.RawMessage(`{}`)}); err == nil || err.Error() != "tool name is required" {
		t.Errorf("nameless tool: err = %v", err)
	}
	members, err := model.ToolMembers(model.ToolSpec{Name: "t", Parameters: json.RawMessage(`{"b":1,"a":2}`)})
	if got := string(model.AppendObject(nil, members, false, true)); err != nil || got != `{"a":2,"b":1}` {
		t.Errorf("ToolMembers = %s, %v", got, err)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		for _, esc := range []bool{true, false} {
			if got, want := string(model.AppendString([]byte("x"), s, esc)), "x"+stdString(t, s, esc); got != want {
				t.Errorf("AppendString(%q, %v) = %s, want %s", s, esc, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, esc := range []bool{true, false} {
			if got, want := string(model.AppendString(nil, s, esc)), stdString(t, s, esc); got != want {
				t.Fatalf("AppendString(%q, %v) = %s, want %s", s, esc, got, want)
			}
		}
	})
}

var compactCases = []string{
	`{}`,
	` { "a" : [ 1 , 2.50 , -0.1e3 , true , false , null ] ,` + "\n\t\r" + ` "b" : { } } `,
	`"a string with  spaces, \" quotes \\ and \u00e9 escapes"`,
	`{"html":"<b>&</b>","ls":"` + "\u2028\u2029" + `","raw":"` + "\xff" + `"}`,
	`[ "<" , ">" , "&" ]`,
	"\n 12 \n",
	`{"nested":{"deep":[[[{"x":"y  z"}]]]}}`,
}

func TestAppendCompactMatchesEncodingJSON(t *testing.T) {
	for _, raw := range compactCases {
		for _, esc := range []bool{true, false} {
			// encoding/json compacts a json.RawMessage it writes, escaping
			// HTML as the encoder is told to: what both SDKs do to one.
			want := stdEncode(t, json.RawMessage(raw), esc)
			if got := string(model.AppendCompact([]byte("x"), []byte(raw), esc)); got != "x"+want {
				t.Errorf("AppendCompact(%q, %v) = %s, want x%s", raw, esc, got, want)
			}
		}
	}
}

func FuzzAppendCompact(f *testing.F) {
	for _, raw := range compactCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // a precondition: callers pass valid JSON only
		}
		for _, esc := range []bool{true, false} {
			want := stdEncode(t, json.RawMessage(raw), esc)
			if got := string(model.AppendCompact(nil, raw, esc)); got != want {
				t.Fatalf("AppendCompact(%q, %v) = %s, want %s", raw, esc, got, want)
			}
		}
	})
}

func TestToolSchemaAndAppendObject(t *testing.T) {
	tests := []struct {
		raw      string
		want     string // AppendObject of the members; "" = error
		compact  string
		wantErrs string
	}{
		{raw: `{"type":"object","properties":{"a" : 1},"$defs":{},"Z":[ ]}`, want: `{"$defs":{},"Z":[ ],"properties":{"a" : 1},"type":"object"}`,
			compact: `{"$defs":{},"Z":[],"properties":{"a":1},"type":"object"}`},
		{raw: `{"b":1,"a":2,"b":3}`, want: `{"a":2,"b":3}`, compact: `{"a":2,"b":3}`},
		{raw: `{"<k>":"<v>"}`, want: `{"<k>":"<v>"}`, compact: `{"<k>":"<v>"}`},
		{raw: `{}`, want: `{}`, compact: `{}`},
		{raw: ``, want: `{"properties":{},"type":"object"}`, compact: `{"properties":{},"type":"object"}`},
		{raw: `[1]`, wantErrs: "must be a JSON object"},
		{raw: `null`, wantErrs: "not null"},
		{raw: `{"a":`, wantErrs: "must be a JSON object"},
	}
	for _, tt := range tests {
		members, err := model.ToolSchema(json.RawMessage(tt.raw))
		if tt.wantErrs != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrs) {
				t.Errorf("ToolSchema(%s) err = %v, want %q", tt.raw, err, tt.wantErrs)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ToolSchema(%s): %v", tt.raw, err)
		}
		if got := string(model.AppendObject(nil, members, false, false)); got != tt.want {
			t.Errorf("AppendObject(%s) = %s, want %s", tt.raw, got, tt.want)
		}
		if got := string(model.AppendObject(nil, members, false, true)); got != tt.compact {
			t.Errorf("AppendObject(%s, compact) = %s, want %s", tt.raw, got, tt.compact)
		}
		// The order and bytes encoding/json gives the same map.
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(tt.raw), &m)
		if tt.raw == "" {
			m = map[string]json.RawMessage{"type": json.RawMessage(`"object"`), "properties": json.RawMessage(`{}`)}
		}
		if got, want := string(model.AppendObject(nil, members, true, true)), stdEncode(t, m, true); got != want {
			t.Errorf("AppendObject(%s, html) = %s, encoding/json %s", tt.raw, got, want)
		}
	}
}

// events reads body with ReadStream to its end.
func events(body string) (got []string, err error) {
	res := &http.Response{Body: io.NopCloser(strings.NewReader(body))}
	err = model.ReadStream(res, func(data []byte) error {
		got = append(got, string(data))
		return nil
	}, func() bool { return false }, func() bool { return true })
	return got, err
}

// sdkEvents reads body with one SDK's event-stream decoder, keeping the
// events that carry data.
func sdkEvents(body string, anthropic bool) (got []string, err error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
	type decoder interface {
		Next() bool
		Err() error
	}
	var dec decoder
	var data func() []byte
	if anthropic {
		d := anthropicsse.NewDecoder(res)
		dec, data = d, func() []byte { return d.Event().Data }
	} else {
		d := openaisse.NewDecoder(res)
		dec, data = d, func() []byte { return d.Event().Data }
	}
	for dec.Next() {
		if d := data(); len(d) > 0 {
			got = append(got, string(d))
		}
	}
	return got, dec.Err()
}

var streamCases = []string{
	"",
	"data: one\n\n",
	"data: one\r\n\r\ndata: two\n\n",
	"data:no space\n\ndata:  two spaces\n\n",
	"data: a\ndata: b\n\n",
	"event: ping\n\n",
	"event: x\ndata: y\nid: 3\nretry: 10\n\n",
	": comment\n\ndata: after\n\n",
	"data\n\n",
	"data:\n\n",
	"data: last without blank line",
	"data: last\n",
	"\n\n\ndata: x\n\n\n",
	"datum: nope\ndata: yes\n\n",
	"data: {\"type\":\"a\"}\n\ndata: [DONE]\n\n",
	"data: \xff\xfe\n\n",
}

func TestReadStreamMatchesSDKDecoders(t *testing.T) {
	for _, body := range streamCases {
		checkStream(t, body)
	}
}

func FuzzReadStream(f *testing.F) {
	for _, body := range streamCases {
		f.Add(body)
	}
	f.Fuzz(checkStream)
}

func checkStream(t *testing.T, body string) {
	got, err := events(body)
	for _, anthropic := range []bool{false, true} {
		want, sdkErr := sdkEvents(body, anthropic)
		if (err == nil) != (sdkErr == nil) || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("body %q: events %q, %v; SDK (anthropic %v) %q, %v", body, got, err, anthropic, want, sdkErr)
		}
	}
}

func TestReadStreamStopsAndFinishes(t *testing.T) {
	body := "data: 1\n\ndata: 2\n\ndata: 3\n\n"
	tests := []struct {
		name     string
		stopAt   int // events after which stop reports true; 0 = never
		finished bool
		want     int
		wantErr  error
	}{
		{"reads to the end", 0, true, 3, nil},
		{"stops early", 2, true, 2, nil},
		{"an unfinished end is incomplete", 0, false, 3, model.ErrIncompleteStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			res := &http.Response{Body: io.NopCloser(strings.NewReader(body))}
			err := model.ReadStream(res, func([]byte) error { n++; return nil },
				func() bool { return tt.stopAt > 0 && n >= tt.stopAt }, func() bool { return tt.finished })
			if n != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("%d events, err %v; want %d, %v", n, err, tt.want, tt.wantErr)
			}
		})
	}
	boom := errors.New("boom")
	res := &http.Response{Body: io.NopCloser(strings.NewReader(body))}
	if err := model.ReadStream(res, func([]byte) error { return boom }, func() bool { return false }, func() bool { return true }); err != boom {
		t.Errorf("apply's error: got %v", err)
	}
	if err := model.ReadStream(&http.Response{}, nil, nil, nil); !errors.Is(err, model.ErrIncompleteStream) {
		t.Errorf("no body: %v", err)
	}
	long := "data: " + strings.Repeat("x", 33<<20) + "\n\n"
	if _, err := events(long); err == nil || errors.Is(err, model.ErrIncompleteStream) {
		t.Errorf("a line over 32 MiB: err = %v, want a read error", err)
	}
}

func TestInterrupted(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()

	if err := model.Interrupted(live, live, "op", time.Second); err != nil {
		t.Errorf("live: %v", err)
	}
	err := model.Interrupted(cancelled, cancelled, "chat completion", time.Second)
	var me *model.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &me) || !strings.HasPrefix(err.Error(), "chat completion: ") {
		t.Errorf("caller cancelled: %v, want a plain context error naming the call", err)
	}
	err = model.Interrupted(live, expired, "op", 90*time.Second)
	if !errors.As(err, &me) || !me.Retriable || !errors.Is(err, context.DeadlineExceeded) || me.Message != "no complete answer within 1m30s" {
		t.Errorf("call timed out: %v", err)
	}
}

func TestStatusAndNetworkErrors(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		status    int
		msg       string
		wantMsg   string
		retriable bool
	}{
		{429, "slow down", "slow down", true},
		{503, "  ", "Service Unavailable", true},
		{529, "Overloaded", "Overloaded", true},
		{400, "bad key sk-secret here", "bad key [redacted] here", false},
		{401, strings.Repeat("é", 600), strings.Repeat("é", 499) + "…", false},
	}
	for _, tt := range tests {
		e := model.StatusError(tt.status, tt.msg, "sk-secret", cause)
		if e.Status != tt.status || e.Message != tt.wantMsg || e.Retriable != tt.retriable || !errors.Is(e, cause) {
			t.Errorf("StatusError(%d, %q) = %+v", tt.status, tt.msg, e)
		}
	}
	e := model.NetworkError(errors.New("dial sk-secret refused"), "sk-secret")
	if e.Status != 0 || !e.Retriable || e.Message != "dial [redacted] refused" {
		t.Errorf("NetworkError = %+v", e)
	}
	ctx, cancel := model.CallContext(context.Background(), 0)
	cancel()
	if ctx.Err() != nil {
		t.Error("CallContext without a timeout must leave the context alone")
	}
	ctx, cancel = model.CallContext(context.Background(), time.Hour)
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("CallContext with a timeout set no deadline")
	}
}

func TestToolDefs(t *testing.T) {
	var d model.ToolDefs
	calls := 0
	encode := func(dst []byte, t model.ToolSpec) ([]byte, error) {
		calls++
		if t.Name == "" {
			return dst, errors.New("tool name is required")
		}
		return append(dst, `{"name":"`+t.Name+`","d":"`+t.Description+`","p":`+string(t.Parameters)+`}`...), nil
	}
	spec := model.ToolSpec{Name: "read", Description: "Read.", Parameters: json.RawMessage(`{"a":1}`)}
	first, err := d.Append([]byte("["), spec, 0, encode)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := d.Append([]byte("["), spec, 0, encode)
	if string(first) != `[{"name":"read","d":"Read.","p":{"a":1}}` || string(again) != string(first) || calls != 1 {
		t.Errorf("first %s, again %s, %d encodings", first, again, calls)
	}
	// Any byte of the spec, or the variant, is another definition, moving
	// a byte from one part to the next too.
	for _, other := range []struct {
		spec    model.ToolSpec
		variant byte
	}{
		{model.ToolSpec{Name: "read", Description: "Read.", Parameters: json.RawMessage(`{"a":2}`)}, 0},
		{model.ToolSpec{Name: "rea", Description: "dRead.", Parameters: json.RawMessage(`{"a":1}`)}, 0},
		{model.ToolSpec{Name: "read", Description: "Read.{", Parameters: json.RawMessage(`"a":1}`)}, 0},
		{spec, 1},
	} {
		before := calls
		if _, err := d.Append(nil, other.spec, other.variant, encode); err != nil || calls != before+1 {
			t.Errorf("%+v/%d: memoized as another tool", other.spec, other.variant)
		}
	}
	// A failure is returned and not kept.
	for range 2 {
		before := calls
		if out, err := d.Append([]byte("x"), model.ToolSpec{}, 0, encode); err == nil || string(out) != "x" || calls != before+1 {
			t.Errorf("nameless tool: %s, %v", out, err)
		}
	}
	// A nil memo keeps nothing.
	var none *model.ToolDefs
	before := calls
	_, _ = none.Append(nil, spec, 0, encode)
	_, _ = none.Append(nil, spec, 0, encode)
	if calls != before+2 {
		t.Errorf("nil ToolDefs memoized")
	}
}

// TestToolDefsBounded: past its bound the memo starts over instead of
// growing, and keeps answering right.
func TestToolDefsBounded(t *testing.T) {
	var d model.ToolDefs
	encode := func(dst []byte, t model.ToolSpec) ([]byte, error) { return append(dst, t.Name...), nil }
	for i := range 3000 {
		name := fmt.Sprint(i)
		if out, _ := d.Append(nil, model.ToolSpec{Name: name}, 0, encode); string(out) != name {
			t.Fatalf("tool %d: %s", i, out)
		}
	}
	calls := 0
	counting := func(dst []byte, t model.ToolSpec) ([]byte, error) { calls++; return encode(dst, t) }
	_, _ = d.Append(nil, model.ToolSpec{Name: "0"}, 0, counting)
	if calls != 1 {
		t.Errorf("an early tool was still memoized after 3000 others: the memo does not start over")
	}
}

// TestToolDefsConcurrent: calls of one client share the memo.
func TestToolDefsConcurrent(t *testing.T) {
	var d model.ToolDefs
	encode := func(dst []byte, t model.ToolSpec) ([]byte, error) { return append(dst, t.Name...), nil }
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				name := fmt.Sprintf("t%d", (g+i)%20)
				if out, _ := d.Append(nil, model.ToolSpec{Name: name}, 0, encode); string(out) != name {
					t.Errorf("got %s, want %s", out, name)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestToolDefsJoin(t *testing.T) {
	var d model.ToolDefs
	encode := func(dst []byte, t model.ToolSpec) ([]byte, error) {
		if t.Name == "bad" {
			return dst, errors.New("parameters must be a JSON object")
		}
		return append(dst, `"`+t.Name+`"`...), nil
	}
	if out, err := d.Join(nil, 0, encode); out != nil || err != nil {
		t.Errorf("no tools: %q, %v", out, err)
	}
	out, err := d.Join([]model.ToolSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}, 0, encode)
	if err != nil || string(out) != `"a","b","c"` {
		t.Errorf("Join = %s, %v", out, err)
	}
	if _, err := d.Join([]model.ToolSpec{{Name: "a"}, {Name: "bad"}}, 0, encode); err == nil || err.Error() != `tool "bad": parameters must be a JSON object` {
		t.Errorf("a bad tool: %v", err)
	}
}

func TestStoredExtra(t *testing.T) {
	type extra struct {
		Items []json.RawMessage `json:"items"`
		Phase string            `json:"phase"`
	}
	tests := []struct {
		raw, want string
	}{
		{``, `{"items":null,"phase":""}`},
		{`{"mine":{"items":[{"a":1}],"phase":"final"}}`, `{"items":[{"a":1}],"phase":"final"}`},
		{`{"other":{"items":[1]},"mine":{"phase":"p"}}`, `{"items":null,"phase":"p"}`},
		{`{"other":{"items":[1]}}`, `{"items":null,"phase":""}`},
		{`{"mine":null}`, `{"items":null,"phase":""}`},
		{`{"mine":{"items":[1],"phase":5}}`, `{"items":[1],"phase":""}`}, // kept up to the damage
		{`{"mine":{"items":"x","phase":"p"}}`, `{"items":null,"phase":"p"}`},
		{`[1,2]`, `{"items":null,"phase":""}`},
		{`{"mine":`, `{"items":null,"phase":""}`},
		{`{"mine":{"phase":"a"},"mine":{"items":[2]}}`, `{"items":[2],"phase":""}`}, // the last wins whole
	}
	for _, tt := range tests {
		got, _ := json.Marshal(model.StoredExtra[extra](json.RawMessage(tt.raw), "mine"))
		if string(got) != tt.want {
			t.Errorf("StoredExtra(%s) = %s, want %s", tt.raw, got, tt.want)
		}
	}
}
