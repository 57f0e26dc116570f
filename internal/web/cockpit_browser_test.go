package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/deltaharness/delta/internal/bobby/browser/browsertest"
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/daemon"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/web"
)

var chromium = &browsertest.Browser{Name: "cockpit"}

// shotsDir keeps the tabs' screenshots somewhere to look at them after
// the test (default: the test's temporary directory).
var shotsDir = flag.String("shots", "", "directory for the Cockpit screenshots")

func TestMain(m *testing.M) {
	code := m.Run()
	chromium.Close()
	os.Exit(code)
}

// addrCatcher takes the listening address from the daemon's boot log.
type addrCatcher struct {
	once sync.Once
	addr chan string
}

func (a *addrCatcher) Enabled(context.Context, slog.Level) bool { return true }
func (a *addrCatcher) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "delta listening" {
		r.Attrs(func(at slog.Attr) bool {
			if at.Key == "addr" {
				a.once.Do(func() { a.addr <- at.Value.String() })
			}
			return true
		})
	}
	return nil
}
func (a *addrCatcher) WithAttrs([]slog.Attr) slog.Handler { return a }
func (a *addrCatcher) WithGroup(string) slog.Handler      { return a }

// agentScript writes a note on its first turn and answers on the next; a
// task "remember: <text>" instead rewrites DELTA.md (read from ws) to
// <text> with the remember tool.
func agentScript(ws string) modeltest.Script {
	return func(req modeltest.ChatRequest) modeltest.Reply {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return modeltest.TextReply("All done: wrote notes/hello.txt.")
			}
		}
		for _, m := range req.Messages {
			if lesson, ok := strings.CutPrefix(m.Content, "remember: "); ok && m.Role == "user" {
				cur, _ := os.ReadFile(filepath.Join(ws, "DELTA.md"))
				args, _ := json.Marshal(map[string]string{"content": lesson, "base": bundle.SelfVersion(string(cur))})
				return modeltest.ToolReply(modeltest.ToolCall{ID: "call_r", Name: "remember", Arguments: string(args)})
			}
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: "call_w", Name: "write_file", Arguments: `{"path":"notes/hello.txt","content":"hello from the agent"}`})
	}
}

type daemonUnderTest struct {
	url  string
	ws   string
	fake *modeltest.Server
	stop func() // shuts the daemon down (once; the test's cleanup calls it too)
}

// startDaemon runs the real daemon in process on a loopback port, against
// the scripted model, with capture and inspection writes on as under
// delta dev.
func startDaemon(t *testing.T) *daemonUnderTest {
	t.Helper()
	return startDaemonWith(t, agentScript, nil)
}

// startDaemonWith is startDaemon with another script (made from the
// workspace path) and extra environment (which wins over the defaults).
func startDaemonWith(t *testing.T, script func(ws string) modeltest.Script, extra map[string]string) *daemonUnderTest {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	fake, err := modeltest.Start(script(ws))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	for name, body := range map[string]string{"DELTA.md": "# Who I am\n", ".env": "SECRET=never-shown\n"} {
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"DELTA_DB": filepath.Join(ws, ".delta", "delta.db"), "DELTA_WORKSPACE": ws, "DELTA_CODE_CLI": "/bin/true",
		"MODEL_BASE_URL": fake.URL(), "MODEL_API_KEY": "fake-key", "DELTA_MODEL_PRIMARY": "scripted/cockpit",
		"DELTA_CAPTURE_CALLS": "1", "DELTA_INSPECT_WRITE": "1", "DELTA_AGENT_ID": "cockpit-test-agent",
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Port, cfg.Bind = 0, "127.0.0.1"
	ctx, cancel := context.WithCancel(context.Background())
	catch := &addrCatcher{addr: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- daemon.Serve(ctx, cfg, slog.New(catch)) }()
	var addr string
	select {
	case addr = <-catch.addr:
	case err := <-errc:
		cancel()
		t.Fatalf("daemon ended before listening: %v", err)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("daemon never listened")
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-errc }) }
	t.Cleanup(stop)
	return &daemonUnderTest{url: "http://" + addr, ws: ws, fake: fake, stop: stop}
}

func (d *daemonUnderTest) submit(t *testing.T, text string) string {
	t.Helper()
	return d.submitBody(t, `{"input":`+strconv.Quote(text)+`}`)
}

// submitBody posts a task body as given and returns the run's id.
func (d *daemonUnderTest) submitBody(t *testing.T, body string) string {
	t.Helper()
	resp, err := http.Post(d.url+"/v1/tasks", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	i := strings.Index(string(b), `"id":"`)
	if resp.StatusCode != 202 || i < 0 {
		t.Fatalf("submit = %d %s", resp.StatusCode, b)
	}
	id := string(b[i+6:])
	return id[:strings.IndexByte(id, '"')]
}

// storedIDs reads every stored event id from the replayable stream.
func (d *daemonUnderTest) storedIDs(t *testing.T) []int64 {
	t.Helper()
	resp, err := http.Get(d.url + "/v1/dev/stream?since=0&live=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			ids = append(ids, n)
		}
	}
	return ids
}

// waitFor polls a JavaScript condition in the page until it is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, body)
	}
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// js runs statements in the page.
func js(t *testing.T, ctx context.Context, stmts string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(() => { "+stmts+"; return true })()")); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).textContent || ""`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// The operator's path through the Cockpit, in real Chromium against the
// real daemon and the scripted model: a run appears and finishes live
// (across a reload and a dropped stream, with every stored event exactly
// once), its captured call shows the user's words and a tool schema, its
// tool call shows the result, and an edit in Files lands on disk.
func TestCockpitInChromium(t *testing.T) {
	d := startDaemon(t)
	shots := *shotsDir
	if shots == "" {
		shots = t.TempDir()
	}
	ctx := chromium.Open(t, d.url+"/dev")
	run(t, ctx, chromedp.EmulateViewport(1400, 900))
	waitFor(t, ctx, "the stream", `document.getElementById("live").className === "on"`)
	// The header is filled from /v1/dev/config, which may answer after the
	// stream is on: wait for it to leave its placeholder.
	waitFor(t, ctx, "the header", `document.getElementById("h-agent").textContent !== "…"`)
	if got := text(t, ctx, "#h-agent"); got != "cockpit-test-agent" {
		t.Errorf("header agent = %q", got)
	}
	if got := text(t, ctx, "#h-provider"); !strings.Contains(got, "scripted/cockpit") {
		t.Errorf("header provider = %q, want the live model", got)
	}

	// The model holds its first answer: the run stays running meanwhile.
	d.fake.Hold()
	id := d.submit(t, "Write a hello note please (marker 7fq2)")
	waitFor(t, ctx, "the run to appear live", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="running"]')`, id))

	// Reload mid-run, then cut the stream: the page resumes each time.
	run(t, ctx, chromedp.Reload())
	waitFor(t, ctx, "the stream after reload", `window.cockpit && document.getElementById("live").className === "on"`)
	waitFor(t, ctx, "the running run after reload", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="running"]')`, id))
	js(t, ctx, `window.cockpit.drop()`)
	d.fake.Release()
	waitFor(t, ctx, "the run to finish live", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, id))
	waitFor(t, ctx, "a reconnect after the drop", `window.cockpit.connected >= 2`)
	stored := d.storedIDs(t)
	waitFor(t, ctx, "every stored event", fmt.Sprintf(`window.cockpit.eventIds().length >= %d`, len(stored)))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`window.cockpit.eventIds()`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), stored) {
		t.Fatalf("page events %v\nstored       %v\nwant each stored event exactly once", got, stored)
	}

	// Runs: the run's detail with its final answer and turns.
	run(t, ctx, chromedp.Click(fmt.Sprintf(`[data-run=%q]`, id)))
	waitFor(t, ctx, "the final answer", `(document.querySelector("#run-detail .answer") || {}).textContent === "All done: wrote notes/hello.txt."`)
	if got := text(t, ctx, "#h-captured"); got != "1" {
		t.Errorf("header runs captured = %q, want 1", got)
	}
	screenshot(t, ctx, shots, "1-runs")

	// Calls: the first turn's request has the user's words and the tool
	// schema; the second turn's diff says the cached prefix held.
	run(t, ctx, chromedp.Click(`[data-tab="calls"]`))
	waitFor(t, ctx, "the calls list", `document.querySelectorAll("#calls-list [data-call]").length === 2`)
	run(t, ctx, chromedp.Click(`#calls-list [data-call]`))
	waitFor(t, ctx, "the call detail", `document.querySelector("#call-detail details.tools") !== null`)
	js(t, ctx, `document.querySelectorAll("#call-detail details").forEach(d => d.open = d.classList.contains("tool") ? d.textContent.startsWith("write_file") : !d.classList.contains("system"))`)
	call := text(t, ctx, "#call-detail")
	if !strings.Contains(call, "Write a hello note please (marker 7fq2)") || !strings.Contains(call, "write_file") || !strings.Contains(call, `"content"`) {
		t.Errorf("call detail lacks the request text or the write_file schema:\n%.1500s", call)
	}
	screenshot(t, ctx, shots, "2-calls")
	run(t, ctx, chromedp.Click(`#calls-list [data-call]:nth-of-type(2)`))
	waitFor(t, ctx, "the second turn's diff", `document.querySelector("#call-detail .diff") !== null`)
	if diff := text(t, ctx, "#call-detail .diff"); !strings.Contains(diff, "Cached prefix held") || !strings.Contains(diff, "write_file") {
		t.Errorf("second turn diff = %q, want the prefix held and the new tool call", diff)
	}
	screenshot(t, ctx, shots, "3-calls-diff")

	// Tools: the write_file call with its result.
	run(t, ctx, chromedp.Click(`[data-tab="tools"]`))
	waitFor(t, ctx, "the journal", `document.querySelectorAll("#tools-list [data-tool]").length === 1`)
	run(t, ctx, chromedp.Click(`#tools-list [data-tool]`))
	waitFor(t, ctx, "the tool result", `document.querySelector("#tool-detail pre.result") !== null`)
	if res := text(t, ctx, "#tool-detail"); !strings.Contains(res, "notes/hello.txt") || !strings.Contains(res, "Mutating") {
		t.Errorf("tool detail = %q", res)
	}
	screenshot(t, ctx, shots, "4-tools")

	// Files: the agent's note is in the tree, .delta and .env are not;
	// an edit of DELTA.md is saved to disk.
	run(t, ctx, chromedp.Click(`[data-tab="files"]`))
	waitFor(t, ctx, "the tree", `!!document.querySelector('#files-tree [data-path="notes/hello.txt"]')`)
	if tree := text(t, ctx, "#files-tree"); strings.Contains(tree, ".delta") || strings.Contains(tree, "delta.db") || strings.Contains(tree, ".env") || !strings.Contains(tree, "DELTA.md") {
		t.Errorf("tree = %q, want DELTA.md without the daemon's state or .env", tree)
	}
	run(t, ctx, chromedp.Click(`#files-tree [data-path="DELTA.md"]`))
	waitFor(t, ctx, "the editor", `(document.getElementById("editor") || {}).value === "# Who I am\n"`)
	js(t, ctx, `document.getElementById("editor").value = "# Who I am\nEdited in the Cockpit.\n"`)
	run(t, ctx, chromedp.Click(`#save`))
	waitFor(t, ctx, "the save", `document.getElementById("save-note").textContent.startsWith("Saved")`)
	if b, err := os.ReadFile(filepath.Join(d.ws, "DELTA.md")); err != nil || string(b) != "# Who I am\nEdited in the Cockpit.\n" {
		t.Errorf("DELTA.md on disk after save: %q %v", b, err)
	}
	screenshot(t, ctx, shots, "5-files")

	// Memory: the operator's save kept the original as a revision; the
	// agent then rewrites DELTA.md with remember, which keeps the operator's
	// version; the tab compares and restores it.
	rid := d.submit(t, "remember: # Who I am\nA lesson from the agent.\n")
	waitFor(t, ctx, "the remember run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, rid))
	if b, _ := os.ReadFile(filepath.Join(d.ws, "DELTA.md")); string(b) != "# Who I am\nA lesson from the agent.\n" {
		t.Fatalf("DELTA.md after remember = %q", b)
	}
	run(t, ctx, chromedp.Click(`[data-tab="memory"]`))
	waitFor(t, ctx, "two revisions", `document.querySelectorAll("#memory [data-rev]").length === 2`)
	if list := text(t, ctx, "#memory-revisions"); !strings.Contains(list, "operator") || !strings.Contains(list, "remember") {
		t.Errorf("revisions = %q, want the operator's save and the remember write", list)
	}
	run(t, ctx, chromedp.Click(`#memory [data-rev] button.compare`))
	waitFor(t, ctx, "the diff", `!!document.querySelector("#memory pre.diff .add")`)
	if diff := text(t, ctx, "#memory pre.diff"); !strings.Contains(diff, "+A lesson from the agent.") || !strings.Contains(diff, "-Edited in the Cockpit.") {
		t.Errorf("revision diff = %q", diff)
	}
	screenshot(t, ctx, shots, "6-memory")
	js(t, ctx, `window.confirm = () => true`)
	run(t, ctx, chromedp.Click(`#memory [data-rev] button.restore`))
	waitFor(t, ctx, "the restore", `document.querySelectorAll("#memory [data-rev]").length === 3`)
	if b, _ := os.ReadFile(filepath.Join(d.ws, "DELTA.md")); string(b) != "# Who I am\nEdited in the Cockpit.\n" {
		t.Errorf("DELTA.md after restore = %q, want the operator's version back", b)
	}

	// Governed memory rows appear with their scope and provenance.
	st, err := store.Open(context.Background(), filepath.Join(d.ws, ".delta", "delta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.PutMemory(context.Background(), store.MemoryWrite{
		Key:  store.MemoryKey{Namespace: "notes", AgentID: "cockpit-test-agent", Scope: "task_type", TaskType: "jd-generation"},
		Kind: "pitfall", Content: "Always state the salary band.", Norm: "always state the salary band.", Confidence: 0.85,
		Rubric: "correction", RunID: rid, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Click(`[data-tab="runs"]`), chromedp.Click(`[data-tab="memory"]`))
	waitFor(t, ctx, "the memory row", `!!document.querySelector("#memory-table [data-memory]")`)
	if row := text(t, ctx, "#memory-table"); !strings.Contains(row, "Always state the salary band.") || !strings.Contains(row, "jd-generation") ||
		!strings.Contains(row, "0.85") || !strings.Contains(row, rid[:17]) {
		t.Errorf("memory row = %q, want content, task type, confidence and the producing run", row)
	}
	screenshot(t, ctx, shots, "7-memory-rows")
}

// The page's stream follower, against a stream that cuts it with the
// fell-behind error frame and then drops it outright: it reconnects each
// time with since= the last durable id and sees every event once.
func TestStreamResumesAfterCutAndDrop(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	mux := http.NewServeMux()
	mux.Handle("GET /dev/", http.StripPrefix("/dev/", http.FileServerFS(web.Assets)))
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><script type="module">
import { follow } from "/dev/stream.js";
window.got = [];
follow({ onEvent: (ev) => window.got.push(ev.id || 0), onState: () => {} });
</script>`)
	})
	frame := func(w io.Writer, id int) {
		fmt.Fprintf(w, "id: %d\nevent: tool.call\ndata: {\"id\":%d,\"run_id\":\"resp_x\",\"name\":\"tool.call\"}\n\n", id, id)
	}
	mux.HandleFunc("GET /v1/dev/stream", func(w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get("since")
		mu.Lock()
		asked = append(asked, since)
		n := len(asked)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch n {
		case 1: // two events, a live delta, then the cut
			frame(w, 1)
			frame(w, 2)
			fmt.Fprint(w, "event: output_text.delta\ndata: {\"run_id\":\"resp_x\",\"name\":\"output_text.delta\",\"data\":{\"delta\":\"hi\"}}\n\n")
			fmt.Fprint(w, "event: error\ndata: {\"error\":{\"message\":\"fell behind\"},\"since\":2}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client must close it itself
		case 2: // a replayed duplicate, a new event, then the connection dies
			frame(w, 2)
			frame(w, 3)
			w.(http.Flusher).Flush()
		default:
			frame(w, 4)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := chromium.Open(t, srv.URL+"/page")
	waitFor(t, ctx, "four events", `window.got && window.got.filter(x => x).length >= 4`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`window.got`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{1, 2, 0, 3, 4}) {
		t.Errorf("events seen = %v, want 1 2 (delta) 3 4, each durable id once", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 3 || asked[0] != "0" || asked[1] != "2" || asked[2] != "3" {
		t.Errorf("stream requests since = %v, want 0, 2, 3", asked)
	}
}

// BenchmarkCockpitBytes reports the Cockpit's embedded size.
func BenchmarkCockpitBytes(b *testing.B) {
	for b.Loop() {
		_ = web.Size()
	}
	b.ReportMetric(float64(web.Size()), "bytes")
}

// BenchmarkRenderRun1000Events times, in Chromium, building and laying out
// the timeline of a run with 1,000 events.
func BenchmarkRenderRun1000Events(b *testing.B) {
	d := startDaemonB(b)
	ctx := chromium.Open(b, d+"/dev")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!window.cockpit`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.Fatal(err)
	}
	const render = `(() => {
	  const evs = [];
	  for (let i = 1; i <= 1000; i++) evs.push({id: i, run_id: "resp_x", name: i % 3 ? "tool.result" : "model.call", turn: 1 + (i >> 3), time: new Date().toISOString(), data: {call_id: "c" + i, name: "read_file", preview: "x".repeat(120)}});
	  const el = document.getElementById("run-detail");
	  const t0 = performance.now();
	  el.replaceChildren(window.cockpit.renderTimeline(evs));
	  el.getBoundingClientRect(); document.body.offsetHeight;
	  return performance.now() - t0;
	})()`
	total := 0.0
	for b.Loop() {
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](render))
		if err != nil {
			b.Fatal(err)
		}
		total += ms
	}
	b.ReportMetric(total/float64(b.N), "ms/render")
}

func startDaemonB(b *testing.B) string {
	fake, err := modeltest.Start(agentScript(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fake.Close() })
	dir := b.TempDir()
	env := map[string]string{"DELTA_DB": filepath.Join(dir, "d.db"), "DELTA_WORKSPACE": dir, "DELTA_CODE_CLI": "/bin/true",
		"MODEL_BASE_URL": fake.URL(), "MODEL_API_KEY": "k"}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		b.Fatal(err)
	}
	cfg.Port, cfg.Bind = 0, "127.0.0.1"
	ctx, cancel := context.WithCancel(context.Background())
	catch := &addrCatcher{addr: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- daemon.Serve(ctx, cfg, slog.New(catch)) }()
	select {
	case addr := <-catch.addr:
		b.Cleanup(func() { cancel(); <-errc })
		return "http://" + addr
	case err := <-errc:
		cancel()
		b.Fatalf("daemon: %v", err)
	}
	return ""
}

// opsScript is agentScript, except that a task containing "[fail]" gets an
// upstream refusal, so its run fails on its first model call.
func opsScript(ws string) modeltest.Script {
	agent := agentScript(ws)
	return func(req modeltest.ChatRequest) modeltest.Reply {
		for _, m := range req.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "[fail]") {
				return modeltest.ErrorReply(400, "upstream refused the request")
			}
		}
		return agent(req)
	}
}

// openLive opens the Cockpit and waits for its stream.
func openLive(t *testing.T, d *daemonUnderTest) context.Context {
	t.Helper()
	ctx := chromium.Open(t, d.url+"/dev")
	run(t, ctx, chromedp.EmulateViewport(1400, 900))
	waitFor(t, ctx, "the stream", `document.getElementById("live").className === "on"`)
	return ctx
}

// detailCell is the value beside a header cell of the run detail's table.
func detailCell(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const th = [...document.querySelectorAll("#run-detail th")].find((th) => th.textContent === `+strconv.Quote(name)+`); return th ? th.nextElementSibling.textContent : "(no " + `+strconv.Quote(name)+` + " cell)" })()`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A run that failed on its first model call finished no turn: its detail
// says 0 turns, not a blank.
func TestRunDetailShowsZeroTurns(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	id := d.submit(t, "[fail] please")
	waitFor(t, ctx, "the run to fail", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="failed"]')`, id))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
	waitFor(t, ctx, "its detail", `!!document.querySelector("#run-detail pre.err")`)
	if got := detailCell(t, ctx, "turns"); got != "0" {
		t.Errorf("turns cell = %q, want 0", got)
	}
}

// mouse presses or releases the left button at the centre of the first
// element sel matches, as a person's click is two events apart in time.
func mouse(t *testing.T, ctx context.Context, typ input.DispatchMouseEventType, sel string) {
	t.Helper()
	xy, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2] })()`))
	if err != nil {
		t.Fatal(err)
	}
	left := func(p *input.DispatchMouseEventParams) { p.Button, p.ClickCount = input.MouseButtonLeft, 1 }
	run(t, ctx, chromedp.MouseEvent(typ, xy[0], xy[1], left))
}

// A click on a run's row selects it even when the run's events update the
// list between the press and the release, as they do all the time while an
// agent works.
func TestRunsListClickSpansLiveUpdates(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	d.fake.Hold()
	id := d.submit(t, "Write a hello note please")
	row := fmt.Sprintf(`[data-run=%q]`, id)
	waitFor(t, ctx, "the run to run", fmt.Sprintf(`!!document.querySelector('%s[data-status="running"]')`, row))

	mouse(t, ctx, chromedp.MousePressed, row+" .s")
	d.fake.Release()
	waitFor(t, ctx, "the run to finish meanwhile", fmt.Sprintf(`!!document.querySelector('%s[data-status="done"]')`, row))
	mouse(t, ctx, chromedp.MouseReleased, row+" .s")
	waitFor(t, ctx, "the clicked run's detail", fmt.Sprintf(`(document.querySelector("#run-detail h2") || {}).textContent?.startsWith(%q)`, id))
}

// Text selected in a run's detail stays selected while other runs work:
// the detail is redrawn only when the run it shows changes.
func TestRunDetailKeepsSelectionWhileOthersRun(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	first := d.submit(t, "Write a hello note please")
	waitFor(t, ctx, "the first run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, first))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, first))
	waitFor(t, ctx, "its answer", `!!document.querySelector("#run-detail .answer")`)
	js(t, ctx, `const r = document.createRange(); r.selectNodeContents(document.querySelector("#run-detail .answer")); getSelection().removeAllRanges(); getSelection().addRange(r)`)

	other := d.submit(t, "Write another note please")
	waitFor(t, ctx, "the other run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, other))
	if got := text(t, ctx, "#h-captured"); got != "2" {
		t.Fatalf("header runs captured = %q, want 2 (the page has not rendered the other run)", got)
	}
	sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getSelection().toString()`))
	if err != nil {
		t.Fatal(err)
	}
	if sel != "All done: wrote notes/hello.txt." {
		t.Errorf("selection after another run's events = %q, want the answer still selected", sel)
	}
}

// A run's detail shows its whole request, not the list row's preview of
// its first 200 characters, and its instructions.
func TestRunDetailShowsTheWholeRequest(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	ask := "Write a hello note please. " + strings.Repeat("Then more context. ", 40) + "The end (marker 9zx1)."
	id := d.submitBody(t, `{"input":`+strconv.Quote(ask)+`,"instructions":"Answer in one line."}`)
	waitFor(t, ctx, "the run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, id))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
	waitFor(t, ctx, "its answer", `!!document.querySelector("#run-detail .answer")`)
	if got := text(t, ctx, "#run-detail pre.request"); got != ask {
		t.Errorf("request shown = %q\nwant %q", got, ask)
	}
	if got := text(t, ctx, "#run-detail pre.instructions"); got != "Answer in one line." {
		t.Errorf("instructions shown = %q", got)
	}
}

// detailCounter is a reverse proxy in front of the daemon that counts the
// page's requests for one run's detail (GET /v1/dev/runs/{id}).
type detailCounter struct {
	mu  sync.Mutex
	ids []string
}

func (c *detailCounter) front(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // the event stream passes through as it is written
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/dev/runs/"); ok && r.Method == http.MethodGet {
			c.mu.Lock()
			c.ids = append(c.ids, id)
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (c *detailCounter) asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// Opening the Cockpit replays every stored event; a run the list already
// holds as finished is not fetched again for it, so the page's first load
// costs no request per finished run. Selecting a run fetches its detail.
func TestLoadFetchesNoFinishedRunAgain(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	var ids []string
	for i := range 3 {
		ids = append(ids, d.submit(t, fmt.Sprintf("Write hello note %d please", i)))
	}
	for _, id := range ids {
		waitDone(t, d, id)
	}
	var c detailCounter
	ctx := chromium.Open(t, c.front(t, d.url)+"/dev")
	waitFor(t, ctx, "the stream", `document.getElementById("live").className === "on"`)
	waitFor(t, ctx, "every stored event", fmt.Sprintf(`window.cockpit.eventIds().length >= %d`, len(d.storedIDs(t))))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, ids[0]))
	waitFor(t, ctx, "the selected run's answer", `!!document.querySelector("#run-detail .answer")`)
	if got := c.asked(); !slices.Equal(got, []string{ids[0]}) {
		t.Errorf("run details fetched = %v, want only the selected %s", got, ids[0])
	}
}

// waitDone waits for a run to finish: its event stream ends after its
// run.finished with a done frame.
func waitDone(t *testing.T, d *daemonUnderTest, id string) {
	t.Helper()
	resp, err := http.Get(d.url + "/v1/tasks/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(b), "event: done") {
		t.Fatalf("run %s events ended without done (%v):\n%.500s", id, err, b)
	}
}

// When the daemon goes away the page says so: the header's badge and a
// banner name the daemon as unreachable instead of "reconnecting…" forever,
// and the tabs that load on demand say they could not reach it rather than
// that it has nothing (no revisions, no memory) or a bare "Failed to fetch".
func TestDaemonUnreachableIsShown(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	id := d.submit(t, "Write a hello note please")
	waitFor(t, ctx, "the run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, id))
	if got := text(t, ctx, "#down"); got != "" {
		t.Errorf("banner while live = %q, want none", got)
	}

	d.stop()
	waitFor(t, ctx, "the badge to say unreachable", `document.getElementById("live").textContent === "daemon unreachable"`)
	waitFor(t, ctx, "the banner", `!document.getElementById("down").hidden`)
	if got := text(t, ctx, "#down"); !strings.Contains(got, "The daemon is unreachable") || !strings.Contains(got, "as of") {
		t.Errorf("banner = %q", got)
	}
	run(t, ctx, chromedp.Click(`[data-tab="memory"]`))
	waitFor(t, ctx, "the memory tab's errors", `document.querySelectorAll("#memory .err").length === 2`)
	if got := text(t, ctx, "#memory"); !strings.Contains(got, "Could not load DELTA.md revisions: the daemon is unreachable") ||
		!strings.Contains(got, "Could not load governed memory: the daemon is unreachable") || strings.Contains(got, "on this daemon") {
		t.Errorf("memory tab = %q, want both loads to say the daemon is unreachable", got)
	}
	run(t, ctx, chromedp.Click(`[data-tab="files"]`))
	waitFor(t, ctx, "the files tab's error", `!!document.querySelector("#files-tree .err")`)
	if got := text(t, ctx, "#files-tree"); !strings.HasPrefix(got, "the daemon is unreachable") {
		t.Errorf("files tab = %q", got)
	}
	run(t, ctx, chromedp.Click(`[data-tab="runs"]`))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
	waitFor(t, ctx, "the detail's error", `!!document.querySelector("#run-detail .detail-error")`)
	if got := text(t, ctx, "#run-detail .detail-error"); !strings.HasPrefix(got, "Could not load this run's detail: the daemon is unreachable") {
		t.Errorf("run detail error = %q", got)
	}
}

// On a phone-width window the header wraps instead of pushing the live
// badge off the screen, the page does not scroll sideways, and a run's
// detail gets the window's width (under the list) instead of a sliver
// beside it.
func TestNarrowWindowLayout(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	id := d.submit(t, "Write a hello note please")
	waitFor(t, ctx, "the run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, id))
	run(t, ctx, chromedp.EmulateViewport(390, 844))
	js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
	waitFor(t, ctx, "its answer", `!!document.querySelector("#run-detail .answer")`)
	for _, tab := range []string{"runs", "calls", "tools", "files", "memory"} {
		run(t, ctx, chromedp.Click(`[data-tab="`+tab+`"]`))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => {
		  const live = document.getElementById("live").getBoundingClientRect();
		  const shown = document.querySelector(".tab.on .detail").getBoundingClientRect();
		  return { liveRight: live.right, liveBottom: live.bottom, detail: shown.width, page: document.documentElement.scrollWidth, window: innerWidth };
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if got["liveRight"] > got["window"] || got["liveBottom"] <= 0 {
			t.Errorf("%s: live badge at right %v of a %v-pixel window", tab, got["liveRight"], got["window"])
		}
		if got["page"] > got["window"] {
			t.Errorf("%s: page is %v pixels wide in a %v-pixel window", tab, got["page"], got["window"])
		}
		if got["detail"] < 0.9*got["window"] {
			t.Errorf("%s: detail is %v pixels wide in a %v-pixel window", tab, got["detail"], got["window"])
		}
	}
	if *shotsDir != "" {
		screenshot(t, ctx, *shotsDir, "8-narrow")
	}
}

// consoleErrors opens url in a new tab and gathers what the page logs as
// an error: an uncaught exception, a console.error, or an error entry of
// the browser's log (a failed request among them).
func consoleErrors(t *testing.T, url string) (context.Context, func() []string) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(chromium.Context(t))
	t.Cleanup(cancel)
	var mu sync.Mutex
	var errs []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s (%s)", m.Text, m.URL))
				mu.Unlock()
			}
		}
	}()
	run(t, ctx, chromedp.Navigate(url))
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(errs) }
}

// The Cockpit logs no error in the browser's console, on any tab, with a
// run of each kind to show: no exception, no failed request (the browser's
// own request for a page icon included).
func TestNoConsoleErrors(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	done := d.submit(t, "Write a hello note please")
	failed := d.submit(t, "[fail] please")
	waitDone(t, d, done)
	waitDone(t, d, failed)
	ctx, errs := consoleErrors(t, d.url+"/dev")
	waitFor(t, ctx, "the stream", `document.getElementById("live").className === "on"`)
	for _, id := range []string{done, failed} {
		js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
		waitFor(t, ctx, "the run's detail", fmt.Sprintf(`!!document.querySelector("#run-detail h3") && document.querySelector("#run-detail h2").textContent.startsWith(%q)`, id))
		for _, tab := range []string{"calls", "tools", "files", "memory", "runs"} {
			run(t, ctx, chromedp.Click(`[data-tab="`+tab+`"]`))
		}
	}
	run(t, ctx, chromedp.Click(`[data-tab="files"]`))
	waitFor(t, ctx, "the tree", `!!document.querySelector('#files-tree [data-path="DELTA.md"]')`)
	js(t, ctx, `document.querySelector('#files-tree [data-path="DELTA.md"]').click()`)
	waitFor(t, ctx, "the editor", `!!document.getElementById("editor")`)
	run(t, ctx, chromedp.Click(`[data-tab="memory"]`))
	waitFor(t, ctx, "the memory tab", `!!document.querySelector("#memory-rows h2")`)
	if got := errs(); len(got) > 0 {
		t.Errorf("console errors:\n  %s", strings.Join(got, "\n  "))
	}
}

// navigate runs actions that load another page and waits for its load.
func navigate(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.RunResponse(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// With an inspect token the operator signs in on the form, and signs out
// with the header's button: back on the form, and the browser no longer
// opens the API; a sign-out that fails says why. On a loopback daemon with
// no token there is no session and no such button.
func TestSignInAndOut(t *testing.T) {
	const token = "inspect-token-for-the-test"
	d := startDaemonWith(t, opsScript, map[string]string{"DELTA_INSPECT_TOKEN": token})
	ctx := chromium.Open(t, d.url+"/dev")
	waitFor(t, ctx, "the sign-in form", `!!document.querySelector('input[name="token"]')`)
	navigate(t, ctx, "sign in", chromedp.SetValue(`input[name="token"]`, token), chromedp.Click(`button[type="submit"]`))
	waitFor(t, ctx, "the stream", `!!document.getElementById("live") && document.getElementById("live").className === "on"`)
	waitFor(t, ctx, "the sign-out button", `!document.getElementById("signout").hidden`)

	navigate(t, ctx, "sign out", chromedp.Click(`#signout`))
	waitFor(t, ctx, "the sign-in form again", `!!document.querySelector('input[name="token"]')`)
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(tctx, chromedp.Navigate(d.url+"/v1/dev/runs"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusUnauthorized {
		t.Errorf("GET /v1/dev/runs after signing out = %d, want 401", resp.Status)
	}

	// A sign-out the daemon never answers says so, and stays signed in.
	gone := startDaemonWith(t, opsScript, map[string]string{"DELTA_INSPECT_TOKEN": token})
	gctx := chromium.Open(t, gone.url+"/dev")
	waitFor(t, gctx, "the sign-in form", `!!document.querySelector('input[name="token"]')`)
	navigate(t, gctx, "sign in", chromedp.SetValue(`input[name="token"]`, token), chromedp.Click(`button[type="submit"]`))
	waitFor(t, gctx, "the sign-out button", `!!document.getElementById("signout") && !document.getElementById("signout").hidden`)
	gone.stop()
	run(t, gctx, chromedp.Click(`#signout`))
	waitFor(t, gctx, "the failure", `document.getElementById("signout-note").textContent !== ""`)
	if got := text(t, gctx, "#signout-note"); !strings.HasPrefix(got, "Sign-out failed: the daemon is unreachable") {
		t.Errorf("sign-out note = %q", got)
	}

	open := startDaemonWith(t, opsScript, nil)
	octx := openLive(t, open)
	if hidden, err := chromedp.Run(octx, chromedp.Evaluate[bool](`document.getElementById("signout").hidden`)); err != nil || !hidden {
		t.Errorf("sign-out button on a loopback daemon without a token: hidden = %v (%v), want hidden", hidden, err)
	}
}

// With no run yet, the Calls and Tools tabs say so instead of offering an
// empty run picker over "no calls for this run", and pick the first run
// when it arrives; a failed run with capture on says it made no call, not
// how to turn capture on.
func TestCallsAndToolsEmptyStates(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	ctx := openLive(t, d)
	waitFor(t, ctx, "the config", `window.cockpit.state.capture === true`)
	for _, tab := range []string{"calls", "tools"} {
		run(t, ctx, chromedp.Click(`[data-tab="`+tab+`"]`))
		waitFor(t, ctx, tab+" to render", fmt.Sprintf(`document.getElementById(%q).textContent !== ""`, tab+"-list"))
		if got := text(t, ctx, "#"+tab+"-list"); !strings.HasPrefix(got, "No runs yet.") {
			t.Errorf("%s tab with no runs = %q", tab, got)
		}
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll("#%s-list select").length`, tab))); n != 0 {
			t.Errorf("%s tab with no runs has a run picker", tab)
		}
	}
	run(t, ctx, chromedp.Click(`[data-tab="calls"]`))
	id := d.submit(t, "[fail] please")
	waitFor(t, ctx, "the run to fail", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="failed"]')`, id))
	waitFor(t, ctx, "the calls tab to pick the new run", `!!document.querySelector("#calls-list select")`)
	waitFor(t, ctx, "its message", `document.querySelector("#calls-list .empty") !== null`)
	if got := text(t, ctx, "#calls-list .empty"); got != "No captured calls for this run: no model call of it served a turn." {
		t.Errorf("calls of a failed run with capture on = %q", got)
	}
}

// startGatedDaemon starts a daemon on gatedScript; release lets the
// held turn go, and runs again, harmlessly, when the test ends.
func startGatedDaemon(t *testing.T) (d *daemonUnderTest, release func()) {
	gate := make(chan struct{})
	d = startDaemonWith(t, gatedScript(gate), nil)
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	return d, release
}

// gatedScript is agentScript whose second turn (the answer after the tool
// result) waits until gate is closed.
func gatedScript(gate chan struct{}) func(ws string) modeltest.Script {
	return func(ws string) modeltest.Script {
		agent := agentScript(ws)
		return func(req modeltest.ChatRequest) modeltest.Reply {
			for _, m := range req.Messages {
				if m.Role == "tool" {
					<-gate
					break
				}
			}
			return agent(req)
		}
	}
}

// A captured call the operator is reading stays as they left it (a
// section they opened stays open) while the run goes on and new turns are
// captured.
func TestCallDetailStaysOpenWhileRunGoesOn(t *testing.T) {
	d, release := startGatedDaemon(t)
	ctx := openLive(t, d)
	id := d.submit(t, "Write a hello note please")
	waitFor(t, ctx, "the run's first turn", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="running"]') && window.cockpit.state.callCount(window.cockpit.state.runs.get(%q)) === 1`, id, id))
	run(t, ctx, chromedp.Click(`[data-tab="calls"]`))
	waitFor(t, ctx, "the first call", `document.querySelectorAll("#calls-list [data-call]").length === 1`)
	run(t, ctx, chromedp.Click(`#calls-list [data-call]`))
	waitFor(t, ctx, "its detail", `!!document.querySelector("#call-detail details.system")`)
	js(t, ctx, `document.querySelector("#call-detail details.system").open = true`)

	release()
	waitFor(t, ctx, "the second call", `document.querySelectorAll("#calls-list [data-call]").length === 2`)
	if open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#call-detail details.system").open`)); !open {
		t.Errorf("the first call's system spine closed itself when the second turn was captured")
	}
	if got := text(t, ctx, "#call-detail h2"); !strings.HasPrefix(got, "Turn 1") {
		t.Errorf("call detail = %q, want turn 1 still", got)
	}
}

// Text selected in a tool call's result stays selected while the run goes
// on to its next turn.
func TestToolDetailKeepsSelectionWhileRunGoesOn(t *testing.T) {
	d, release := startGatedDaemon(t)
	ctx := openLive(t, d)
	id := d.submit(t, "Write a hello note please")
	waitFor(t, ctx, "the run's tool call", fmt.Sprintf(`(window.cockpit.state.events.get(%q) || []).some((ev) => ev.name === "tool.result")`, id))
	run(t, ctx, chromedp.Click(`[data-tab="tools"]`))
	waitFor(t, ctx, "the journal", `document.querySelectorAll("#tools-list [data-tool]").length === 1`)
	run(t, ctx, chromedp.Click(`#tools-list [data-tool]`))
	waitFor(t, ctx, "the result", `!!document.querySelector("#tool-detail pre.result")`)
	js(t, ctx, `const r = document.createRange(); r.selectNodeContents(document.querySelector("#tool-detail pre.result")); getSelection().removeAllRanges(); getSelection().addRange(r)`)

	release()
	waitFor(t, ctx, "the run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]') && window.cockpit.state.detail.run.status === "done"`, id))
	sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getSelection().toString()`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sel, "notes/hello.txt") {
		t.Errorf("selection after the run went on = %q, want the tool result still selected", sel)
	}
}

// Restoring a DELTA.md revision says what happened on the page: on a
// daemon that allows inspection writes, which revision is back and where
// what it replaced went; on one that does not, the daemon's refusal.
func TestRevisionRestoreFeedback(t *testing.T) {
	for _, write := range []string{"1", "0"} {
		d := startDaemonWith(t, agentScript, map[string]string{"DELTA_INSPECT_WRITE": write})
		ctx := openLive(t, d)
		js(t, ctx, `window.confirm = () => true; window.alert = (m) => { window.alerted = m }`)
		id := d.submit(t, "remember: # Who I am\nA lesson from the agent.\n")
		waitFor(t, ctx, "the remember run to finish", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="done"]')`, id))
		run(t, ctx, chromedp.Click(`[data-tab="memory"]`))
		waitFor(t, ctx, "the revision", `document.querySelectorAll("#memory [data-rev]").length === 1`)
		run(t, ctx, chromedp.Click(`#memory [data-rev] button.restore`))
		waitFor(t, ctx, "the restore's note", `(document.getElementById("memory-note") || {}).textContent > ""`)
		note := text(t, ctx, "#memory-note")
		if write == "1" && !regexp.MustCompile(`^Restored revision 1: DELTA\.md is version [0-9a-f]+ again; what it replaced is kept as revision 2\.$`).MatchString(note) {
			t.Errorf("note after a restore = %q", note)
		}
		if write == "0" && note != "Restore failed: inspection writes are off: set DELTA_INSPECT_WRITE=1" {
			t.Errorf("note after a refused restore = %q", note)
		}
	}
}

// The file editor loses no edit: an unsaved edit survives opening another
// file and coming back (the tree marks it), and a save over a file the
// agent changed meanwhile is refused, keeping both the edit in the editor
// and the agent's write on disk, until the operator chooses Overwrite.
func TestFileEditorKeepsEdits(t *testing.T) {
	d := startDaemon(t)
	if err := os.WriteFile(filepath.Join(d.ws, "notes.md"), []byte("agent v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := openLive(t, d)
	run(t, ctx, chromedp.Click(`[data-tab="files"]`))
	waitFor(t, ctx, "the tree", `!!document.querySelector('#files-tree [data-path="notes.md"]')`)
	js(t, ctx, `document.querySelector('#files-tree [data-path="notes.md"]').click()`)
	waitFor(t, ctx, "the editor", `(document.getElementById("editor") || {}).value === "agent v1\n"`)
	js(t, ctx, `const a = document.getElementById("editor"); a.value = "operator edit\n"; a.dispatchEvent(new Event("input"))`)
	waitFor(t, ctx, "the unsaved mark", `!!document.querySelector('#files-tree [data-path="notes.md"] .draft')`)

	js(t, ctx, `document.querySelector('#files-tree [data-path="DELTA.md"]').click()`)
	waitFor(t, ctx, "DELTA.md", `(document.getElementById("editor") || {}).value === "# Who I am\n"`)
	js(t, ctx, `document.querySelector('#files-tree [data-path="notes.md"]').click()`)
	waitFor(t, ctx, "the kept edit", `(document.getElementById("editor") || {}).value === "operator edit\n"`)
	if note := text(t, ctx, "#save-note"); !strings.Contains(note, "unsaved edit") {
		t.Errorf("note on reopening = %q, want it to say the edit was kept", note)
	}

	if err := os.WriteFile(filepath.Join(d.ws, "notes.md"), []byte("agent v2\n"), 0o644); err != nil { // meanwhile
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Click(`#save`))
	waitFor(t, ctx, "the refusal", `document.getElementById("save-note").className === "err"`)
	if note := text(t, ctx, "#save-note"); !strings.Contains(note, "changed on disk since you opened it") {
		t.Errorf("note after a save over a changed file = %q", note)
	}
	if b, _ := os.ReadFile(filepath.Join(d.ws, "notes.md")); string(b) != "agent v2\n" {
		t.Errorf("after the refused save notes.md holds %q, want the agent's write", b)
	}
	if *shotsDir != "" {
		screenshot(t, ctx, *shotsDir, "g-file-changed")
	}
	run(t, ctx, chromedp.Click(`#overwrite`))
	waitFor(t, ctx, "the overwrite", `document.getElementById("save-note").textContent.startsWith("Saved")`)
	if b, _ := os.ReadFile(filepath.Join(d.ws, "notes.md")); string(b) != "operator edit\n" {
		t.Errorf("after Overwrite notes.md holds %q", b)
	}
	waitFor(t, ctx, "the mark gone", `!!document.querySelector('#files-tree [data-path="notes.md"]') && !document.querySelector('#files-tree .draft')`)
}

// The operator stops a running run from its detail: the run ends
// cancelled, the button goes with the running status. With inspection
// writes off the button says why it cannot, and the run goes on.
func TestCancelRunFromTheDetail(t *testing.T) {
	for _, write := range []string{"1", "0"} {
		gate := make(chan struct{})
		release := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(release)
		d := startDaemonWith(t, gatedScript(gate), map[string]string{"DELTA_INSPECT_WRITE": write})
		ctx := openLive(t, d)
		id := d.submit(t, "Write a hello note please")
		waitFor(t, ctx, "the run running", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="running"]')`, id))
		js(t, ctx, fmt.Sprintf(`document.querySelector('[data-run=%q]').click()`, id))
		waitFor(t, ctx, "the cancel button", `!!document.getElementById("cancel-run")`)
		run(t, ctx, chromedp.Click(`#cancel-run`))
		if write == "1" {
			waitFor(t, ctx, "the run cancelled", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="cancelled"]') && !document.getElementById("cancel-run")`, id))
			resp, err := http.Get(d.url + "/v1/tasks/" + id)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `"status":"cancelled"`) {
				t.Errorf("task after the Cockpit's cancel = %s", b)
			}
			continue
		}
		waitFor(t, ctx, "the refusal", `(document.getElementById("cancel-note") || {}).textContent > ""`)
		if note := text(t, ctx, "#cancel-note"); !strings.Contains(note, "DELTA_INSPECT_WRITE") {
			t.Errorf("cancel note with writes off = %q", note)
		}
		release()
		waitDone(t, d, id)
	}
}

// Opening the Cockpit reads the events of the runs it lists (the newest
// 200), not the whole table: older runs' events are not replayed, every
// listed run's timeline is whole, and new runs still arrive live.
func TestLoadReplaysOnlyTheListedRuns(t *testing.T) {
	d := startDaemonWith(t, opsScript, nil)
	var ids []string
	for _, batch := range []int{3, 200} { // yesterday's runs, then today's
		from := len(ids)
		for i := range batch {
			ids = append(ids, d.submit(t, fmt.Sprintf("[fail] run %d", from+i)))
		}
		for _, id := range ids[from:] {
			waitDone(t, d, id)
		}
	}
	stored := d.storedIDs(t)
	ctx := openLive(t, d)
	newest := ids[len(ids)-1]
	waitFor(t, ctx, "the newest run's whole timeline", fmt.Sprintf(`(window.cockpit.state.events.get(%q) || []).some((e) => e.name === "run.finished")`, newest))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](`window.cockpit.eventIds()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) > len(stored)-15 { // each old run has 5 events
		t.Errorf("the page read %d of %d stored events, want only the listed runs'", len(got), len(stored))
	}
	for _, id := range ids[:3] {
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`(window.cockpit.state.events.get(%q) || []).length`, id))); n != 0 {
			t.Errorf("run %s, older than the list, had %d events replayed", id, n)
		}
	}
	for _, id := range []string{ids[3], newest} {
		evs, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`(window.cockpit.state.events.get(%q) || []).map((e) => e.name)`, id)))
		if len(evs) < 3 || evs[0] != "run.queued" || evs[len(evs)-1] != "run.finished" {
			t.Errorf("listed run %s's timeline = %v, want it whole", id, evs)
		}
	}
	late := d.submit(t, "[fail] a late run")
	waitFor(t, ctx, "the late run live", fmt.Sprintf(`!!document.querySelector('[data-run=%q][data-status="failed"]')`, late))
}
