package gateway

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spellingsOf are the ways a secret can show up in a result: as typed,
// percent-encoded by Go (query and path) and by a browser's form encoding,
// and in JSON.
func spellingsOf(secret string) []string {
	out := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), formEncode(secret),
		strings.ReplaceAll(url.QueryEscape(secret), "+", "%20")}
	for _, s := range out[:len(out):len(out)] {
		b, _ := json.Marshal(s)
		out = append(out, string(b[1:len(b)-1]))
	}
	return out
}

// leaks returns the spelling of secret found in the call's whole answer
// (structured content and text), or "".
func leaks(res *mcp.CallToolResult, m map[string]any, secret string) string {
	all := dump(m) + "\n" + textOf(res)
	b, _ := json.Marshal(res.StructuredContent)
	all += "\n" + string(b)
	for _, s := range spellingsOf(secret) {
		if strings.Contains(all, s) {
			return s
		}
	}
	return ""
}

// TestTypedPasswordNeverInReportedURLs: a password typed into a GET form
// travels in the URL of the page it lands on, and from there into every
// result that reports a URL. None of them may carry it, in any encoding;
// the URL itself is still reported, with the value redacted.
func TestTypedPasswordNeverInReportedURLs(t *testing.T) {
	alice := aliceClient(t)
	// Space, "&", "~", "*", "/", "+", "=" and a non-ASCII letter: every
	// encoding differs from the raw text and from each other.
	const secret = "Tr0ub4dor &3~*/+=ü"

	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/getlogin.html",
		"executionPolicy": map[string]any{"javascriptEvaluation": true}})
	h, sid := start["workflowHandle"], start["sessionId"]
	mustOK(t, alice, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Account"}, "text": "ada"})
	mustOK(t, alice, "type_text", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "textbox", "name": "Passcode"}, "text": secret})
	mustOK(t, alice, "click", map[string]any{"workflowHandle": h, "target": map[string]any{"role": "button", "name": "Log in"}})
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "text",
		"matcher": map[string]any{"kind": "contains", "value": "Signed in as ada"}}})
	mustOK(t, alice, "wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "networkQuiet"}})

	check := func(name string, args map[string]any, wantFail bool) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, m := callTool(t, alice, name, args)
		if res.IsError != wantFail {
			t.Fatalf("%s: isError %v: %s", name, res.IsError, dump(m))
		}
		if s := leaks(res, m, secret); s != "" {
			t.Errorf("%s carries the password as %q:\n%s\n%s", name, s, dump(m), textOf(res))
		}
		return res, m
	}
	res, m := check("page_list", map[string]any{"sessionId": sid}, false)
	// The URL is still there, the credential replaced.
	if all := dump(m) + textOf(res); !strings.Contains(all, "/landed.html?acct=ada&code="+redactedMarker) &&
		!strings.Contains(all, `/landed.html?acct=ada\u0026code=`+redactedMarker) {
		t.Errorf("page_list does not show the redacted URL:\n%s\n%s", dump(m), textOf(res))
	}
	check("workflow_observe", map[string]any{"workflowHandle": h}, false)
	check("a11y_snapshot", map[string]any{"workflowHandle": h}, false)
	check("network_log", map[string]any{"workflowHandle": h}, false)
	check("wait_for", map[string]any{"workflowHandle": h, "condition": map[string]any{"kind": "url",
		"matcher": map[string]any{"kind": "contains", "value": "landed"}}}, false)
	// A wait that times out reports the URL it last saw, in an error.
	check("wait_for", map[string]any{"workflowHandle": h, "timeoutMs": 500, "condition": map[string]any{"kind": "url",
		"matcher": map[string]any{"kind": "contains", "value": "never-there"}}}, true)
	check("intent_wait_for_state", map[string]any{"workflowHandle": h, "timeoutMs": 500, "conditions": []any{
		map[string]any{"kind": "url", "matcher": map[string]any{"kind": "contains", "value": "never-there"}}}}, true)
	check("evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "location.href"}, false)
	check("evaluate_javascript", map[string]any{"workflowHandle": h, "expression": "new URLSearchParams(location.search).get('code')"}, false)

	// The same through the form intents, which know the field is a password.
	start = mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/getlogin.html"})
	h, sid = start["workflowHandle"], start["sessionId"]
	const other = "second Secret/42"
	check("intent_complete_form", map[string]any{"workflowHandle": h, "values": map[string]any{"Account": "bob", "Passcode": other}}, false)
	res, m = callTool(t, alice, "intent_submit_and_verify", map[string]any{"workflowHandle": h,
		"expect": map[string]any{"urlContains": "landed", "textContains": "Signed in as bob"}})
	if res.IsError || get(m, "evidence", "submission", "status") != "verified" {
		t.Fatalf("submit = %s", dump(m))
	}
	for _, s := range []string{secret, other} {
		if sp := leaks(res, m, s); sp != "" {
			t.Errorf("intent_submit_and_verify carries a password as %q: %s", sp, dump(m))
		}
	}
	res, m = callTool(t, alice, "page_list", map[string]any{"sessionId": sid})
	if sp := leaks(res, m, other); sp != "" || !strings.Contains(dump(m)+textOf(res), "code="+redactedMarker) {
		t.Errorf("page_list after the intents (leak %q):\n%s", sp, dump(m))
	}
}

// TestCredentialParametersRedacted: a URL the agent navigates to itself
// (a token in a link, an API key) is reported with credential-named query
// values and a userinfo password redacted, whatever bobby typed.
func TestCredentialParametersRedacted(t *testing.T) {
	alice := aliceClient(t)
	start := mustOK(t, alice, "workflow_start", map[string]any{"profile": "default", "url": fixtures.URL + "/index.html"})
	h, sid := start["workflowHandle"], start["sessionId"]
	nav, _ := callTool(t, alice, "navigate", map[string]any{"workflowHandle": h,
		"url": fixtures.URL + "/landed.html?acct=ada&api_key=K3y-Value-123&access_token=T0k3n.abc#id_token=F4ag"})
	if nav.IsError {
		t.Fatalf("navigate failed: %s", textOf(nav))
	}
	res, m := callTool(t, alice, "page_list", map[string]any{"sessionId": sid})
	all := dump(m) + textOf(res) + textOf(nav)
	for _, leak := range []string{"K3y-Value-123", "T0k3n.abc", "F4ag"} {
		if strings.Contains(all, leak) {
			t.Errorf("a credential parameter's value %q is reported:\n%s", leak, all)
		}
	}
	if !strings.Contains(all, "acct=ada") || !strings.Contains(all, "api_key="+redactedMarker) {
		t.Errorf("the URL is not reported with only the credentials redacted:\n%s", all)
	}
}

func TestRedactString(t *testing.T) {
	secrets := secretSpellings("hunter2 pw")
	for _, c := range []struct{ in, want string }{
		{"https://a.test/x?password=abc&q=1", "https://a.test/x?password=REDACTED&q=1"},
		{"https://a.test/x?q=1&user%5Bpassword%5D=abc", "https://a.test/x?q=1&user%5Bpassword%5D=REDACTED"},
		{`{"url":"https://a.test/?q=1\u0026Access_Token=xyz"}`, `{"url":"https://a.test/?q=1\u0026Access_Token=REDACTED"}`},
		{"https://a.test/cb#id_token=e.y.j&state=s", "https://a.test/cb#id_token=REDACTED&state=s"},
		{"https://a.test/?pwd=&q=1", "https://a.test/?pwd=&q=1"},
		{"https://a.test/?tokens_left=3", "https://a.test/?tokens_left=REDACTED"},
		{"https://ada:s3cret@a.test/x", "https://ada:REDACTED@a.test/x"},
		{"https://a.test/x?apikey=1 and more text", "https://a.test/x?apikey=REDACTED and more text"},
		{"GET 200 Document https://a.test/l?code=hunter2+pw&x=1", "GET 200 Document https://a.test/l?code=REDACTED&x=1"},
		{"https://a.test/l/hunter2%20pw/", "https://a.test/l/REDACTED/"},
		{"Query: code=hunter2 pw", "Query: code=REDACTED"},
		{"plain text with password= nothing", "plain text with password= nothing"},
		{"https://a.test/?q=hunter", "https://a.test/?q=hunter"},
	} {
		if got := redactString(c.in, secrets); got != c.want {
			t.Errorf("redactString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRedactJSONPassesCleanResultsAsIs: a result that cannot hold a
// credential is returned unchanged (not re-encoded), and one that spells
// "=" or "@" only through a JSON escape is still redacted.
func TestRedactJSONPassesCleanResultsAsIs(t *testing.T) {
	clean := json.RawMessage(`{"b":"plain text","a":[1,2]}`)
	if out, changed := redactJSON(clean, nil); changed || string(out) != string(clean) {
		t.Fatalf("clean result came back changed: %s", out)
	}
	for _, c := range []struct{ in, want string }{
		{`{"url":"https://a.test/?password\u003dabc"}`, `{"url":"https://a.test/?password=REDACTED"}`},
		{`{"url":"https://ada:s3cret\u0040a.test/"}`, `{"url":"https://ada:REDACTED@a.test/"}`},
		{`{"url":"https://a.test/?token=abc"}`, `{"url":"https://a.test/?token=REDACTED"}`},
	} {
		out, changed := redactJSON(json.RawMessage(c.in), nil)
		if !changed || string(out) != c.want {
			t.Errorf("redactJSON(%s) = %s, %v; want %s", c.in, out, changed, c.want)
		}
	}
	if _, changed := redactJSON(json.RawMessage(`{"note":"the code is hunter2 pw"}`), secretSpellings("hunter2 pw")); !changed {
		t.Fatal("a typed secret in a result without = or @ was not redacted")
	}
}

func TestSecretBookBounds(t *testing.T) {
	var b secretBook
	b.remember("alice", "abc") // too short to redact by value
	if sp := b.spellings("alice"); len(sp) != 0 {
		t.Errorf("a 3-rune secret is kept: %q", sp)
	}
	for i := range maxSecretsPerPrincipal + 5 {
		b.remember("alice", "secret-"+string(rune('A'+i)))
	}
	b.remember("alice", "secret-Z") // again: moves to the newest, not kept twice
	if n := len(b.by["alice"]); n != maxSecretsPerPrincipal {
		t.Errorf("alice keeps %d secrets, want %d", n, maxSecretsPerPrincipal)
	}
	if len(b.spellings("bob")) != 0 {
		t.Error("bob sees alice's secrets")
	}
}

// FuzzRedactString: redaction never panics, removes every spelling of the
// secret from text and from a JSON document's strings, and keeps a JSON
// document a JSON document.
func FuzzRedactString(f *testing.F) {
	f.Add(`{"url":"https://a.test/?q=1\u0026password=x"}`, "p4ss word")
	f.Add("https://u:p@h/?token=t#secret=s", "åäö&=+")
	f.Add(`{"v":"\u0070\u0034ss word"}`, "p4ss word")
	f.Add(`"\\u0026pwd=\\"`, `\"x`)
	f.Fuzz(func(t *testing.T, s, secret string) {
		if len([]rune(secret)) < minSecretRunes {
			return
		}
		sp := secretSpellings(secret)
		out := redactString(s, sp)
		// The marker's own letters could spell the secret anew next to
		// what follows a replacement; such secrets only must not panic.
		clean := !strings.ContainsAny(secret, redactedMarker)
		if clean && strings.Contains(out, secret) {
			t.Fatalf("redactString(%q) = %q still holds %q", s, out, secret)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		red, _ := redactJSON(json.RawMessage(s), sp)
		var v any
		if err := json.Unmarshal(red, &v); err != nil {
			t.Fatalf("redactJSON(%q) = %q: not JSON: %v", s, red, err)
		}
		if clean && strings.Contains(fmt.Sprint(v), secret) {
			t.Fatalf("redactJSON(%q) = %s still holds %q", s, red, secret)
		}
	})
}
