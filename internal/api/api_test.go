package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vault"
)

// echoProvider answers every turn with the last real user text, streamed in
// two deltas.
var echoProvider = model.ProviderFunc(func(_ context.Context, req model.Request, s model.Stream) (model.Response, error) {
	text := ""
	for _, m := range req.Messages {
		if m.Role == model.RoleUser && !strings.HasPrefix(m.Content, "<delta:") {
			text = m.Content
		}
	}
	out := "echo: " + text
	if s.OnText != nil {
		s.OnText(out[:len(out)/2])
		s.OnText(out[len(out)/2:])
	}
	return model.Response{Model: "test-model", Text: out, Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
})

// openStore is a fresh database at path, closed when the test ends.
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openQueue is a queue of n sessions at a time over eng's runs, opened.
func openQueue(t testing.TB, st *store.Store, eng *engine.Engine, n int) *queue.Queue {
	t.Helper()
	q := queue.New(st, eng.ExecuteHead, n, nil)
	if err := q.Open(); err != nil {
		t.Fatal(err)
	}
	return q
}

func newServer(t *testing.T, o api.Options, p model.Provider) *httptest.Server {
	t.Helper()
	srv, _, _ := startServer(t, o, p)
	return srv
}

// startServer serves api.New(o) over a real store and engine in a fresh
// directory, which it returns; close stops everything and closes the
// database, so its files can be read whole. It runs again, harmlessly,
// when the test ends.
func startServer(t *testing.T, o api.Options, p model.Provider) (srv *httptest.Server, dir string, close func()) {
	t.Helper()
	dir = t.TempDir()
	st := openStore(t, filepath.Join(dir, "delta.db"))
	b, err := bundle.Load(bundle.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Store: st, Provider: p, Models: []string{"test-model"}, Prompt: b, Tools: tool.NewRegistry(),
		ToolNames: func(string) []string { return nil },
		Budget:    func(string) engine.Budget { return engine.Budget{Steps: 10, Tokens: 1e9, CostUSD: 100} }})
	q := openQueue(t, st, eng, 4)
	o.Service = engine.NewService(st, q, eng)
	srv = httptest.NewServer(api.New(o))
	done := false
	close = func() {
		if done {
			return
		}
		done = true
		srv.Close()
		q.Close(context.Background())
		st.Close()
	}
	t.Cleanup(close)
	return srv, dir, close
}

func do(t *testing.T, method, url, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	status, _, b := roundTrip(t, req)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %q", method, url, b)
	}
	return status, m
}

// roundTrip sends req and returns the answer's status, header and whole
// body.
func roundTrip(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestBadInputIsA4xxEnvelope(t *testing.T) {
	srv := newServer(t, api.Options{MaxBodyBytes: 4096}, echoProvider)
	huge := `{"input":"` + strings.Repeat("x", 5000) + `"}`
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"null root", "POST", "/v1/responses", `null`, 400, "JSON object"},
		{"number root", "POST", "/v1/responses", `42`, 400, "JSON object"},
		{"string root", "POST", "/v1/tasks", `"x"`, 400, "JSON object"},
		{"array root", "POST", "/v1/tasks", `[]`, 400, "JSON object"},
		{"empty body", "POST", "/v1/tasks", ``, 400, "empty"},
		{"malformed", "POST", "/v1/responses", `{"input":`, 400, "not valid JSON"},
		{"input wrong type", "POST", "/v1/responses", `{"input":5}`, 400, "input"},
		{"input missing", "POST", "/v1/responses", `{}`, 400, "input is required"},
		{"input blank", "POST", "/v1/tasks", `{"input":"   "}`, 400, "empty"},
		{"message content blank", "POST", "/v1/tasks", `{"input":[{"role":"user","content":" "}]}`, 400, "input[0].content is empty"},
		{"message parts blank", "POST", "/v1/responses", `{"input":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"input_text","text":""}]}]}`, 400, "input[1].content is empty"},
		{"stream wrong type", "POST", "/v1/responses", `{"input":"hi","stream":"yes"}`, 400, "stream"},
		{"metadata wrong type", "POST", "/v1/responses", `{"input":"hi","metadata":[]}`, 400, "metadata"},
		{"context wrong type", "POST", "/v1/tasks", `{"input":"hi","metadata":{"context":"x"}}`, 400, "context"},
		{"reflect as a string", "POST", "/v1/tasks", `{"input":"hi","metadata":{"reflect":"true"}}`, 400, "field metadata.reflect must be a boolean, not string"},
		{"reflect as a number", "POST", "/v1/responses", `{"input":"hi","metadata":{"reflect":1}}`, 400, "field metadata.reflect must be a boolean, not number"},
		{"task type as a number", "POST", "/v1/tasks", `{"input":"hi","metadata":{"task_type":123}}`, 400, "field metadata.task_type must be a string, not number"},
		{"widen as a string", "POST", "/v1/tasks", `{"input":"hi","metadata":{"widen_authorized":"yes"}}`, 400, "field metadata.widen_authorized must be a boolean"},
		{"review kind as an object", "POST", "/v1/tasks", `{"input":"hi","metadata":{"review_kind":{}}}`, 400, "field metadata.review_kind must be a string"},
		{"previous wrong type", "POST", "/v1/responses", `{"input":"hi","previous_response_id":7}`, 400, "previous_response_id"},
		{"unknown previous", "POST", "/v1/responses", `{"input":"hi","previous_response_id":"resp_nope"}`, 400, "previous_response_id"},
		{"assistant input item", "POST", "/v1/tasks", `{"input":[{"role":"assistant","content":"x"}]}`, 400, "previous_response_id"},
		{"bad content part", "POST", "/v1/tasks", `{"input":[{"role":"user","content":[{"type":"input_image"}]}]}`, 400, "input_image"},
		{"oversized", "POST", "/v1/tasks", huge, 413, "limit"},
		{"unknown task", "GET", "/v1/tasks/resp_nope", ``, 404, "not found"},
		{"cancel unknown", "DELETE", "/v1/tasks/resp_nope", ``, 404, "not found"},
		{"events unknown", "GET", "/v1/tasks/resp_nope/events?since=0", ``, 404, "not found"},
		{"unknown route", "GET", "/v1/nothing", ``, 404, "no such endpoint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, m := do(t, tt.method, srv.URL+tt.path, tt.body, nil)
			if status != tt.status || !strings.Contains(errMessage(m), tt.msg) {
				t.Fatalf("%d %v, want %d with message containing %q", status, m, tt.status, tt.msg)
			}
		})
	}
}

// A request's metadata.profile may narrow the daemon's tier; a name that
// is no profile is refused, not run at the ceiling it meant to narrow.
func TestRequestProfile(t *testing.T) {
	cfg := config.Config{Profile: config.ProfileTrusted}
	srv := newServer(t, api.Options{Placement: cfg.PlaceRequest}, echoProvider)
	for _, tt := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"input":"hi","metadata":{"profile":"saf"}}`, 400, `metadata.profile "saf" is not a profile`},
		{`{"input":"hi","metadata":{"profile":"root"}}`, 400, `"safe"`},
		{`{"input":"hi","metadata":{"profile":"safe"}}`, 202, ""},
		{`{"input":"hi","metadata":{"profile":" Chat "}}`, 202, ""},
		{`{"input":"hi","metadata":{"profile":""}}`, 202, ""},
		{`{"input":"hi"}`, 202, ""},
	} {
		status, m := do(t, "POST", srv.URL+"/v1/tasks", tt.body, nil)
		if status != tt.status || !strings.Contains(errMessage(m), tt.msg) {
			t.Errorf("%s: %d %v, want %d with message containing %q", tt.body, status, m, tt.status, tt.msg)
		}
	}
}

func TestControlTokenGate(t *testing.T) {
	srv := newServer(t, api.Options{ControlToken: "s3cret"}, echoProvider)
	if s, _ := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"hi"}`, nil); s != 401 {
		t.Fatalf("no token: %d", s)
	}
	if s, _ := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"hi"}`, map[string]string{"Authorization": "Bearer s3cre"}); s != 401 {
		t.Fatalf("wrong token: %d", s)
	}
	if s, m := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"hi"}`, map[string]string{"Authorization": "Bearer s3cret"}); s != 202 || m["status"] != "queued" {
		t.Fatalf("right token: %d %v", s, m)
	}
	if s, m := do(t, "GET", srv.URL+"/healthz", ``, nil); s != 200 || m["ok"] != true {
		t.Fatalf("healthz must stay public: %d %v", s, m)
	}
}

func TestResponsesContinueAndOwnership(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	alice := map[string]string{"X-Delta-User": "alice"}
	s, first := do(t, "POST", srv.URL+"/v1/responses", `{"input":"one"}`, alice)
	if s != 200 || first["status"] != "completed" || first["output_text"] != "echo: one" || first["object"] != "response" {
		t.Fatalf("first: %d %v", s, first)
	}
	id := first["id"].(string)
	s, next := do(t, "POST", srv.URL+"/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"two"}]}],"previous_response_id":"`+id+`"}`, alice)
	if s != 200 || next["previous_response_id"] != id || next["output_text"] != "echo: two" {
		t.Fatalf("continuation: %d %v", s, next)
	}
	if s, m := do(t, "POST", srv.URL+"/v1/responses", `{"input":"x","previous_response_id":"`+id+`"}`, map[string]string{"X-Delta-User": "mallory"}); s != 400 || !strings.Contains(errMessage(m), "does not name a known response") {
		t.Fatalf("cross-owner continuation: %d %v", s, m)
	}
	if s, _ := do(t, "GET", srv.URL+"/v1/tasks/"+id, ``, map[string]string{"X-Delta-User": "mallory"}); s != 404 {
		t.Fatalf("cross-owner task read: %d", s)
	}
	s, task := do(t, "GET", srv.URL+"/v1/tasks/"+id, ``, alice)
	if s != 200 || task["status"] != "done" || task["started_at"] == nil || task["finished_at"] == nil || task["result"] == nil {
		t.Fatalf("task view: %d %v", s, task)
	}
}

func TestTaskEventsPageAndLiveDone(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	_, resp := do(t, "POST", srv.URL+"/v1/responses", `{"input":"hello"}`, nil)
	id := resp["id"].(string)
	s, page := do(t, "GET", srv.URL+"/v1/tasks/"+id+"/events?since=0&limit=2", ``, nil)
	evs, _ := page["events"].([]any)
	if s != 200 || len(evs) != 2 || page["done"] != false {
		t.Fatalf("first page: %d %v", s, page)
	}
	cursor := int(page["cursor"].(float64))
	_, page = do(t, "GET", srv.URL+"/v1/tasks/"+id+"/events?since="+itoa(cursor), ``, nil)
	evs, _ = page["events"].([]any)
	last := evs[len(evs)-1].(map[string]any)
	if page["done"] != true || last["name"] != "run.finished" {
		t.Fatalf("last page: %v", page)
	}
	if s, m := do(t, "GET", srv.URL+"/v1/tasks/"+id+"/events?since=-1", ``, nil); s != 400 {
		t.Fatalf("negative since: %d %v", s, m)
	}
	// Live stream of a terminal task: its stored events, then the done frame.
	r, err := http.Get(srv.URL + "/v1/tasks/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	fin, done := strings.Index(string(b), "event: run.finished\n"), strings.Index(string(b), "event: done\n")
	if fin < 0 || done < fin || !strings.Contains(string(b)[done:], `"status":"done"`) {
		t.Fatalf("live stream of terminal task: %q", b)
	}
}

func TestStreamingDeltasThenOneCompleted(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(`{"input":"stream me","stream":true}`))
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var names []string
	var text string
	var created, completed map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var f map[string]any
			if err := json.Unmarshal([]byte(d), &f); err != nil {
				t.Fatalf("frame %q: %v", d, err)
			}
			names = append(names, f["type"].(string))
			if f["type"] == "response.output_text.delta" {
				text += f["delta"].(string)
			}
			if f["type"] == "response.completed" {
				completed = f["response"].(map[string]any)
			}
			if f["type"] == "response.created" {
				created = f["response"].(map[string]any)
			}
		}
	}
	if len(names) < 3 || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Fatalf("frames %v", names)
	}
	// The first frame is a run under way, not a failure: no error yet, and
	// the model the run is configured to call.
	if e, ok := created["error"]; !ok || e != nil || created["status"] != "in_progress" || created["model"] != "test-model" {
		t.Fatalf("response.created = %v, want in_progress with a null error and model test-model", created)
	}
	if text != "echo: stream me" || completed["output_text"] != "echo: stream me" || completed["status"] != "completed" {
		t.Fatalf("deltas %q completed %v", text, completed)
	}
}

func TestBusy(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	s, m := do(t, "GET", srv.URL+"/v1/busy", ``, nil)
	if s != 200 || m["busy"] != false || m["running"] != float64(0) {
		t.Fatalf("%d %v", s, m)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestInspectionGate(t *testing.T) {
	open := newServer(t, api.Options{}, echoProvider)
	resp, err := http.Get(open.URL + "/dev")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `src="/dev/app.js"`) {
		t.Fatalf("/dev from loopback: %d", resp.StatusCode)
	}
	resp, err = http.Get(open.URL + "/dev/stream.js")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(string(body), "/v1/dev/stream?since=") {
		t.Fatalf("/dev/stream.js from loopback: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	off := newServer(t, api.Options{InspectOff: true}, echoProvider)
	if s, _ := do(t, "GET", off.URL+"/v1/dev/stream?live=0", ``, nil); s != 404 {
		t.Fatalf("DELTA_INSPECT=off: %d", s)
	}
	gated := newServer(t, api.Options{InspectToken: "look", ControlToken: "drive"}, echoProvider)
	if s, _ := do(t, "GET", gated.URL+"/v1/dev/stream?live=0", ``, map[string]string{"Authorization": "Bearer drive"}); s != 401 {
		t.Fatalf("the control token must not grant inspection: %d", s)
	}
	r, err := http.NewRequest("GET", gated.URL+"/v1/dev/stream?live=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer look")
	resp, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("inspect token: %d", resp.StatusCode)
	}
}

func TestDevStreamReplayMatchesPagedEvents(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	_, first := do(t, "POST", srv.URL+"/v1/responses", `{"input":"a"}`, nil)
	do(t, "POST", srv.URL+"/v1/responses", `{"input":"b"}`, nil)
	id := first["id"].(string)
	_, page := do(t, "GET", srv.URL+"/v1/tasks/"+id+"/events?since=0", ``, nil)
	var want []string
	for _, e := range page["events"].([]any) {
		want = append(want, itoa(int(e.(map[string]any)["id"].(float64))))
	}
	resp, err := http.Get(srv.URL + "/v1/dev/stream?live=0&run=" + id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			got = append(got, v)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || len(got) < 4 {
		t.Fatalf("dev stream ids %v, paged ids %v", got, want)
	}
	// Without ?since=, Last-Event-ID (an EventSource reconnecting) is
	// where the replay resumes.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/dev/stream?live=0&run="+id, nil)
	req.Header.Set("Last-Event-ID", want[1])
	_, _, b = roundTrip(t, req)
	got = nil
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			got = append(got, v)
		}
	}
	if strings.Join(got, ",") != strings.Join(want[2:], ",") {
		t.Fatalf("dev stream after Last-Event-ID %s: ids %v, want %v", want[1], got, want[2:])
	}
}

// heldEcho is echoProvider answering only once hold is closed, so the runs
// it serves stay in the queue meanwhile.
func heldEcho(hold <-chan struct{}) model.Provider {
	return model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		select {
		case <-hold:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
		return echoProvider(ctx, req, s)
	})
}

func TestStrictTenantAndQueue(t *testing.T) {
	hold := make(chan struct{})
	slow := heldEcho(hold)
	srv := newServer(t, api.Options{StrictTenant: true}, slow)
	defer close(hold)
	if s, m := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"x"}`, nil); s != 401 {
		t.Fatalf("strict create without owner: %d %v", s, m)
	}
	alice := map[string]string{"X-Delta-User": "alice"}
	_, a := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"a"}`, alice)
	do(t, "POST", srv.URL+"/v1/tasks", `{"input":"b"}`, map[string]string{"X-Delta-User": "bob"})
	if s, _ := do(t, "GET", srv.URL+"/v1/tasks/"+a["id"].(string), ``, nil); s != 404 {
		t.Fatalf("strict read without owner: %d", s)
	}
	s, q := do(t, "GET", srv.URL+"/v1/queue", ``, alice)
	rows := q["queue"].([]any)
	if s != 200 || len(rows) != 1 || rows[0].(map[string]any)["id"] != a["id"] || rows[0].(map[string]any)["position"] != float64(1) {
		t.Fatalf("alice's queue: %d %v", s, q)
	}
	if s, _ := do(t, "GET", srv.URL+"/v1/queue", ``, nil); s != 401 {
		t.Fatalf("strict queue without owner: %d", s)
	}
}

func TestQueueHidesOtherOwners(t *testing.T) {
	hold := make(chan struct{})
	slow := heldEcho(hold)
	srv := newServer(t, api.Options{}, slow)
	defer close(hold)
	do(t, "POST", srv.URL+"/v1/tasks", `{"input":"a"}`, map[string]string{"X-Delta-User": "alice"})
	do(t, "POST", srv.URL+"/v1/tasks", `{"input":"b"}`, map[string]string{"X-Delta-User": "bob"})
	_, q := do(t, "GET", srv.URL+"/v1/queue", ``, map[string]string{"X-Delta-User": "bob"})
	rows := q["queue"].([]any)
	if len(rows) != 2 {
		t.Fatalf("queue %v", q)
	}
	for _, r := range rows {
		row := r.(map[string]any)
		if row["mine"] == false && row["id"] != nil {
			t.Fatalf("another owner's id is visible: %v", row)
		}
		if row["mine"] == true && row["id"] == nil {
			t.Fatalf("own row without id: %v", row)
		}
	}
}

// The vault's routes: create is create-only, rotation changes a secret
// that exists and never creates one (a misspelled name would otherwise
// leave the real secret unrotated), and no answer carries a value.
func TestSecretsCreateRotate(t *testing.T) {
	v, err := vault.New(openStore(t, filepath.Join(t.TempDir(), "vault.db")), strings.Repeat("k", 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, api.Options{Secrets: v, InspectWrite: true}, echoProvider)
	for _, tt := range []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"PUT", "/v1/secrets/KB_TOKEN", `{"value":"first-value","purpose":"kb"}`, 201, ""},
		{"PUT", "/v1/secrets/KB_TOKEN", `{"value":"other-value"}`, 409, "exists"},
		{"POST", "/v1/dev/secrets/KB_TOKEN", `{"value":"second-value"}`, 200, ""},
		{"POST", "/v1/dev/secrets/KB_TOKNE", `{"value":"typo-value"}`, 404, "create it with PUT /v1/secrets/{name}"},
	} {
		status, m := do(t, tt.method, srv.URL+tt.path, tt.body, nil)
		if status != tt.status || !strings.Contains(errMessage(m), tt.msg) {
			t.Errorf("%s %s: %d %v, want %d with message containing %q", tt.method, tt.path, status, m, tt.status, tt.msg)
		}
		if b, _ := json.Marshal(m); strings.Contains(string(b), "-value") {
			t.Errorf("%s %s: the answer carries a value: %s", tt.method, tt.path, b)
		}
	}
	_, m := do(t, "GET", srv.URL+"/v1/secrets", ``, nil)
	list, _ := m["secrets"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "KB_TOKEN" || list[0].(map[string]any)["purpose"] != "kb" {
		t.Fatalf("secrets after the refused rotation = %v, want KB_TOKEN alone, its purpose kept", m)
	}
	if got, _ := v.Resolve(t.Context(), "KB_TOKEN"); got != "second-value" {
		t.Fatalf("KB_TOKEN = %q after rotation", got)
	}
}
