package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/config"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// The browser package's fixture pages (popups, uploads, banners, adaptive
// layouts, extraction) are served under /b/.
func fixtureURL(page string) string { return fixtures.URL + "/b/" + page }

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestClickAndWaitForPopupRegistersAndCheckpoints(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("popup.html")})
	h := start["workflowHandle"]

	res, m := callTool(t, alice, "click_and_wait_for_popup", map[string]any{"workflowHandle": h, "selector": "#open"})
	if res.IsError {
		t.Fatalf("click_and_wait_for_popup = %s", dump(m))
	}
	popupID := asStr(get(m, "evidence", "popup", "pageId"))
	if popupID == "" || get(m, "evidence", "popup", "openerId") != start["pageId"] {
		t.Fatalf("popup evidence = %s", dump(m))
	}
	if text := textOf(res); !strings.Contains(text, "popup pageId="+popupID) {
		t.Errorf("text lacks the popup id:\n%s", text)
	}
	// page_list shows it, so the next call can use it.
	pages := mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]})
	if !strings.Contains(dump(pages), popupID) {
		t.Errorf("page_list lacks popup %s: %s", popupID, dump(pages))
	}
	mustOK(t, alice, "a11y_snapshot", map[string]any{"sessionId": start["sessionId"], "pageId": popupID})

	// A checkpointed click with pinned ids runs once; the retry replays.
	args := map[string]any{"workflowHandle": h, "selector": "#blank", "autoCheckpoint": true, "commandId": "cmd-popup-1", "attemptId": "a1"}
	first := mustOK(t, alice, "click_and_wait_for_popup", args)
	if first["commandId"] != "cmd-popup-1" || get(first, "evidence", "checkpoint", "persisted") != true {
		t.Fatalf("checkpointed click = %s", dump(first))
	}
	before := len(get(mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]}), "pages").([]any))
	again := mustOK(t, alice, "click_and_wait_for_popup", args)
	after := len(get(mustOK(t, alice, "page_list", map[string]any{"sessionId": start["sessionId"]}), "pages").([]any))
	if again["replayed"] != true || get(again, "evidence", "popup", "pageId") != get(first, "evidence", "popup", "pageId") || after != before {
		t.Errorf("retry with the same ids: replayed=%v, popup %v vs %v, pages %d → %d", again["replayed"],
			get(again, "evidence", "popup", "pageId"), get(first, "evidence", "popup", "pageId"), before, after)
	}
	// The checkpoint is on disk and readable as a resource, by its owner only.
	rr, err := alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: "bobby://checkpoints/cmd-popup-1"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, asStr(get(first, "evidence", "popup", "pageId"))) ||
		!strings.Contains(rr.Contents[0].Text, `"attemptId": "a1"`) {
		t.Errorf("bobby://checkpoints/cmd-popup-1 = %v, %v", rr, err)
	}
	bob := connectHTTP(t, base, "bob-token", nil)
	if _, err := bob.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: "bobby://checkpoints/cmd-popup-1"}); err == nil {
		t.Error("another principal read alice's checkpoint")
	}
	// A retry from another session replays the record too; the same ids on
	// a different request are refused.
	other := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("popup.html")})
	args["workflowHandle"] = other["workflowHandle"]
	if re := mustOK(t, alice, "click_and_wait_for_popup", args); re["replayed"] != true || get(re, "evidence", "popup", "pageId") != get(first, "evidence", "popup", "pageId") {
		t.Errorf("retry from another session = %s", dump(re))
	}
	if pl := mustOK(t, alice, "page_list", map[string]any{"sessionId": other["sessionId"]}); len(pl["pages"].([]any)) != 1 {
		t.Errorf("the replayed retry opened a page: %s", dump(pl))
	}
	args["selector"] = "#open"
	mustFail(t, alice, "click_and_wait_for_popup", args, CodeIdempotencyKeyReused)
	// Without autoCheckpoint, pinned ids are refused.
	mustFail(t, alice, "click_and_wait_for_popup", map[string]any{"workflowHandle": h, "selector": "#open", "commandId": "x"}, CodeInvalidRequest)
	// A target that opens nothing says so, within the timeout asked for
	// (the default wait is the 15 s action timeout).
	t0 := time.Now()
	mustFail(t, alice, "click_and_wait_for_popup", map[string]any{"workflowHandle": h, "selector": "#plainlink", "timeoutMs": 1500}, CodeNotVerified)
	if d := time.Since(t0); d >= browser.DefaultActionTimeout {
		t.Errorf("a click that opens nothing answered after %s: timeoutMs 1500 was not the wait", d)
	}
}

func TestUploadFilesNeverEchoesPaths(t *testing.T) {
	_, base := httpGatewayWith(t, func(c *config.Config) {
		c.Principals = append(c.Principals, config.Principal{Name: "nofiles", TokenSHA256: policy.HashTokenHex("nofiles-token"),
			Capabilities: []string{"browser:mutate", "page:read"}})
	})
	dir := filepath.Join(t.TempDir(), "private-dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "avatar.png")
	if err := os.WriteFile(file, []byte("png!"), 0o600); err != nil {
		t.Fatal(err)
	}
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("upload.html")})
	res, m := callTool(t, alice, "upload_files", map[string]any{"workflowHandle": start["workflowHandle"], "selector": "#pick", "paths": []string{file}})
	if res.IsError || get(m, "evidence", "upload", "files") != float64(1) || get(m, "evidence", "upload", "via") != "fileChooser" {
		t.Fatalf("upload_files = %s", dump(m))
	}
	if strings.Contains(dump(m), dir) || strings.Contains(textOf(res), dir) {
		t.Errorf("the result echoes the local path:\n%s\n%s", dump(m), textOf(res))
	}
	if text := textOf(res); !strings.Contains(text, "uploaded 1 file via fileChooser: avatar.png") {
		t.Errorf("text = %s", text)
	}
	// A missing file fails without its directory in the message.
	res, m = callTool(t, alice, "upload_files", map[string]any{"workflowHandle": start["workflowHandle"], "selector": "#docs", "paths": []string{filepath.Join(dir, "gone.txt")}})
	if !res.IsError || errCode(m) != CodeInvalidRequest || strings.Contains(dump(m), dir) {
		t.Errorf("missing file = %s", dump(m))
	}

	// Without file:upload the tool is neither listed nor callable.
	nofiles := connectHTTP(t, base, "nofiles-token", nil)
	mustOK(t, nofiles, "toolset_select", map[string]any{"phase": "act"})
	if toolNames(t, nofiles)["upload_files"] {
		t.Error("upload_files advertised without file:upload")
	}
	ns := mustOK(t, nofiles, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("upload.html")})
	mustFail(t, nofiles, "upload_files", map[string]any{"workflowHandle": ns["workflowHandle"], "selector": "#docs", "paths": []string{file}}, CodeCapabilityDenied)
}

// upload_files never clicks a submit button to look for a file chooser.
func TestUploadFilesRefusesASubmitButton(t *testing.T) {
	dir, files := uploadFixtures(t)
	alice := aliceClient(t)
	h := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("upload.html")})["workflowHandle"]
	m := mustFail(t, alice, "upload_files", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Send"}, "paths": []string{files["notes.txt"]}}, CodeInvalidRequest)
	if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "submit button") || strings.Contains(dump(m), dir) {
		t.Errorf("upload_files on a submit button = %s", dump(m))
	}
}

func TestDownloadURLLimitsRootAndArtifact(t *testing.T) {
	root := t.TempDir()
	_, base := httpGatewayWith(t, func(c *config.Config) {
		c.HTTP.DownloadsRoot = root
		c.HTTP.MaxDownloadBytes = 4096
	})
	alice := connectHTTP(t, base, "alice-token", nil)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h := start["workflowHandle"]
	hits := bytesHits.Load()

	// tools/list and bobby://schemas advertise the configured limit.
	mustOK(t, alice, "toolset_select", map[string]any{"phase": "act"})
	tl, err := alice.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tl.Tools {
		if tool.Name == "download_url" {
			b, _ := json.Marshal(tool.InputSchema)
			var s struct {
				Properties map[string]struct {
					Minimum, Maximum float64
				}
			}
			if json.Unmarshal(b, &s) != nil || s.Properties["maxBytes"].Maximum != 4096 || s.Properties["maxBytes"].Minimum != 1 {
				t.Errorf("advertised download_url schema: %s", b)
			}
		}
	}
	rr, err := alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: ResourceSchemas})
	if err != nil || !regexp.MustCompile(`"maxBytes":\s*\{[^}]*"maximum":\s*4096`).MatchString(rr.Contents[0].Text) {
		t.Errorf("bobby://schemas lacks the download limit: %v", err)
	}

	// Out of range: invalidRequest naming the limit, before any request.
	for _, max := range []int{0, 5000} {
		m := mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=10", "saveAs": "a.bin", "maxBytes": max}, CodeInvalidRequest)
		if msg := asStr(get(m, "error", "message")); !strings.Contains(msg, "4096") {
			t.Errorf("maxBytes %d: message %q does not name the limit", max, msg)
		}
	}
	if n := bytesHits.Load() - hits; n != 0 {
		t.Errorf("out-of-range maxBytes reached the network %d times", n)
	}
	// Destinations outside the root and other schemes are network-policy refusals.
	for _, saveAs := range []string{"../escape.bin", filepath.Join(t.TempDir(), "x.bin"), filepath.Join(root, "a", "b.bin")} {
		mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=10", "saveAs": saveAs}, CodeNetworkPolicyDenied)
	}
	mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": "file:///etc/passwd", "saveAs": "p.txt"}, CodeNetworkPolicyDenied)
	// Over the limit while streaming: nothing is left.
	mustFail(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=8192", "saveAs": "big.bin"}, CodeInvalidRequest)
	if _, err := os.Stat(filepath.Join(root, "big.bin")); err == nil {
		t.Error("an oversized download was kept")
	}

	res, m := callTool(t, alice, "download_url", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/bytes?n=2048", "saveAs": "reports/r.bin"})
	if res.IsError {
		t.Fatalf("download_url = %s", dump(m))
	}
	body, err := os.ReadFile(filepath.Join(root, "reports", "r.bin"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if get(m, "evidence", "download", "savedTo") != "reports/r.bin" || get(m, "evidence", "download", "sha256") != hex.EncodeToString(sum[:]) {
		t.Errorf("download evidence = %s", dump(m))
	}
	if text := textOf(res); !strings.Contains(text, "saved 2048 bytes to reports/r.bin sha256="+hex.EncodeToString(sum[:])) {
		t.Errorf("text = %s", text)
	}
	uri := asStr(get(m, "evidence", "artifact", "uri"))
	rr, err = alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || !bytes.Equal(rr.Contents[0].Blob, body) {
		t.Errorf("artifact %s: %v", uri, err)
	}
}

func TestPDFIsAnArtifact(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	m := mustOK(t, alice, "pdf", map[string]any{"workflowHandle": start["workflowHandle"], "landscape": true})
	uri := asStr(get(m, "evidence", "artifact", "uri"))
	rr, err := alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || !bytes.HasPrefix(rr.Contents[0].Blob, []byte("%PDF-")) || rr.Contents[0].MIMEType != "application/pdf" {
		t.Fatalf("pdf artifact %s: %v", uri, err)
	}
	mustFail(t, alice, "pdf", map[string]any{"workflowHandle": start["workflowHandle"], "pageRanges": "first"}, CodeInvalidRequest)
}

func TestEmulateInvalidatesRetainedContext(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("adaptive.html")})
	h := start["workflowHandle"]
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	if a := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Desktop layout heading"}); a["answer"] == nil {
		t.Fatalf("context_ask before emulate = %s", dump(a))
	}
	res, m := callTool(t, alice, "emulate", map[string]any{"workflowHandle": h, "device": "iPhone 13", "locale": "de-DE", "timezone": "Europe/Berlin"})
	if res.IsError || get(m, "evidence", "emulation", "viewport", "width") != float64(390) {
		t.Fatalf("emulate = %s", dump(m))
	}
	if text := textOf(res); !strings.Contains(text, "emulating iPhone 13; 390x844 @3 mobile; touch; locale de-DE; timezone Europe/Berlin") {
		t.Errorf("text = %s", text)
	}
	if a := mustOK(t, alice, "context_ask", map[string]any{"workflowHandle": h, "question": "Desktop layout heading"}); a["answer"] != nil || a["reason"] != "noRetainedContext" {
		t.Errorf("context_ask after emulate = %s, want noRetainedContext", dump(a))
	}
	snap := mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": h})
	if text := asStr(get(snap, "evidence", "accessibility", "text")); !strings.Contains(text, "Mobile layout") || strings.Contains(text, "Desktop layout") {
		t.Errorf("emulated snapshot:\n%s", text)
	}
	mustFail(t, alice, "emulate", map[string]any{"workflowHandle": h}, CodeInvalidRequest)
	mustFail(t, alice, "emulate", map[string]any{"workflowHandle": h, "timezone": "Mars/Olympus"}, CodeInvalidRequest)
}

func TestCookieTools(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h := start["workflowHandle"]
	set := mustOK(t, alice, "cookie_set", map[string]any{"workflowHandle": h, "cookies": []map[string]any{
		{"name": "theme", "value": "dark", "url": fixtures.URL}, {"name": "sid", "value": "s3cret", "url": fixtures.URL, "httpOnly": true},
	}})
	if strings.Contains(dump(set), "s3cret") {
		t.Errorf("cookie_set echoes a value: %s", dump(set))
	}
	res, got := callTool(t, alice, "cookie_get", map[string]any{"workflowHandle": h, "url": fixtures.URL + "/"})
	if res.IsError || get(got, "evidence", "count") != float64(2) {
		t.Fatalf("cookie_get = %s", dump(got))
	}
	if text := textOf(res); !strings.Contains(text, "sid=s3cret (domain 127.0.0.1, path /, httpOnly, session)") {
		t.Errorf("cookie_get text:\n%s", text)
	}
	// Another principal's session is not reachable; another session of
	// alice's has its own jar.
	other := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default"})
	if o := mustOK(t, alice, "cookie_get", map[string]any{"workflowHandle": other["workflowHandle"]}); get(o, "evidence", "count") != float64(0) {
		t.Errorf("a fresh session sees cookies: %s", dump(o))
	}
	mustFail(t, alice, "cookie_delete", map[string]any{"workflowHandle": h}, CodeInvalidRequest)
	if d := mustOK(t, alice, "cookie_delete", map[string]any{"workflowHandle": h, "name": "sid"}); get(d, "evidence", "deleted") != float64(1) {
		t.Errorf("cookie_delete = %s", dump(d))
	}
	if d := mustOK(t, alice, "cookie_delete", map[string]any{"workflowHandle": h, "all": true}); get(d, "evidence", "deleted") != float64(1) {
		t.Errorf("cookie_delete all = %s", dump(d))
	}
	mustFail(t, alice, "cookie_set", map[string]any{"workflowHandle": h, "cookies": []map[string]any{{"name": "x", "value": "1"}}}, CodeInvalidRequest)

	// Annotations a host gates on.
	mustOK(t, alice, "toolset_select", map[string]any{"phase": "act"})
	tl, err := alice.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tl.Tools {
		switch tool.Name {
		case "cookie_delete":
			if tool.Annotations == nil || tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint {
				t.Errorf("cookie_delete is not destructive: %+v", tool.Annotations)
			}
		case "cookie_get":
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("cookie_get is not read-only: %+v", tool.Annotations)
			}
		}
	}
}

func TestNetworkLogTool(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/slowpage"})
	h := start["workflowHandle"]
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet", "idleMs": 200}})
	res, m := callTool(t, alice, "network_log", map[string]any{"workflowHandle": h, "types": []string{"Document", "Fetch"}})
	if res.IsError {
		t.Fatalf("network_log = %s", dump(m))
	}
	text := textOf(res)
	if !strings.Contains(text, "GET 200 Document "+fixtures.URL+"/slowpage") || !strings.Contains(text, "GET 200 Fetch "+fixtures.URL+"/slow?ms=700") {
		t.Errorf("network_log text:\n%s", text)
	}
	if strings.Contains(text, "body") || strings.Contains(dump(m), `"body"`) {
		t.Errorf("bodies without includeBodies:\n%s", text)
	}
	withBody := mustOK(t, alice, "network_log", map[string]any{"workflowHandle": h, "urlContains": "/slow?", "includeBodies": true})
	if !strings.Contains(dump(withBody), `"body":"slow done"`) {
		t.Errorf("includeBodies = %s", dump(withBody))
	}
}

func TestIntentTierTwo(t *testing.T) {
	alice := aliceClient(t)

	banner := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("banner.html")})
	res, m := callTool(t, alice, "intent_dismiss_obstruction", map[string]any{"workflowHandle": banner["workflowHandle"]})
	if res.IsError || get(m, "evidence", "obstructions", "dismissed") != float64(1) {
		t.Fatalf("intent_dismiss_obstruction = %s", dump(m))
	}
	if text := textOf(res); !strings.Contains(text, `dismissed cookie-banner div#cookie-consent.cc-banner with "Reject all"`) {
		t.Errorf("text:\n%s", text)
	}
	mustOK(t, alice, "click", map[string]any{"workflowHandle": banner["workflowHandle"], "selector": "#buy"})

	follow := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("follow.html")})
	fh := follow["workflowHandle"]
	res, m = callTool(t, alice, "intent_follow", map[string]any{"workflowHandle": fh, "description": "Next page link"})
	if res.IsError || get(m, "evidence", "follow", "outcome") != "navigated" || !strings.Contains(textOf(res), "navigated to "+fixtureURL("home.html")+" (HTTP 200)") {
		t.Fatalf("intent_follow = %s\n%s", dump(m), textOf(res))
	}
	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": fh, "url": fixtureURL("follow.html")})
	mustFail(t, alice, "intent_follow", map[string]any{"workflowHandle": fh, "selector": "#noop"}, CodeNotVerified)
	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": fh, "url": fixtureURL("follow.html")})
	mustFail(t, alice, "intent_follow", map[string]any{"workflowHandle": fh, "selector": "#missing"}, CodeNavigationFailed)
	mustOK(t, alice, "navigate", map[string]any{"workflowHandle": fh, "url": fixtureURL("follow.html")})
	// The same kind through command_execute's intent envelope.
	pop := mustOK(t, alice, "command_execute", map[string]any{"envelope": map[string]any{"kind": "intent", "workflowHandle": fh,
		"input": map[string]any{"kind": "follow", "selector": "#pop"}}})
	if pop["kind"] != "intent_follow" || get(pop, "evidence", "popup", "pageId") == nil {
		t.Errorf("intent follow envelope = %s", dump(pop))
	}

	ex := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("extract.html")})
	eh := ex["workflowHandle"]
	res, m = callTool(t, alice, "intent_extract", map[string]any{"workflowHandle": eh, "selector": "#prices"})
	if res.IsError || !strings.Contains(textOf(res), "Plan | Price\n- Solo | $5\n- Team | $20") {
		t.Errorf("intent_extract = %s\n%s", dump(m), textOf(res))
	}
	st := mustOK(t, alice, "intent_wait_for_state", map[string]any{"workflowHandle": eh, "conditions": []map[string]any{
		{"kind": "url", "matcher": map[string]any{"kind": "contains", "value": "step=done"}},
		{"kind": "element", "selector": "#spinner", "state": "hidden"},
		{"kind": "text", "matcher": map[string]any{"kind": "contains", "value": "working"}, "not": true},
	}})
	if get(st, "evidence", "state", "matched") != true {
		t.Errorf("intent_wait_for_state = %s", dump(st))
	}
	mustFail(t, alice, "intent_wait_for_state", map[string]any{"workflowHandle": eh, "timeoutMs": 300, "conditions": []map[string]any{
		{"kind": "text", "matcher": map[string]any{"kind": "contains", "value": "never"}},
	}}, CodeTimeout)

	// context_neighbors answers from the retained snapshot.
	none := mustOK(t, alice, "context_neighbors", map[string]any{"workflowHandle": eh, "question": "View"})
	if none["reason"] == nil {
		t.Errorf("neighbors before a snapshot = %s", dump(none))
	}
	mustOK(t, alice, "a11y_snapshot", map[string]any{"workflowHandle": eh})
	nb := mustOK(t, alice, "context_neighbors", map[string]any{"workflowHandle": eh, "question": "more link"})
	if nb["neighborhood"] == nil || get(nb, "neighborhood", "node", "name") != "more" {
		t.Errorf("context_neighbors = %s", dump(nb))
	}
	mustFail(t, alice, "context_neighbors", map[string]any{"workflowHandle": eh}, CodeInvalidRequest)
	// A ref the snapshot does not hold is a bad target, as it is for click;
	// an unknown handle is named before a missing argument.
	for _, ref := range []string{"zzz", "e999999"} {
		m := mustFail(t, alice, "context_neighbors", map[string]any{"workflowHandle": eh, "ref": ref}, CodeTargetNotFound)
		if get(m, "error", "repair", "action") != "takeSnapshot" {
			t.Errorf("context_neighbors ref %s repair = %v", ref, get(m, "error", "repair"))
		}
	}
	mustFail(t, alice, "context_neighbors", map[string]any{"workflowHandle": "wf_deadbeef"}, CodeUnknownWorkflowHandle)
}

// bytesHits counts requests to the fixture server's /bytes.
var bytesHits atomic.Int64

// TestExecutionPolicyIsReal: fingerprint and humanize change what the page
// sees; neither is an accepted no-op.
func TestExecutionPolicyIsReal(t *testing.T) {
	alice := aliceClient(t)
	plain := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("adaptive.html"),
		"executionPolicy": map[string]any{"javascriptEvaluation": true}})
	fp := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("adaptive.html"),
		"executionPolicy": map[string]any{"javascriptEvaluation": true, "fingerprint": true, "humanize": true}})
	persona := browser.PersonaFor("default")
	ua := func(h any) string {
		return asStr(get(mustOK(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "navigator.userAgent"}), "evidence", "value"))
	}
	tz := func(h any) string {
		return asStr(get(mustOK(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": h,
			"expression": "Intl.DateTimeFormat().resolvedOptions().timeZone"}), "evidence", "value"))
	}
	if u := ua(fp["workflowHandle"]); strings.Contains(u, "Headless") || !strings.Contains(u, persona.OS) {
		t.Errorf("fingerprinted user agent %q, want persona %s", u, persona.OS)
	}
	if z := tz(fp["workflowHandle"]); z != persona.Timezone {
		t.Errorf("fingerprinted timezone %q, want %q", z, persona.Timezone)
	}
	if u := ua(plain["workflowHandle"]); !strings.Contains(u, "Headless") {
		t.Errorf("plain session user agent changed: %q", u)
	}
	for _, h := range []any{plain["workflowHandle"], fp["workflowHandle"]} {
		mustOK(t, alice, "navigate", map[string]any{"workflowHandle": h, "url": fixtureURL("humanize.html")})
		mustOK(t, alice, "type_text", map[string]any{"workflowHandle": h, "selector": "#name", "text": "Ada"})
	}
	keys := func(h any) float64 {
		v, _ := get(mustOK(t, alice, "evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "window.keydowns"}), "evidence", "value").(float64)
		return v
	}
	if k := keys(fp["workflowHandle"]); k != 3 {
		t.Errorf("humanized typing sent %v keydowns, want 3", k)
	}
	if k := keys(plain["workflowHandle"]); k != 0 {
		t.Errorf("plain typing sent %v keydowns, want inserted text", k)
	}
}

// TestClickCapturesDownloads: a click on a download link captures the file
// as an artifact; a modified click that starts one is refused.
func TestClickCapturesDownloads(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtureURL("downloads.html")})
	h := start["workflowHandle"]
	res, m := callTool(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#report"})
	if res.IsError {
		t.Fatalf("click = %s", dump(m))
	}
	dl, _ := get(m, "evidence", "downloads").([]any)
	if len(dl) != 1 || get(dl[0].(map[string]any), "state") != "completed" || get(dl[0].(map[string]any), "bytes") != float64(2048) {
		t.Fatalf("captured downloads = %s", dump(m))
	}
	uri := asStr(get(dl[0].(map[string]any), "artifact", "uri"))
	rr, err := alice.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || len(rr.Contents[0].Blob) != 2048 {
		t.Errorf("download artifact %s: %v", uri, err)
	}
	if text := textOf(res); !strings.Contains(text, "download report.bin: 2048 bytes sha256=") {
		t.Errorf("click text:\n%s", text)
	}
	m = mustFail(t, alice, "click", map[string]any{"workflowHandle": h, "selector": "#report", "modifiers": []string{"alt"}}, CodeInvalidRequest)
	if !strings.Contains(asStr(get(m, "error", "message")), "download") {
		t.Errorf("modified download click = %s", dump(m))
	}
}
