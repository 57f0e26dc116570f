package cascade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

// fakes is a set of in-process endpoints whose answers a test scripts: fail
// decides, per endpoint label and model, the error of the nth attempt (nil =
// answer "from <label>/<model>").
type fakes struct {
	mu       sync.Mutex
	attempts []string // "label/model" in call order
	reqs     []model.Request
	fail     func(label, model string, n int) error
	seen     map[string]int
}

func (f *fakes) provider(label string) model.Provider {
	return model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		f.mu.Lock()
		key := label + "/" + req.Model
		f.attempts = append(f.attempts, key)
		f.reqs = append(f.reqs, req)
		if f.seen == nil {
			f.seen = map[string]int{}
		}
		f.seen[key]++
		n := f.seen[key]
		f.mu.Unlock()
		if f.fail != nil {
			if err := f.fail(label, req.Model, n); err != nil {
				return model.Response{}, err
			}
		}
		return model.Response{Text: "from " + key, Model: req.Model}, nil
	})
}

func (f *fakes) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.attempts...)
}

// chain builds A (models a1, a2), B (b1), C (c1).
func (f *fakes) chain(sharedA bool) []Endpoint {
	return []Endpoint{
		{Label: "A", Kind: KindOpenRouter, Provider: f.provider("A"), Models: []string{"a1", "a2"}, Shared: sharedA},
		{Label: "B", Kind: KindOpenAI, Provider: f.provider("B"), Models: []string{"b1"}},
		{Label: "C", Kind: KindChat, Provider: f.provider("C"), Models: []string{"c1"}},
	}
}

// statusErr is the *model.Error a wire client returns for an HTTP status
// (0 = a network failure), classified the way model/openai classifies it.
func statusErr(status int) error {
	retriable := status == 0 || status == 408 || status == 409 || status == 429 || status >= 500
	return &model.Error{Status: status, Message: fmt.Sprintf("scripted %d", status), Retriable: retriable}
}

func fmtRetry(r model.Retry) string {
	return fmt.Sprintf("%s %s/%s>%s/%s #%d %d", r.Reason, r.Provider, r.Model, r.NextProvider, r.NextModel, r.Attempt, r.Status)
}

func rep(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Positions in the cascade where the failure strikes.
const (
	posFirst   = "first-model"   // only A/a1 fails: A still has a2
	posPrimary = "whole-primary" // every model of A fails: B and C remain
	posAll     = "every-model"   // everything fails: nothing remains
)

func failsAt(pos, label, m string) bool {
	switch pos {
	case posFirst:
		return label == "A" && m == "a1"
	case posPrimary:
		return label == "A"
	}
	return true
}

type outcome struct {
	attempts []string
	reports  []string // with %d for the status
	served   string   // "" = the call fails with the status
}

// expect is the retry and advance rules written out per class of
// failure and position, independent of the implementation.
func expect(class, pos string) outcome {
	retryA1 := []string{"retry A/a1>A/a1 #1 %d", "retry A/a1>A/a1 #2 %d"}
	retryA2 := []string{"retry A/a2>A/a2 #1 %d", "retry A/a2>A/a2 #2 %d"}
	switch class {
	case "retriable": // network error, 409, 429, 5xx: retried, then advance
		switch pos {
		case posFirst:
			return outcome{cat(rep(3, "A/a1"), []string{"A/a2"}), cat(retryA1, []string{"model_switch A/a1>A/a2 #3 %d"}), "A/a2"}
		case posPrimary:
			return outcome{cat(rep(3, "A/a1"), rep(3, "A/a2"), []string{"B/b1"}),
				cat(retryA1, []string{"model_switch A/a1>A/a2 #3 %d"}, retryA2, []string{"provider_failover A/a2>B/b1 #3 %d"}), "B/b1"}
		default:
			return outcome{cat(rep(3, "A/a1"), rep(3, "A/a2"), rep(3, "B/b1"), rep(3, "C/c1")),
				cat(retryA1, []string{"model_switch A/a1>A/a2 #3 %d"}, retryA2, []string{"provider_failover A/a2>B/b1 #3 %d"},
					[]string{"retry B/b1>B/b1 #1 %d", "retry B/b1>B/b1 #2 %d", "provider_failover B/b1>C/c1 #3 %d",
						"retry C/c1>C/c1 #1 %d", "retry C/c1>C/c1 #2 %d"}), ""}
		}
	case "timeout": // 408: retried and switched within the provider, never advanced past it
		if pos == posFirst {
			return expect("retriable", pos)
		}
		return outcome{cat(rep(3, "A/a1"), rep(3, "A/a2")), cat(retryA1, []string{"model_switch A/a1>A/a2 #3 %d"}, retryA2), ""}
	case "client": // ordinary 4xx: next model without retry, never the next provider
		if pos == posFirst {
			return outcome{[]string{"A/a1", "A/a2"}, []string{"model_switch A/a1>A/a2 #1 %d"}, "A/a2"}
		}
		return outcome{[]string{"A/a1", "A/a2"}, []string{"model_switch A/a1>A/a2 #1 %d"}, ""}
	case "credential": // 401/403, shared 409/429: skip A's other models, advance
		switch pos {
		case posFirst, posPrimary:
			return outcome{[]string{"A/a1", "B/b1"}, []string{"provider_failover A/a1>B/b1 #1 %d"}, "B/b1"}
		default:
			return outcome{[]string{"A/a1", "B/b1", "C/c1"},
				[]string{"provider_failover A/a1>B/b1 #1 %d", "provider_failover B/b1>C/c1 #1 %d"}, ""}
		}
	}
	panic("unknown class " + class)
}

func TestFailoverMatrix(t *testing.T) {
	kinds := []struct {
		name   string
		status int
		class  string
	}{
		{"network", 0, "retriable"},
		{"400", 400, "client"},
		{"404", 404, "client"},
		{"422", 422, "client"},
		{"401", 401, "credential"},
		{"403", 403, "credential"},
		{"408", 408, "timeout"},
		{"409", 409, "retriable"},
		{"429", 429, "retriable"},
		{"500", 500, "retriable"},
		{"502", 502, "retriable"},
		{"503", 503, "retriable"},
	}
	for _, k := range kinds {
		for _, pos := range []string{posFirst, posPrimary, posAll} {
			t.Run(k.name+"/"+pos, func(t *testing.T) {
				want := expect(k.class, pos)
				f := &fakes{fail: func(label, m string, _ int) error {
					if failsAt(pos, label, m) {
						return statusErr(k.status)
					}
					return nil
				}}
				checkRun(t, f, f.chain(false), k.status, want)
			})
		}
	}
}

// TestSharedCredentialMatrix: a subscription credential's 409 and 429 are
// credential-wide, where a keyed endpoint retries them.
func TestSharedCredentialMatrix(t *testing.T) {
	for _, status := range []int{409, 429} {
		for _, pos := range []string{posFirst, posPrimary} {
			t.Run(fmt.Sprintf("%d/%s", status, pos), func(t *testing.T) {
				f := &fakes{fail: func(label, m string, _ int) error {
					if failsAt(pos, label, m) {
						return statusErr(status)
					}
					return nil
				}}
				checkRun(t, f, f.chain(true), status, expect("credential", pos))
			})
		}
	}
}

func checkRun(t *testing.T, f *fakes, eps []Endpoint, status int, want outcome) {
	t.Helper()
	c, err := New(Options{Endpoints: eps, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	resp, served, err := c.CompleteServed(context.Background(), model.Request{Model: "ignored"}, model.Stream{
		OnRetry: func(r model.Retry) { reports = append(reports, fmtRetry(r)) },
	})
	if got := f.got(); !equal(got, want.attempts) {
		t.Errorf("attempts:\n got %q\nwant %q", got, want.attempts)
	}
	wantReports := make([]string, len(want.reports))
	for i, r := range want.reports {
		wantReports[i] = fmt.Sprintf(r, status)
	}
	if !equal(reports, wantReports) {
		t.Errorf("retry reports:\n got %q\nwant %q", reports, wantReports)
	}
	if want.served == "" {
		var me *model.Error
		if !errors.As(err, &me) || me.Status != status {
			t.Fatalf("want the call to fail with status %d, got resp %q err %v", status, resp.Text, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("want an answer from %s, got %v", want.served, err)
	}
	if resp.Text != "from "+want.served || served.Label+"/"+served.Model != want.served {
		t.Errorf("served by %s/%s with %q, want %s", served.Label, served.Model, resp.Text, want.served)
	}
	if served.Retries != len(wantReports) {
		t.Errorf("Served.Retries = %d, want %d", served.Retries, len(wantReports))
	}
	if wantModel := strings.SplitN(want.served, "/", 2)[1]; resp.Model != wantModel {
		t.Errorf("Response.Model = %q, want %q", resp.Model, wantModel)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReauth: a renewable credential gets one re-auth and one more attempt
// on 401/403; a second refusal is credential-wide.
func TestReauth(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failures int // leading 401s from A/a1
		attempts []string
		reports  []string
		served   string
	}{
		{"cured", 1, []string{"A/a1", "A/a1"}, []string{"reauth A/a1>A/a1 #1 401"}, "A/a1"},
		{"still refused", 5, []string{"A/a1", "A/a1", "B/b1"},
			[]string{"reauth A/a1>A/a1 #1 401", "provider_failover A/a1>B/b1 #2 401"}, "B/b1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{fail: func(label, m string, n int) error {
				if label == "A" && n <= tt.failures {
					return statusErr(401)
				}
				return nil
			}}
			eps := f.chain(true)
			reauths := 0
			eps[0].Reauth = func() { reauths++ }
			c, err := New(Options{Endpoints: eps, Backoff: func(int) time.Duration { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			var reports []string
			resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{
				OnRetry: func(r model.Retry) { reports = append(reports, fmtRetry(r)) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "from "+tt.served || !equal(f.got(), tt.attempts) || !equal(reports, tt.reports) || reauths != 1 {
				t.Errorf("served %q attempts %q reports %q reauths %d; want %s %q %q 1", resp.Text, f.got(), reports, reauths, tt.served, tt.attempts, tt.reports)
			}
		})
	}
}

// TestSharedCooldown: a subscription credential that answered 429 is passed
// over by later calls until the cooldown ends.
func TestSharedCooldown(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	limited := true
	f := &fakes{fail: func(label, _ string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if label == "A" && limited {
			return statusErr(429)
		}
		return nil
	}}
	c, err := New(Options{Endpoints: f.chain(true), Cooldown: time.Minute, Backoff: func(int) time.Duration { return 0 },
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	call := func() string {
		resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Text
	}
	if got := call(); got != "from B/b1" {
		t.Fatalf("first call served %q, want B after A's 429", got)
	}
	if got := call(); got != "from B/b1" || !equal(f.got(), []string{"A/a1", "B/b1", "B/b1"}) {
		t.Fatalf("call during cooldown: %q, attempts %q; want B without touching A", got, f.got())
	}
	mu.Lock()
	now = now.Add(61 * time.Second)
	limited = false
	mu.Unlock()
	if got := call(); got != "from A/a1" {
		t.Fatalf("call after cooldown served %q, want A again", got)
	}
}

// TestNoRetryAfterText: a failure once answer text has streamed ends the
// call: the caller already showed that text.
func TestNoRetryAfterText(t *testing.T) {
	calls := 0
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		calls++
		s.OnText("Hello, ")
		return model.Response{Text: "Hello, "}, statusErr(502)
	})
	c, err := New(Options{Endpoints: []Endpoint{
		{Label: "A", Kind: KindChat, Provider: p, Models: []string{"a1", "a2"}},
		{Label: "B", Kind: KindChat, Provider: p, Models: []string{"b1"}},
	}, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	retries := 0
	resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{
		OnText:  func(d string) { text.WriteString(d) },
		OnRetry: func(model.Retry) { retries++ },
	})
	if !errors.Is(err, ErrAfterText) {
		t.Fatalf("err = %v, want ErrAfterText", err)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 502 {
		t.Errorf("err %v does not carry the wire's 502", err)
	}
	if calls != 1 || retries != 0 || text.String() != "Hello, " || resp.Text != "Hello, " {
		t.Errorf("calls %d retries %d text %q resp %q; want one call, no retry, the partial text kept", calls, retries, text.String(), resp.Text)
	}
}

// TestReasoningDoesNotBlockRetry: reasoning deltas are not answer text.
func TestReasoningDoesNotBlockRetry(t *testing.T) {
	calls := 0
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		calls++
		s.OnReasoning("thinking")
		if calls == 1 {
			return model.Response{}, statusErr(500)
		}
		return model.Response{Text: "ok"}, nil
	})
	c, _ := New(Options{Endpoints: []Endpoint{{Label: "A", Kind: KindChat, Provider: p, Models: []string{"a1"}}}, Backoff: func(int) time.Duration { return 0 }})
	resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{})
	if err != nil || resp.Text != "ok" || calls != 2 || resp.Model != "a1" {
		t.Fatalf("resp %+v err %v calls %d; want a retried answer from a1", resp, err, calls)
	}
}

// TestCancel: cancelling the caller's context stops the cascade at once,
// in a backoff wait or inside an attempt.
func TestCancel(t *testing.T) {
	t.Run("during backoff", func(t *testing.T) {
		f := &fakes{fail: func(string, string, int) error { return statusErr(503) }}
		c, _ := New(Options{Endpoints: f.chain(false), Backoff: func(int) time.Duration { return time.Hour }})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := c.Complete(ctx, model.Request{}, model.Stream{OnRetry: func(model.Retry) { cancel() }})
		if !errors.Is(err, context.Canceled) || len(f.got()) != 1 {
			t.Fatalf("err %v after %d attempts; want context.Canceled after 1", err, len(f.got()))
		}
	})
	t.Run("inside an attempt", func(t *testing.T) {
		started := make(chan struct{})
		calls := 0
		p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
			calls++
			close(started)
			<-ctx.Done()
			// A wire client reports the cut as a retriable network error.
			return model.Response{}, &model.Error{Message: "connection reset", Retriable: true, Err: ctx.Err()}
		})
		c, _ := New(Options{Endpoints: []Endpoint{{Label: "A", Kind: KindChat, Provider: p, Models: []string{"a1", "a2"}}}})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		_, err := c.Complete(ctx, model.Request{}, model.Stream{})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("err %v after %d calls; want context.Canceled after 1", err, calls)
		}
	})
}

// TestAttemptTimeout: our per-attempt deadline is a retriable failure, not
// the end of the call.
func TestAttemptTimeout(t *testing.T) {
	calls := 0
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		calls++
		if req.Model == "slow" {
			<-ctx.Done()
			return model.Response{}, fmt.Errorf("read stream: %w", ctx.Err())
		}
		return model.Response{Text: "fast"}, nil
	})
	c, _ := New(Options{Endpoints: []Endpoint{{Label: "A", Kind: KindChat, Provider: p, Models: []string{"slow", "quick"}}},
		AttemptTimeout: 5 * time.Millisecond, Backoff: func(int) time.Duration { return 0 }})
	var reasons []string
	resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{OnRetry: func(r model.Retry) { reasons = append(reasons, r.Reason) }})
	if err != nil || resp.Model != "quick" || calls != 4 || !equal(reasons, []string{"retry", "retry", "model_switch"}) {
		t.Fatalf("resp %+v err %v calls %d reasons %q; want 3 timed-out attempts then quick", resp, err, calls, reasons)
	}
}

// TestUnclassifiedErrorStops: an error that is not a wire failure (a
// request the client cannot build) fails the same everywhere.
func TestUnclassifiedErrorStops(t *testing.T) {
	f := &fakes{fail: func(string, string, int) error { return errors.New("encode tool schema: bad") }}
	c, _ := New(Options{Endpoints: f.chain(false)})
	_, err := c.Complete(context.Background(), model.Request{}, model.Stream{})
	if err == nil || !strings.Contains(err.Error(), "encode tool schema") || len(f.got()) != 1 {
		t.Fatalf("err %v after %q; want the build error after one attempt", err, f.got())
	}
}

// TestContextOverflowStops: an overflow goes straight back to the engine,
// which compacts; other models would get the same oversized prompt.
func TestContextOverflowStops(t *testing.T) {
	f := &fakes{fail: func(string, string, int) error {
		return &model.Error{Status: 400, Message: "prompt is too long", Err: model.ErrContextOverflow}
	}}
	c, _ := New(Options{Endpoints: f.chain(false)})
	_, err := c.Complete(context.Background(), model.Request{}, model.Stream{})
	if !errors.Is(err, model.ErrContextOverflow) || len(f.got()) != 1 {
		t.Fatalf("err %v after %q; want ErrContextOverflow after one attempt", err, f.got())
	}
}

func TestServedModel(t *testing.T) {
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		if req.Model == "alias" {
			return model.Response{Text: "x", Model: "vendor/model-2026-01-01"}, nil
		}
		return model.Response{Text: "x"}, nil
	})
	for _, tt := range []struct{ asked, want string }{{"alias", "vendor/model-2026-01-01"}, {"plain", "plain"}} {
		c, _ := New(Options{Endpoints: []Endpoint{{Label: "A", Kind: KindChat, Provider: p, Models: []string{tt.asked}}}})
		resp, err := c.Complete(context.Background(), model.Request{}, model.Stream{})
		if err != nil || resp.Model != tt.want {
			t.Errorf("asked %s: Model %q err %v, want %q", tt.asked, resp.Model, err, tt.want)
		}
	}
}

func TestNewRefusesBadEndpoints(t *testing.T) {
	p := model.ProviderFunc(func(context.Context, model.Request, model.Stream) (model.Response, error) {
		return model.Response{}, nil
	})
	for _, tt := range []struct {
		name string
		eps  []Endpoint
		want string
	}{
		{"none", nil, "no endpoints"},
		{"no provider", []Endpoint{{Label: "x", Models: []string{"m"}}}, "no provider"},
		{"no models", []Endpoint{{Label: "x", Provider: p}}, "no models"},
	} {
		if _, err := New(Options{Endpoints: tt.eps}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}
