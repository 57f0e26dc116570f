package bobbye2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/gatewaytest"
	"github.com/deltaharness/delta/internal/bobby/pagetest"
	"github.com/deltaharness/delta/test/bobbytest"
)

// allCaps is every capability bobby knows: the steps below use them all.
const allCaps = "browser:mutate,page:read,artifact:capture,artifact:read,file:upload"

// goRun is one transport's go-sdk client session and what its steps share.
type goRun struct {
	t           *testing.T
	cs          *mcp.ClientSession
	listChanged chan struct{}
	fixtures    string // http://127.0.0.1:PORT of the fixture server
	downloads   string // the bobby process's downloads root
	upload      string // a local file for upload_files
	principal   string
	version     string // the protocol version the client offers
	// sessionless: 2026-07-28 over HTTP, served on the principal's
	// context without an MCP session.
	sessionless bool

	handle, sessionID, pageID string // the workflow the steps drive
}

func (r *goRun) page(name string) string { return r.fixtures + "/" + name }

// call runs a tool and decodes its structured content.
func (r *goRun) call(name string, args any) (*mcp.CallToolResult, map[string]any) {
	r.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		r.t.Fatalf("tools/call %s: %v", name, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		r.t.Fatalf("%s: structuredContent is not an object: %s", name, b)
	}
	return res, m
}

// ok calls a tool and fails the step unless it completed.
func (r *goRun) ok(name string, args any) map[string]any {
	r.t.Helper()
	res, m := r.call(name, args)
	if res.IsError || m["status"] != "completed" {
		r.t.Fatalf("%s(%s) did not complete: %s", name, dump(args), dump(m))
	}
	return m
}

// fail calls a tool and checks it is an isError result with the code (or
// the schemaViolation reason).
func (r *goRun) fail(name string, args any, code string) map[string]any {
	r.t.Helper()
	res, m := r.call(name, args)
	got, _ := get(m, "error", "code").(string)
	if got == "" {
		got, _ = m["reason"].(string)
	}
	if !res.IsError || got != code {
		r.t.Fatalf("%s(%s) = isError %v code %q, want %q: %s", name, dump(args), res.IsError, got, code, dump(m))
	}
	return m
}

func (r *goRun) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

func (r *goRun) tools() map[string]*mcp.Tool {
	r.t.Helper()
	res, err := r.cs.ListTools(r.ctx(), nil)
	if err != nil {
		r.t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func (r *goRun) h(extra map[string]any) map[string]any {
	m := map[string]any{"workflowHandle": r.handle}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func get(m map[string]any, path ...string) any { return gatewaytest.Get(m, path...) }

func str(v any) string { return gatewaytest.Str(v) }

// full is v as JSON, for assertions.
func full(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// dump is v as JSON cut for a failure message.
func dump(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 1500 {
		b = append(b[:1500], "…"...)
	}
	return string(b)
}

// goStep is one step of the go-sdk client's walk through bobby's tool
// families; the same table runs over stdio and over streamable HTTP.
type goStep struct {
	family, name string
	run          func(r *goRun)
}

var goSteps = []goStep{
	{"lifecycle", "initialize", func(r *goRun) {
		init := r.cs.InitializeResult()
		if init.ProtocolVersion != r.version {
			r.t.Errorf("negotiated %s, want %s", init.ProtocolVersion, r.version)
		}
		if init.ServerInfo == nil || init.ServerInfo.Name != "bobby" {
			r.t.Errorf("serverInfo = %+v", init.ServerInfo)
		}
		c := init.Capabilities
		if c.Tools == nil || !c.Tools.ListChanged || c.Resources == nil || c.Prompts == nil || c.Completions == nil {
			r.t.Errorf("capabilities = %s", dump(c))
		}
	}},
	{"lifecycle", "tools_list", func(r *goRun) {
		tools := r.tools()
		for _, n := range []string{"workflow_start", "workflow_observe", "intent_complete_form", "intent_submit_and_verify", "a11y_snapshot", "toolset_select"} {
			if tools[n] == nil {
				r.t.Errorf("explore phase lacks %s", n)
			}
		}
		if tools["click"] != nil {
			r.t.Error("click (act phase) listed in explore")
		}
		// The explore listing advertises a bare object output schema (it is
		// kept small); the other phases show each result's properties.
		for name, tool := range tools {
			out, _ := json.Marshal(tool.OutputSchema)
			if tool.Title == "" || tool.Annotations == nil || !strings.Contains(string(out), `"type":"object"`) {
				r.t.Errorf("tool %s: title %q, annotations %v, output schema %s", name, tool.Title, tool.Annotations, out)
			}
		}
	}},
	{"lifecycle", "runtime_info", func(r *goRun) {
		info := r.ok("runtime_info", nil)
		if info["principal"] != r.principal || info["phase"] != "explore" || get(info, "browser", "version") == nil {
			r.t.Errorf("runtime_info = %s", dump(info))
		}
		granted := fmt.Sprint(info["grantedCapabilities"])
		for _, c := range strings.Split(allCaps, ",") {
			if !strings.Contains(granted, c) {
				r.t.Errorf("grantedCapabilities %s lack %s", granted, c)
			}
		}
	}},
	{"lifecycle", "sessions_and_pages", func(r *goRun) {
		s := str(r.ok("session_create", map[string]any{"profile": "default"})["id"])
		p := r.ok("page_open", map[string]any{"sessionId": s, "url": r.page("index.html")})
		pid := str(p["id"])
		if get(p, "navigationOutcome", "httpStatus") != 200.0 || !strings.HasPrefix(str(p["url"]), r.fixtures) {
			r.t.Errorf("page_open with url = %s", dump(p))
		}
		second := str(r.ok("page_open", map[string]any{"sessionId": s})["id"])
		r.ok("page_activate", map[string]any{"sessionId": s, "pageId": pid})
		pl := r.ok("page_list", map[string]any{"sessionId": s})
		if pages, _ := pl["pages"].([]any); len(pages) != 2 || str(pl["activePageId"]) != pid {
			r.t.Errorf("page_list = %s", dump(pl))
		}
		r.ok("page_close", map[string]any{"sessionId": s, "pageId": second})
		if !strings.Contains(full(r.ok("session_list", nil)), s) {
			r.t.Errorf("session_list lacks %s", s)
		}
		r.ok("session_close", map[string]any{"sessionId": s})
		if strings.Contains(full(r.ok("session_list", nil)), s) {
			r.t.Errorf("session_list still lists closed %s", s)
		}
		r.fail("page_list", map[string]any{"sessionId": s}, "notFound")
	}},
	{"lifecycle", "workflow_start_observe", func(r *goRun) {
		start := r.ok("workflow_start", map[string]any{"profile": "default", "url": r.page("index.html"),
			"executionPolicy": map[string]any{"javascriptEvaluation": true}})
		r.handle, r.sessionID, r.pageID = str(start["workflowHandle"]), str(start["sessionId"]), str(start["pageId"])
		if !strings.HasPrefix(r.handle, "wf_") || r.sessionID == "" || r.pageID == "" {
			r.t.Fatalf("workflow_start = %s", dump(start))
		}
		obs := r.ok("workflow_observe", r.h(map[string]any{"includeForms": true}))
		if !strings.Contains(full(obs), "Go") || !strings.Contains(full(obs), "Search") {
			r.t.Errorf("workflow_observe = %s", dump(obs))
		}
	}},
	{"lifecycle", "toolset_select", func(r *goRun) {
		if r.sessionless {
			// Phases belong to an MCP session; the later steps call tools
			// the start phase hides, which stay callable.
			m := r.fail("toolset_select", map[string]any{"phase": "act"}, "unsupported")
			if !strings.Contains(str(get(m, "error", "message")), "2025-11-25") {
				r.t.Errorf("toolset_select without a session = %s", dump(m))
			}
			if info := r.ok("runtime_info", nil); info["phase"] != "explore" {
				r.t.Errorf("phase = %v", info["phase"])
			}
			return
		}
		for len(r.listChanged) > 0 {
			<-r.listChanged
		}
		r.ok("toolset_select", map[string]any{"phase": "act"})
		select {
		case <-r.listChanged:
		case <-time.After(10 * time.Second):
			r.t.Fatal("no notifications/tools/list_changed after toolset_select")
		}
		tools := r.tools()
		if tools["click"] == nil || tools["intent_complete_form"] != nil {
			r.t.Errorf("act tools: %v", mapKeys(tools))
		}
		for name, tool := range tools {
			if out, _ := json.Marshal(tool.OutputSchema); !strings.Contains(string(out), `"status":{"type":"string"}`) {
				r.t.Errorf("act-phase %s output schema lacks status: %s", name, out)
			}
		}
		if info := r.ok("runtime_info", nil); info["phase"] != "act" {
			r.t.Errorf("phase after toolset_select = %v", info["phase"])
		}
	}},
	{"navigation", "navigate_click_wait", func(r *goRun) {
		nav := r.ok("navigate", r.h(map[string]any{"url": r.page("index.html")}))
		if get(nav, "evidence", "navigationOutcome") == nil && !strings.Contains(full(nav), "200") {
			r.t.Errorf("navigate = %s", dump(nav))
		}
		r.ok("click", r.h(map[string]any{"target": map[string]any{"role": "button", "name": "Go"}}))
		r.ok("wait_for", r.h(map[string]any{"condition": map[string]any{"kind": "text", "selector": "#msg",
			"matcher": map[string]any{"kind": "exact", "value": "clicked plain"}}}))
	}},
	{"input", "type_text_control_action_evaluate", func(r *goRun) {
		r.ok("type_text", r.h(map[string]any{"target": map[string]any{"role": "textbox", "name": "Search"}, "text": "lamps"}))
		r.ok("wait_for", r.h(map[string]any{"condition": map[string]any{"kind": "value", "selector": "input[name=q]",
			"matcher": map[string]any{"kind": "exact", "value": "lamps"}}}))
		ca := r.ok("control_action", r.h(map[string]any{"target": map[string]any{"role": "textbox", "name": "Search"},
			"action": map[string]any{"kind": "setText", "text": "chairs"}}))
		if get(ca, "evidence", "control", "applied") != true {
			r.t.Errorf("control_action = %s", dump(ca))
		}
		ev := r.ok("evaluate_javascript", r.h(map[string]any{"expression": "document.querySelector('input[name=q]').value + '/' + (6*7)"}))
		if get(ev, "evidence", "value") != "chairs/42" {
			r.t.Errorf("evaluate_javascript = %s", dump(ev))
		}
	}},
	{"snapshot", "observe_tools", func(r *goRun) {
		snap := r.ok("a11y_snapshot", r.h(nil))
		text := str(get(snap, "evidence", "accessibility", "text"))
		for _, want := range []string{`button "Go"`, `link "Next"`, "textbox"} {
			if !strings.Contains(text, want) {
				r.t.Errorf("a11y_snapshot lacks %s:\n%s", want, text)
			}
		}
		if ask := r.ok("context_ask", r.h(map[string]any{"question": "Go button"})); ask["answer"] == nil {
			r.t.Errorf("context_ask after a snapshot = %s", dump(ask))
		}
		if fs := r.ok("form_snapshot", r.h(nil)); !strings.Contains(full(fs), "Search") {
			r.t.Errorf("form_snapshot = %s", dump(fs))
		}
		if in := r.ok("inspect", r.h(map[string]any{"selector": "#msg"})); !strings.Contains(full(in), "clicked plain") {
			r.t.Errorf("inspect = %s", dump(in))
		}
		if ex := r.ok("extract_structured", r.h(map[string]any{"selector": "main", "fields": map[string]any{"heading": "h1", "link": "a@href"}})); !strings.Contains(full(ex), `"heading":"Fixture","link":"/next.html"`) {
			r.t.Errorf("extract_structured = %s", dump(ex))
		}
		shot := r.ok("screenshot", r.h(nil))
		uri := str(get(shot, "evidence", "artifact", "uri"))
		rr, err := r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || !bytes.HasPrefix(rr.Contents[0].Blob, []byte("\x89PNG")) {
			r.t.Errorf("screenshot artifact %q: %v", uri, err)
		}
	}},
	{"form", "complete_and_submit", func(r *goRun) {
		r.ok("navigate", r.h(map[string]any{"url": r.page("signup.html")}))
		r.fail("intent_submit_and_verify", r.h(nil), "formValidationFailed")
		loc := r.ok("intent_locate", r.h(map[string]any{"description": "Create account button"}))
		if !strings.Contains(full(loc), "Create account") {
			r.t.Errorf("intent_locate = %s", dump(loc))
		}
		r.ok("intent_fill", r.h(map[string]any{"fields": []any{map[string]any{"field": "Full name", "value": "Ada Lovelace"}}}))
		const password = "s3cret-Pa55word"
		done := r.ok("intent_complete_form", r.h(map[string]any{"values": map[string]any{
			"Email": "ada@example.com", "Password": password, "Plan": "Team", "I accept the terms": true}}))
		if strings.Contains(full(done), password) {
			r.t.Error("intent_complete_form echoes the password")
		}
		revealed, _ := get(done, "evidence", "revealedControls").([]any)
		if len(revealed) != 1 || !strings.Contains(full(revealed), "Team name") {
			r.t.Fatalf("revealedControls = %s", dump(get(done, "evidence", "revealedControls")))
		}
		r.ok("control_action", r.h(map[string]any{"target": get(revealed[0].(map[string]any), "target"),
			"action": map[string]any{"kind": "setText", "text": "Engines"}}))
		sub := r.ok("intent_submit_and_verify", r.h(map[string]any{"expect": map[string]any{"urlContains": "welcome", "textContains": "Welcome aboard"}}))
		if get(sub, "evidence", "submission", "status") != "verified" {
			r.t.Errorf("intent_submit_and_verify = %s", dump(sub))
		}
	}},
	{"intent", "tier_two", func(r *goRun) {
		page := r.page("families.html")
		r.ok("navigate", r.h(map[string]any{"url": page}))
		if dis := r.ok("intent_dismiss_obstruction", r.h(nil)); get(dis, "evidence", "obstructions", "dismissed") != 1.0 {
			r.t.Errorf("intent_dismiss_obstruction = %s", dump(dis))
		}
		ex := r.ok("intent_extract", r.h(map[string]any{"selector": "#prices"}))
		if rows, _ := get(ex, "evidence", "extraction", "rows").([]any); get(ex, "evidence", "extraction", "kind") != "table" || len(rows) != 2 {
			r.t.Errorf("intent_extract = %s", dump(ex))
		}
		r.ok("intent_wait_for_state", r.h(map[string]any{"conditions": []any{
			map[string]any{"kind": "url", "matcher": map[string]any{"kind": "contains", "value": "families"}},
			map[string]any{"kind": "networkQuiet", "idleMs": 100},
		}}))
		r.ok("a11y_snapshot", r.h(nil))
		if nb := r.ok("context_neighbors", r.h(map[string]any{"question": "Back to the fixture link"})); get(nb, "neighborhood", "node", "role") != "link" {
			r.t.Errorf("context_neighbors = %s", dump(nb))
		}
		loc := r.ok("command_execute", map[string]any{"envelope": map[string]any{"kind": "intent", "workflowHandle": r.handle,
			"input": map[string]any{"kind": "locate", "description": "Open a window button"}}})
		if loc["kind"] != "intent_locate" || !strings.Contains(full(loc), "Open a window") {
			r.t.Errorf("command_execute intent locate = %s", dump(loc))
		}
		if fo := r.ok("intent_follow", r.h(map[string]any{"selector": "#next"})); get(fo, "evidence", "follow", "outcome") != "navigated" {
			r.t.Errorf("intent_follow = %s", dump(fo))
		}
	}},
	{"popups", "click_and_wait_for_popup", func(r *goRun) {
		r.ok("navigate", r.h(map[string]any{"url": r.page("families.html")}))
		r.ok("intent_dismiss_obstruction", r.h(nil))
		pop := r.ok("click_and_wait_for_popup", r.h(map[string]any{"selector": "#open", "autoCheckpoint": true, "commandId": "go-popup-1", "attemptId": "a1"}))
		popupID := str(get(pop, "evidence", "popup", "pageId"))
		if popupID == "" || get(pop, "evidence", "popup", "openerId") != r.pageID || pop["commandId"] != "go-popup-1" {
			r.t.Fatalf("click_and_wait_for_popup = %s", dump(pop))
		}
		if !strings.Contains(full(r.ok("page_list", map[string]any{"sessionId": r.sessionID})), popupID) {
			r.t.Errorf("page_list lacks popup %s", popupID)
		}
		again := r.ok("click_and_wait_for_popup", r.h(map[string]any{"selector": "#open", "autoCheckpoint": true, "commandId": "go-popup-1", "attemptId": "a1"}))
		if again["replayed"] != true || str(get(again, "evidence", "popup", "pageId")) != popupID {
			r.t.Errorf("retry with the same ids = %s", dump(again))
		}
		rr, err := r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: str(get(pop, "evidence", "checkpoint", "resource"))})
		if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, popupID) {
			r.t.Errorf("the checkpoint resource of %s: %v", dump(get(pop, "evidence", "checkpoint")), err)
		}
		snap := r.ok("a11y_snapshot", map[string]any{"sessionId": r.sessionID, "pageId": popupID})
		if !strings.Contains(str(get(snap, "evidence", "accessibility", "text")), `button "Go"`) {
			r.t.Errorf("the popup's snapshot = %s", dump(snap))
		}
		r.ok("page_close", map[string]any{"sessionId": r.sessionID, "pageId": popupID})
	}},
	{"state", "emulate_cookies_network_log", func(r *goRun) {
		page := r.page("families.html")
		em := r.ok("emulate", r.h(map[string]any{"device": "Pixel 7", "locale": "de-DE"}))
		if get(em, "evidence", "emulation", "viewport", "width") != 412.0 {
			r.t.Errorf("emulate = %s", dump(em))
		}
		r.ok("cookie_set", r.h(map[string]any{"cookies": []any{map[string]any{"name": "go", "value": "v1", "url": page}}}))
		if got := r.ok("cookie_get", r.h(map[string]any{"name": "go"})); get(got, "evidence", "count") != 1.0 {
			r.t.Errorf("cookie_get = %s", dump(got))
		}
		if del := r.ok("cookie_delete", r.h(map[string]any{"name": "go"})); get(del, "evidence", "deleted") != 1.0 {
			r.t.Errorf("cookie_delete = %s", dump(del))
		}
		net := r.ok("network_log", r.h(map[string]any{"types": []string{"Document"}}))
		if !strings.Contains(full(net), page) {
			r.t.Errorf("network_log lacks %s: %s", page, dump(net))
		}
	}},
	{"files", "upload_download_pdf", func(r *goRun) {
		r.ok("navigate", r.h(map[string]any{"url": r.page("files.html")}))
		res, up := r.call("upload_files", r.h(map[string]any{"selector": "#pick", "paths": []string{r.upload}}))
		if res.IsError || get(up, "evidence", "upload", "files") != 1.0 {
			r.t.Fatalf("upload_files = %s", dump(up))
		}
		if dir := filepath.Dir(r.upload); strings.Contains(full(up), dir) || strings.Contains(full(res.Content), dir) {
			r.t.Errorf("upload_files echoes the local path")
		}
		r.ok("wait_for", r.h(map[string]any{"condition": map[string]any{"kind": "text", "selector": "#status",
			"matcher": map[string]any{"kind": "contains", "value": "avatar.png (4)"}}}))

		want, err := os.ReadFile(filepath.Join("testdata", "report.txt"))
		if err != nil {
			r.t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		click := r.ok("click", r.h(map[string]any{"selector": "#report"}))
		dl, _ := get(click, "evidence", "downloads").([]any)
		if len(dl) != 1 || get(dl[0].(map[string]any), "sha256") != hex.EncodeToString(sum[:]) {
			r.t.Fatalf("click on a download link = %s", dump(click))
		}
		rr, err := r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: str(get(dl[0].(map[string]any), "artifact", "uri"))})
		if err != nil || len(rr.Contents) != 1 || !bytes.Equal(rr.Contents[0].Blob, want) {
			r.t.Errorf("download artifact: %v", err)
		}

		d := r.ok("download_url", r.h(map[string]any{"url": r.page("report.txt"), "saveAs": "reports/r.txt"}))
		got, err := os.ReadFile(filepath.Join(r.downloads, "reports", "r.txt"))
		if err != nil || !bytes.Equal(got, want) || get(d, "evidence", "download", "savedTo") != "reports/r.txt" ||
			get(d, "evidence", "download", "sha256") != hex.EncodeToString(sum[:]) {
			r.t.Errorf("download_url = %s (file: %v)", dump(d), err)
		}
		r.fail("download_url", r.h(map[string]any{"url": r.page("report.txt"), "saveAs": "../escape.txt"}), "networkPolicyDenied")

		pdf := r.ok("pdf", r.h(nil))
		rr, err = r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: str(get(pdf, "evidence", "artifact", "uri"))})
		if err != nil || len(rr.Contents) != 1 || !bytes.HasPrefix(rr.Contents[0].Blob, []byte("%PDF-")) {
			r.t.Errorf("pdf artifact: %v", err)
		}
	}},
	{"dialogs", "alert_and_confirm", func(r *goRun) {
		if _, click := r.call("click", r.h(map[string]any{"selector": "#alert"})); !strings.Contains(full(click), "hello there") {
			r.t.Fatalf("click that opens an alert = %s", dump(click))
		}
		if pl := r.ok("page_list", map[string]any{"sessionId": r.sessionID}); !strings.Contains(full(pl), `"type":"alert"`) {
			r.t.Errorf("page_list does not show the dialog: %s", dump(pl))
		}
		r.fail("a11y_snapshot", r.h(nil), "dialogOpen")
		if d := r.ok("dialog", r.h(map[string]any{"accept": true})); get(d, "evidence", "dialog", "type") != "alert" {
			r.t.Errorf("dialog = %s", dump(d))
		}
		r.fail("dialog", r.h(map[string]any{"accept": true}), "noDialog")
		r.call("click", r.h(map[string]any{"selector": "#confirm"}))
		r.ok("dialog", r.h(map[string]any{"accept": false}))
		r.ok("wait_for", r.h(map[string]any{"condition": map[string]any{"kind": "text", "selector": "#out",
			"matcher": map[string]any{"kind": "exact", "value": "no"}}}))
	}},
	{"resources", "list_and_read", func(r *goRun) {
		list, err := r.cs.ListResources(r.ctx(), nil)
		if err != nil {
			r.t.Fatalf("resources/list: %v", err)
		}
		var uris []string
		for _, res := range list.Resources {
			uris = append(uris, res.URI)
		}
		for _, want := range []string{"bobby://failure-taxonomy", "bobby://capabilities", "bobby://phases", "bobby://schemas"} {
			if !slices.Contains(uris, want) {
				r.t.Errorf("resources/list lacks %s: %v", want, uris)
			}
		}
		tmpl, err := r.cs.ListResourceTemplates(r.ctx(), nil)
		var templates []string
		for _, rt := range tmpl.ResourceTemplates {
			templates = append(templates, rt.URITemplate)
		}
		if slices.Sort(templates); err != nil || !slices.Equal(templates, []string{"artifact://{id}", "bobby://checkpoints/{commandId}"}) {
			r.t.Errorf("resources/templates/list = %s, %v", dump(tmpl), err)
		}
		rr, err := r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: "bobby://capabilities"})
		if err != nil || len(rr.Contents) != 1 || !json.Valid([]byte(rr.Contents[0].Text)) || !strings.Contains(rr.Contents[0].Text, "click_and_wait_for_popup") {
			r.t.Errorf("bobby://capabilities: %v", err)
		}
		if _, err := r.cs.ReadResource(r.ctx(), &mcp.ReadResourceParams{URI: "artifact://no-such-artifact"}); err == nil {
			r.t.Error("an unknown artifact was readable")
		}
	}},
	{"prompts", "list_and_get", func(r *goRun) {
		list, err := r.cs.ListPrompts(r.ctx(), nil)
		if err != nil {
			r.t.Fatalf("prompts/list: %v", err)
		}
		var names []string
		for _, p := range list.Prompts {
			names = append(names, p.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"extract_from_page", "fill_and_submit_form", "recover_workflow"}) {
			r.t.Errorf("prompts = %v", names)
		}
		got, err := r.cs.GetPrompt(r.ctx(), &mcp.GetPromptParams{Name: "recover_workflow", Arguments: map[string]string{"sessionId": r.sessionID, "pageId": r.pageID}})
		if err != nil || len(got.Messages) != 1 {
			r.t.Fatalf("prompts/get = %v, %v", got, err)
		}
		if tc, ok := got.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, r.sessionID) || !strings.Contains(tc.Text, r.pageID) {
			r.t.Errorf("prompt text does not name the session and page: %s", dump(got.Messages[0]))
		}
		if _, err := r.cs.GetPrompt(r.ctx(), &mcp.GetPromptParams{Name: "recover_workflow", Arguments: map[string]string{"pageId": r.pageID}}); err == nil {
			r.t.Error("prompts/get without sessionId succeeded")
		}
	}},
	{"completion", "prompt_arguments", func(r *goRun) {
		res, err := r.cs.Complete(r.ctx(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fill_and_submit_form"},
			Argument: mcp.CompleteParamsArgument{Name: "sessionId", Value: r.sessionID[:4]}})
		if err != nil || !slices.Contains(res.Completion.Values, r.sessionID) {
			r.t.Errorf("sessionId completion = %v, %v", res, err)
		}
		res, err = r.cs.Complete(r.ctx(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fill_and_submit_form"},
			Argument: mcp.CompleteParamsArgument{Name: "pageId"}, Context: &mcp.CompleteContext{Arguments: map[string]string{"sessionId": r.sessionID}}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{r.pageID}) {
			r.t.Errorf("pageId completion = %v, %v; want [%s]", res, err, r.pageID)
		}
	}},
	{"errors", "schema_violation", func(r *goRun) {
		m := r.fail("session_create", map[string]any{}, "schemaViolation")
		if m["pointer"] != "/profile" || m["constraint"] != "required" || get(m, "repair", "doc") != "bobby://failure-taxonomy#schemaViolation" {
			r.t.Errorf("schemaViolation = %s", dump(m))
		}
		r.fail("click", map[string]any{"workflowHandle": "wf_00000000000000000000000000000000", "selector": "#x"}, "unknownWorkflowHandle")
	}},
	{"lifecycle", "session_close", func(r *goRun) {
		r.ok("session_close", map[string]any{"sessionId": r.sessionID})
		r.fail("a11y_snapshot", r.h(nil), "unknownWorkflowHandle")
	}},
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGoClient walks every tool family (goSteps) with the go-sdk client
// over stdio (a real `bobby stdio` child process with the bootstrap
// variables) and over streamable HTTP (`bobby serve` behind a bearer
// token), against the fixture pages served from loopback — each with the
// client offering 2025-11-25 (initialize, an MCP session) and 2026-07-28
// (server/discover; the SDK client's default).
func TestGoClient(t *testing.T) {
	fixtures := httptest.NewServer(http.FileServer(pagetest.Dir("testdata")))
	t.Cleanup(fixtures.Close)
	upload := filepath.Join(t.TempDir(), "private-uploads", "avatar.png")
	if err := os.MkdirAll(filepath.Dir(upload), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(upload, []byte("png!"), 0o600); err != nil {
		t.Fatal(err)
	}

	transports := []struct {
		name    string
		connect func(t *testing.T, client *mcp.Client, opts *mcp.ClientSessionOptions) (cs *mcp.ClientSession, principal, downloads string)
	}{
		{"stdio", func(t *testing.T, client *mcp.Client, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, string, string) {
			dir := t.TempDir()
			downloads := filepath.Join(dir, "downloads")
			cfg := filepath.Join(dir, "bobby.toml")
			toml := fmt.Sprintf("[http]\ndownloads_root = %q\n\n[browser]\ndata_dir = %q\n", downloads, filepath.Join(dir, "data"))
			if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bobbyBin, "stdio", "--config", cfg)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
				"AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL=goagent", "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES=" + allCaps}
			cmd.Stderr = os.Stderr
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, opts)
			if err != nil {
				t.Fatalf("connect to bobby stdio: %v", err)
			}
			return cs, "goagent", downloads
		}},
		{"http", func(t *testing.T, client *mcp.Client, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, string, string) {
			token := "go-" + rand.Text()
			home := t.TempDir()
			downloads := filepath.Join(home, "downloads")
			srv := bobbytest.Serve(t, bobbyBin, func(addr, _ string) string { return serveConfig(addr, home, "goclient", token, allCaps) })
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
				Endpoint: srv.MCPURL, HTTPClient: &http.Client{Transport: bearer{token}},
			}, opts)
			if err != nil {
				t.Fatalf("connect to bobby serve: %v", err)
			}
			return cs, "goclient", downloads
		}},
	}
	for _, tr := range transports {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				changed := make(chan struct{}, 8)
				client := mcp.NewClient(&mcp.Implementation{Name: "bobby-go-test", Version: "1"}, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
						select {
						case changed <- struct{}{}:
						default:
						}
					},
				})
				cs, principal, downloads := tr.connect(t, client, &mcp.ClientSessionOptions{ProtocolVersion: version})
				t.Cleanup(func() { cs.Close() })
				r := &goRun{cs: cs, listChanged: changed, fixtures: fixtures.URL, downloads: downloads, upload: upload, principal: principal,
					version: version, sessionless: tr.name == "http" && version == "2026-07-28"}
				families := map[string]bool{}
				for _, s := range goSteps {
					ok := t.Run(s.family+"/"+s.name, func(t *testing.T) {
						r.t = t
						s.run(r)
					})
					if !ok {
						t.Fatalf("step %s/%s failed; the later steps depend on it", s.family, s.name)
					}
					families[s.family] = true
				}
				t.Logf("%s %s: %d steps over %d families", tr.name, version, len(goSteps), len(families))
			})
		}
	}
}

// serveConfig is a `bobby serve` config listening on addr with one
// principal holding caps (comma-separated); its state (data_dir) and
// downloads root are under home.
func serveConfig(addr, home, name, token, caps string) string {
	return bobbytest.DownloadsConfig(addr, home, bobbytest.Principal{Name: name, Token: token, Capabilities: strings.Split(caps, ",")})
}
