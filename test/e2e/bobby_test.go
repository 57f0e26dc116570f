package e2e

// The product promise, end to end: a delta agent connected to bobby over MCP
// does real work on the web. Real delta and bobby binaries, real Chromium,
// real MCP over stdio, a real loopback shop; the scripted model is the only
// fake, and it decides every call from the tool results it got back (refs,
// the workflow handle, prices), the way a real model must.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/test/bobbytest"
)

var (
	bobbyOnce sync.Once
	bobbyBin  string
	bobbyErr  error
)

// needBobby returns the bobby binary, built once per test binary next to
// deltaBin (TestMain removes that directory), so tests that never drive a
// browser pay nothing. Without Chromium it skips locally and fails in CI.
func needBobby(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(config.DefaultBrowserPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but Chromium is missing at %s: bobby needs it (apt-get install -y chromium)", config.DefaultBrowserPath)
		}
		t.Skipf("Chromium is missing at %s (apt-get install -y chromium): the delta+bobby tests need a real browser", config.DefaultBrowserPath)
	}
	bobbyOnce.Do(func() {
		bin := filepath.Join(filepath.Dir(deltaBin), "bobby")
		if bobbyErr = bobbytest.Build(bin); bobbyErr == nil {
			bobbyBin = bin
		}
	})
	if bobbyErr != nil {
		t.Fatal(bobbyErr)
	}
	return bobbyBin
}

// bobbyServers is DELTA_MCP_SERVERS for one bobby stdio child with its own
// config and profile directory, starting in the "act" phase: it holds click
// and control_action, and command_execute reaches the verify-phase
// screenshot. The principal comes from the stdio bootstrap variables, with
// the screenshot capabilities.
func bobbyServers(t *testing.T, bin string) string {
	t.Helper()
	return bobbyServersIn(t, bin, "act")
}

// bobbyServersIn is bobbyServers starting in phase ("" = bobby's default,
// explore).
func bobbyServersIn(t *testing.T, bin, phase string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("[browser]\ndata_dir = %q\n", filepath.Join(dir, "profile"))
	if phase != "" {
		cfg += fmt.Sprintf("\n[toolset]\nstart_phase = %q\n", phase)
	}
	path := filepath.Join(dir, "bobby.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	servers, err := json.Marshal([]map[string]any{{
		"name":    "bobby",
		"command": []string{bin, "stdio"},
		"env": map[string]string{
			config.EnvConfig:                path,
			config.EnvBootstrapPrincipal:    "delta-agent",
			config.EnvBootstrapCapabilities: "browser:mutate,page:read,artifact:capture,artifact:read",
			"TMPDIR":                        dir,
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(servers)
}

// submitAndWait posts a task and waits for it to end; the run's answer and
// id come back.
func (d *daemon) submitAndWait(input string) (status, output, id string) {
	d.t.Helper()
	body, _ := json.Marshal(map[string]string{"input": input})
	s, ack := d.call("POST", "/v1/tasks", string(body))
	id, _ = ack["id"].(string)
	if s != 202 || id == "" {
		d.t.Fatalf("submit: %d %v", s, ack)
	}
	v := d.waitStatus(id, "done", "failed", "cancelled")
	res, _ := v["result"].(map[string]any)
	output, _ = res["output_text"].(string)
	status, _ = v["status"].(string)
	return status, output, id
}

// toolEvent is one tool.call or tool.result of a run's events page.
type toolEvent struct {
	Event  string `json:"-"` // tool.call or tool.result
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Error  bool   `json:"is_error"`
}

// toolEvents pages through the run's stored events.
func (d *daemon) toolEvents(id string) []toolEvent {
	d.t.Helper()
	var out []toolEvent
	since := 0.0
	for range 50 {
		_, page := d.call("GET", fmt.Sprintf("/v1/tasks/%s/events?since=%d&limit=500", id, int64(since)), "")
		evs, _ := page["events"].([]any)
		for _, e := range evs {
			m := e.(map[string]any)
			name, _ := m["name"].(string)
			if name != "tool.call" && name != "tool.result" {
				continue
			}
			b, _ := json.Marshal(m["data"])
			te := toolEvent{Event: name}
			if err := json.Unmarshal(b, &te); err != nil {
				d.t.Fatalf("%s data %s: %v", name, b, err)
			}
			out = append(out, te)
		}
		if done, _ := page["done"].(bool); done || len(evs) == 0 {
			return out
		}
		since, _ = page["cursor"].(float64)
	}
	d.t.Fatal("the events page never ended")
	return nil
}

// checkToolOrder asserts that, search_tools aside, the run called exactly
// want in order, each call answered by its result before the next began.
func checkToolOrder(t *testing.T, evs []toolEvent, want []string) map[string]toolEvent {
	t.Helper()
	results := map[string]toolEvent{}
	var called []string
	open := ""
	for _, e := range evs {
		if e.Name == "search_tools" {
			continue
		}
		switch e.Event {
		case "tool.call":
			if open != "" {
				t.Errorf("tool.call %s (%s) before the result of %s", e.CallID, e.Name, open)
			}
			called, open = append(called, e.Name), e.CallID
		case "tool.result":
			if e.CallID != open {
				t.Errorf("tool.result for %s while %s was open", e.CallID, open)
			}
			results[e.CallID], open = e, ""
		}
	}
	if open != "" {
		t.Errorf("call %s has no tool.result", open)
	}
	if !slices.Equal(called, want) {
		t.Errorf("tool calls in order:\n got %v\nwant %v", called, want)
	}
	return results
}

// requestAfter returns the first model request that holds the result of
// call id: the request the model made right after that call.
func requestAfter(reqs []modeltest.ChatRequest, id string) (int, bool) {
	for i, r := range reqs {
		if lastToolText(r, id) != "" {
			return i, true
		}
	}
	return 0, false
}

// TestAgentShopsThroughBobby: the agent opens the shop in Chromium through
// bobby, clicks through to a product, submits the question form, takes a
// screenshot, and writes a report holding facts only the live pages had.
// "vision": bobby's tools are resident and the screenshot reaches the model
// as an image. "progressive": a 300-tool server crowds the envelope past
// the guardrail, so the agent must find each bobby tool with search_tools,
// and without DELTA_VISION_MODELS the model gets the marker only.
func TestAgentShopsThroughBobby(t *testing.T) {
	bin := needBobby(t)
	for _, tt := range []struct {
		name    string
		vision  bool
		crowded bool
	}{
		{"vision", true, false},
		{"progressive", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			site := startShop(t)
			question := fmt.Sprintf("Does it float? (check %08x)", rand.Uint32())
			paddle := site.products[1]
			fake := modeltest.Serve(t, webAgent(shopPlan(), func(c convo) string {
				f, err := c.facts()
				if err != nil {
					return "stopped: " + err.Error()
				}
				return fmt.Sprintf("Wrote report.md: %s costs %s (SKU %s); the shop logged the question as ticket %s.", f.name, f.price, f.sku, f.ticket)
			}))
			servers := bobbyServers(t, bin)
			if tt.crowded {
				big := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Tools: 300}))
				t.Cleanup(big.Close)
				servers = strings.TrimSuffix(servers, "]") + `,{"name":"big","url":"` + big.URL + `"}]`
			}
			env := []string{"DELTA_MCP_SERVERS=" + servers}
			if tt.vision {
				env = append(env, "DELTA_VISION_MODELS=^scripted/")
			}
			d := newDaemon(t, fake, env...)

			status, out, id := d.submitAndWait(shopTask(site.URL, paddle.Name, question))
			if status != "done" || !strings.HasPrefix(out, "Wrote report.md") || !strings.Contains(out, paddle.Price) {
				t.Fatalf("run %s: %q\nlog:\n%s", status, out, d.logText())
			}

			// The shop saw the navigation, the click's target page and one
			// submission carrying exactly the question.
			site.mu.Lock()
			asked, tickets := slices.Clone(site.asked), slices.Clone(site.tickets)
			site.mu.Unlock()
			for key, want := range map[string]int{
				"GET /": 1, "GET /product/" + paddle.Slug: 1, "POST /ask": 1,
				"GET /product/" + site.products[0].Slug: 0, "GET /product/" + site.products[2].Slug: 0,
			} {
				if got := site.count(key); got != want {
					t.Errorf("shop saw %q %d times, want %d", key, got, want)
				}
			}
			if len(asked) != 1 || asked[0].Get("q") != question || asked[0].Get("product") != paddle.Slug {
				t.Fatalf("form submissions %v, want one asking %q about %s", asked, question, paddle.Slug)
			}

			// The report holds what only the live pages said.
			report, err := os.ReadFile(filepath.Join(d.dir, "ws", "report.md"))
			if err != nil {
				t.Fatalf("report.md: %v (answer %q)", err, out)
			}
			for _, want := range []string{"# " + paddle.Name, "Price: " + paddle.Price, "SKU: " + paddle.SKU, "Question sent: " + question, "Shop ticket: " + tickets[0]} {
				if !strings.Contains(string(report), want) {
					t.Errorf("report.md lacks %q:\n%s", want, report)
				}
			}

			reqs := fake.Requests()
			checkScreenshot(t, d, reqs, tt.vision)

			// Progressive loading: resident tools are called at once;
			// crowded out, each is found with search_tools first.
			if got := reqs[0].HasTool("bobby__workflow_start"); got == tt.crowded {
				t.Errorf("first request offers bobby__workflow_start: %v with %d tools offered", got, len(reqs[0].Tools))
			}
			evs := d.toolEvents(id)
			searches := 0
			for _, e := range evs {
				if e.Event == "tool.call" && e.Name == "search_tools" {
					searches++
				}
			}
			if (searches > 0) != tt.crowded {
				t.Errorf("%d search_tools calls", searches)
			}

			// /v1/status shows bobby connected with its tools registered.
			checkBobbyStatus(t, d, "bobby__workflow_start", "bobby__a11y_snapshot", "bobby__click", "bobby__control_action", "bobby__command_execute")

			// The events page tells the run in order.
			results := checkToolOrder(t, evs, []string{
				"bobby__workflow_start", "bobby__a11y_snapshot", "bobby__click", "bobby__a11y_snapshot",
				"bobby__control_action", "bobby__click", "bobby__a11y_snapshot", "bobby__command_execute", "write_file",
			})
			for callID, r := range results {
				if r.Error {
					t.Errorf("tool.result of %s (%s) is an error", callID, r.Name)
				}
			}
		})
	}
}

// checkScreenshot: the screenshot came back as an MCP image, was saved
// under .delta/media as the very PNG bobby reported (sha256, size), its
// marker is in the result, and with vision the next model request, and no
// earlier one, carries exactly that image.
func checkScreenshot(t *testing.T, d *daemon, reqs []modeltest.ChatRequest, vision bool) {
	t.Helper()
	at, ok := requestAfter(reqs, "shot")
	if !ok {
		t.Fatalf("no model request answered the screenshot")
	}
	shotText := lastToolText(reqs[at], "shot")
	var art struct {
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
		Width  int    `json:"width"`
		Height int    `json:"height"`
	}
	if m := regexp.MustCompile(`artifact: (\{.*\})`).FindStringSubmatch(shotText); m == nil || json.Unmarshal([]byte(m[1]), &art) != nil || art.SHA256 == "" {
		t.Fatalf("screenshot result lacks its artifact evidence: %s", shotText)
	}
	marker := regexp.MustCompile(`\[image: (\.delta/media/\S+/bobby__command_execute-shot-1\.png) \(image/png, (\d+) bytes\)\]`).FindStringSubmatch(shotText)
	if marker == nil || marker[2] != itoa(art.Bytes) {
		t.Fatalf("screenshot result lacks the saved image's marker for %d bytes: %s", art.Bytes, shotText)
	}
	saved, err := os.ReadFile(filepath.Join(d.dir, "ws", filepath.FromSlash(marker[1])))
	if err != nil {
		t.Fatalf("saved screenshot: %v", err)
	}
	if sum := sha256.Sum256(saved); hex.EncodeToString(sum[:]) != art.SHA256 {
		t.Errorf("saved %s is not the PNG bobby captured", marker[1])
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(saved)); err != nil || cfg.Width != art.Width || cfg.Height != art.Height {
		t.Errorf("saved screenshot: %v, %dx%d, want a %dx%d PNG", err, cfg.Width, cfg.Height, art.Width, art.Height)
	}
	for i, r := range reqs[:at] {
		if n := len(r.Images()); n != 0 {
			t.Errorf("model request %d, before the screenshot, carried %d images", i, n)
		}
	}
	got := reqs[at].Images()
	if !vision {
		if len(got) != 0 {
			t.Errorf("without DELTA_VISION_MODELS the model got %d images", len(got))
		}
		return
	}
	want := modeltest.ChatImage{MIME: "image/png", Bytes: art.Bytes, SHA256: art.SHA256}
	if len(got) != 1 || got[0] != want {
		t.Errorf("the model request after the screenshot carried %+v, want %+v", got, want)
	}
}

// lastToolText is the content of the tool message for call id in r.
func lastToolText(r modeltest.ChatRequest, id string) string {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	return ""
}

// mcpServerView is one entry of /v1/status mcp_servers.
type mcpServerView struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	Tools     int    `json:"tools"`
}

// checkBobbyStatus asserts /v1/status lists bobby as connected, with a tool
// count equal to its registered tools, among them uses.
func checkBobbyStatus(t *testing.T, d *daemon, uses ...string) {
	t.Helper()
	_, st := d.call("GET", "/v1/status", "")
	b, _ := json.Marshal(st)
	var view struct {
		Tools struct {
			Registered []string `json:"registered"`
		} `json:"tools"`
		MCP []mcpServerView `json:"mcp_servers"`
	}
	if err := json.Unmarshal(b, &view); err != nil {
		t.Fatalf("status %s: %v", b, err)
	}
	registered := 0
	for _, n := range view.Tools.Registered {
		if strings.HasPrefix(n, "bobby__") {
			registered++
		}
	}
	for _, n := range uses {
		if !slices.Contains(view.Tools.Registered, n) {
			t.Errorf("registered tools lack %s: %v", n, view.Tools.Registered)
		}
	}
	i := slices.IndexFunc(view.MCP, func(s mcpServerView) bool { return s.Name == "bobby" })
	if i < 0 || view.MCP[i].Transport != "stdio" || !view.MCP[i].Connected || view.MCP[i].Tools == 0 || view.MCP[i].Tools != registered {
		t.Errorf("mcp_servers %+v, want bobby connected over stdio with its %d registered tools", view.MCP, registered)
	}
}

// TestAgentRecoversFromBobbyError: clicking a ref from the catalog after
// the page navigated away fails in bobby; the model gets bobby's reason and
// repair hint as an error result, follows the hint, and the run completes.
func TestAgentRecoversFromBobbyError(t *testing.T) {
	bin := needBobby(t)
	site := startShop(t)
	plan := append(shopPlan()[:3:3], // start, catalog, open
		bobbyStep("stale", "click", func(c convo) (map[string]any, error) {
			ref, err := productLink(c, "catalog") // the catalog is gone
			return map[string]any{"target": map[string]any{"ref": ref}}, err
		}),
		bobbyStep("again", "a11y_snapshot", nil),
	)
	plan[3].fails = true
	fake := modeltest.Serve(t, webAgent(plan, func(c convo) string {
		heading, err := c.find("again", "heading", `heading "([^"]+)" \[level=1\]`)
		if err != nil {
			return "stopped: " + err.Error()
		}
		return "The click failed (" + c.results["stale"] + "), so I took a new snapshot: the page is " + heading + "."
	}))
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+bobbyServers(t, bin))
	paddle := site.products[1]
	status, out, id := d.submitAndWait(shopTask(site.URL, paddle.Name, "unused"))
	if status != "done" || !strings.Contains(out, "the page is "+paddle.Name) {
		t.Fatalf("run %s: %q\nlog:\n%s", status, out, d.logText())
	}
	reqs := fake.Requests()
	at, ok := requestAfter(reqs, "stale")
	if !ok {
		t.Fatal("no model request answered the stale click")
	}
	text := lastToolText(reqs[at], "stale")
	ref, _ := productLink(readConvo(reqs[at]), "catalog")
	for _, want := range []string{
		"error: MCP result from server bobby",
		"failed click",
		"error targetNotFound",
		"ref " + ref + " names no element in this page",
		"repair: takeSnapshot bobby://failure-taxonomy#targetNotFound",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the model's error result lacks %q:\n%s", want, text)
		}
	}
	results := checkToolOrder(t, d.toolEvents(id), []string{
		"bobby__workflow_start", "bobby__a11y_snapshot", "bobby__click", "bobby__click", "bobby__a11y_snapshot",
	})
	for callID, r := range results {
		if r.Error != (callID == "stale") {
			t.Errorf("tool.result of %s: is_error=%v", callID, r.Error)
		}
	}
	if n := site.count("GET /product/" + paddle.Slug); n != 1 {
		t.Errorf("the stale click reached the shop: %d detail page loads", n)
	}
}

// TestAgentSwitchesBobbyPhase starts bobby in its default explore phase,
// where click is not advertised at all: the agent selects the act phase,
// bobby announces the new tools with notifications/tools/list_changed,
// delta lists them again, and the agent clicks with a tool it was not
// offered at the start.
func TestAgentSwitchesBobbyPhase(t *testing.T) {
	bin := needBobby(t)
	site := startShop(t)
	plan := append(shopPlan()[:2:2], // start, catalog
		planStep{id: "phase", tool: "bobby__toolset_select", args: func(convo) (any, error) {
			return map[string]any{"phase": "act"}, nil
		}},
		shopPlan()[2], // open: click the product link
		bobbyStep("detail", "a11y_snapshot", nil),
	)
	fake := modeltest.Serve(t, webAgent(plan, func(c convo) string {
		heading, err := c.find("detail", "heading", `heading "([^"]+)" \[level=1\]`)
		if err != nil {
			return "stopped: " + err.Error()
		}
		return "Switched to act and opened " + heading + "."
	}))
	d := newDaemon(t, fake, "DELTA_MCP_SERVERS="+bobbyServersIn(t, bin, ""))
	paddle := site.products[1]
	status, out, id := d.submitAndWait(shopTask(site.URL, paddle.Name, "unused"))
	if status != "done" || out != "Switched to act and opened "+paddle.Name+"." {
		_, evp := d.call("GET", "/v1/tasks/"+id+"/events?since=0&limit=500", "")
		b, _ := json.Marshal(evp)
		t.Fatalf("run %s: %q\nevents: %s\nlog:\n%s", status, out, b, d.logText())
	}
	reqs := fake.Requests()
	if reqs[0].HasTool("bobby__click") || !reqs[0].HasTool("bobby__toolset_select") {
		t.Fatalf("first request: click offered %v, toolset_select offered %v; want only toolset_select (explore phase)",
			reqs[0].HasTool("bobby__click"), reqs[0].HasTool("bobby__toolset_select"))
	}
	checkToolOrder(t, d.toolEvents(id), []string{
		"bobby__workflow_start", "bobby__a11y_snapshot", "bobby__toolset_select", "bobby__click", "bobby__a11y_snapshot",
	})
	if n := site.count("GET /product/" + paddle.Slug); n != 1 {
		t.Errorf("the click reached the product page %d times, want 1", n)
	}
}
