package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
)

const (
	jdLesson    = "Open every job description with the role's scope; never lead with adjectives."
	jdProcedure = "1. Read the hiring brief. 2. State the scope in one line. 3. List five duties."
)

// productVocab binds promotion to the product's learning_write tool and
// maps a lesson into its exact arguments.
const productVocab = `{"writeVerbSuffix":"learning_write","runRefKey":"run_ref","learningTargetKind":"note",
  "writeShape":{"summary":"{{summary}}","details":"{{brief}}","provenance":{"key":"{{run_ref_key}}","value":"{{run_id}}"},
    "items":[{"kind":"{{target_kind}}","source_kind":"{{kind}}","content":"{{content}}","confidence":"{{confidence}}","team":"{{team}}"}]}}`

// learningScript plays model and utility model for the learning scenario.
// A reflection call answers by the job's input: LESSON jobs teach the
// pitfall, PROCEDURE jobs the procedure, others nothing. A main-loop call
// is recorded and answered.
type learningScript struct {
	mu       sync.Mutex
	requests []modeltest.ChatRequest // main-loop requests, in order
}

// jdTemplate is the registry skill the learning tests' product offers.
var jdTemplate = mcptest.ProductSkill{Name: "jd-template", Description: "How to draft a job description for any role",
	Body: "Use the house template: title, scope, duties, requirements."}

// productServers serves product over MCP on loopback until the test ends
// and returns the DELTA_MCP_SERVERS value naming it "product".
func productServers(t testing.TB, product *mcptest.Product) string {
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Product: product}))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "product", "url": srv.URL}})
	return string(servers)
}

// learningDaemon starts a daemon whose model is a fresh learningScript,
// with the environment given.
func learningDaemon(t *testing.T, env ...string) (*daemon, *learningScript) {
	t.Helper()
	script := &learningScript{}
	return newDaemon(t, startScript(t, script.reply), env...), script
}

func (s *learningScript) reply(req modeltest.ChatRequest) modeltest.Reply {
	if r, ok := reflectionReply(req, func(u string) map[string]any {
		switch {
		case strings.Contains(u, "LESSON"):
			return map[string]any{"kind": "pitfall", "content": jdLesson, "confidence": 0.85}
		case strings.Contains(u, "PROCEDURE"):
			return map[string]any{"kind": "procedure", "content": jdProcedure, "confidence": 0.9}
		}
		return nil
	}); ok {
		return r
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return modeltest.TextReply("Here is the job description.")
}

// firstRequest is the first main-loop request whose user turn holds marker.
func (s *learningScript) firstRequest(marker string) (modeltest.ChatRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, marker) {
				return r, true
			}
		}
	}
	return modeltest.ChatRequest{}, false
}

// promotionsSettled waits until the promotion outbox has nothing due and
// returns its counts from /v1/status.
func (d *daemon) promotionsSettled() map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, mem := d.learning()
		out := mem["promotion"].(map[string]any)["outbox"].(map[string]any)
		if out["staged"] == float64(0) && out["claimed"] == float64(0) {
			return out
		}
		time.Sleep(25 * time.Millisecond)
	}
	d.t.Fatalf("promotions still due; log:\n%s", d.logText())
	return nil
}

func jdJob(input string) string {
	return fmt.Sprintf(`{"input":%q,"metadata":{"task_type":"jd-generation","reflect":true}}`, input)
}

// TestLearningRailPromotesARecurringLessonOnce: five jd-generation jobs
// with reflection on, through the real binary, the scripted fake as model
// and utility model, and the MCP test product as curated store and skill
// registry. After the first two the lesson is one task-type row with both
// producing runs and its confidence; it is proposed exactly once to the
// product's learning_write tool with the writeShape rendered (typed
// confidence, the unavailable {{team}} leaf removed) and the idempotency key
// in _meta, and never again however often it recurs; the recurring
// procedure creates one skill in the registry. The sixth job's first model
// request carries the recalled lesson and the registry's capability block.
func TestLearningRailPromotesARecurringLessonOnce(t *testing.T) {
	product := mcptest.NewProduct(jdTemplate)
	d, script := learningDaemon(t, "DELTA_MCP_SERVERS="+productServers(t, product), "DELTA_VOCAB="+productVocab, "DELTA_AGENT_ID=jd-agent")

	first := d.as("", jdJob("LESSON draft the JD for a billing engineer"))
	second := d.as("", jdJob("LESSON draft the JD for a data engineer"))
	d.drained()
	out := d.promotionsSettled()
	if out["sent"] != float64(1) {
		t.Fatalf("after the first two jobs the outbox is %v, want one sent", out)
	}
	st := d.openStore()
	rows, err := st.Memories(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Content != jdLesson || rows[0].Scope != store.MemoryScopeTaskType || rows[0].TaskType != "jd-generation" ||
		rows[0].Runs != 2 || rows[0].Confidence != 0.85 || rows[0].AgentID != "jd-agent" {
		t.Fatalf("memory after two jobs: %+v", rows)
	}
	prov, err := st.MemoryProvenance(context.Background(), rows[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(prov) != 2 || prov[0].RunID != first["id"] || prov[1].RunID != second["id"] || prov[0].Confidence != 0.85 {
		t.Fatalf("provenance %+v, want runs %v then %v at 0.85", prov, first["id"], second["id"])
	}

	d.as("", jdJob("PROCEDURE draft the JD for a platform engineer"))
	d.as("", jdJob("PROCEDURE draft the JD for a site reliability engineer"))
	d.as("", jdJob("LESSON draft the JD for a support engineer")) // the lesson recurs a third time
	d.drained()
	if out := d.promotionsSettled(); out["sent"] != float64(2) || out["failed"] != float64(0) {
		t.Fatalf("after five jobs the outbox is %v, want the lesson and the procedure sent", out)
	}

	calls := product.Calls("learning_write")
	if len(calls) != 1 {
		t.Fatalf("%d learning_write calls, want exactly one: %+v", len(calls), calls)
	}
	want := map[string]any{
		"summary":    "Reflection (pitfall) from run " + second["id"].(string),
		"details":    "Post-task reflection: a pitfall learned in 2 distinct run(s) of task type jd-generation, confidence 0.85.",
		"provenance": map[string]any{"key": "run_ref", "value": second["id"]},
		"items":      []any{map[string]any{"kind": "note", "source_kind": "pitfall", "content": jdLesson, "confidence": 0.85}},
	}
	if !reflect.DeepEqual(calls[0].Args, want) {
		t.Fatalf("promotion arguments\n%#v\nwant\n%#v", calls[0].Args, want)
	}
	if !strings.HasPrefix(calls[0].Key, "prm_") || len(product.Proposals()) != 1 {
		t.Fatalf("idempotency key %q, %d proposals", calls[0].Key, len(product.Proposals()))
	}
	creates := product.Calls("skill_create")
	if len(creates) != 1 || creates[0].Args["name"] != "jd-generation" || creates[0].Args["body"] != jdProcedure ||
		creates[0].Args["change_summary"] == nil || creates[0].Args["change_summary"] != creates[0].Args["changeSummary"] {
		t.Fatalf("skill_create calls %+v", creates)
	}

	d.as("", jdJob("SIXTH draft the JD for a security engineer"))
	req, ok := script.firstRequest("SIXTH")
	if !ok {
		t.Fatal("the sixth job made no model request")
	}
	var recalled, capability string
	for _, m := range req.Messages {
		switch {
		case m.Role == "user" && strings.HasPrefix(m.Content, "<recalled_memory>"):
			recalled = m.Content
		case m.Role == "user" && strings.HasPrefix(m.Content, "<delta:skills>"):
			capability = m.Content
		}
	}
	if !strings.Contains(recalled, jdLesson) || !strings.Contains(recalled, jdProcedure) || !strings.Contains(recalled, "untrusted data") {
		t.Fatalf("the sixth job's first request lacks the recalled lessons:\n%q", recalled)
	}
	if !strings.Contains(capability, "Loaded procedure jd-template (version 1)") || !strings.Contains(capability, "- jd-generation:") ||
		!strings.Contains(capability, "directory data") {
		t.Fatalf("the sixth job's first request lacks the capability block:\n%q", capability)
	}
	if n := len(product.Calls("learning_write")); n != 1 {
		t.Fatalf("%d learning_write calls after six jobs, want one", n)
	}

	// /v1/status names the bindings, and the durable events are there.
	_, stat := d.call("GET", "/v1/status", "")
	l := stat["learning"].(map[string]any)
	if sk := l["skills"].(map[string]any); sk["state"] != "on" || sk["server"] != "product" {
		t.Fatalf("skills status %v", sk)
	}
	if p := l["memory"].(map[string]any)["promotion"].(map[string]any); p["curated_tool"] != "product__learning_write" || p["skill_registry"] != "product" || p["min_runs"] != float64(2) {
		t.Fatalf("promotion status %v", p)
	}
	names := countEvents(t, st, func(e event.Event) string { return e.Name })
	if names["promotion.staged"] != 2 || names["promotion.sent"] != 2 || names["promotion.failed"] != 0 {
		t.Fatalf("promotion events %v", names)
	}
}

// TestAmbiguousWriteSuffixPromotesNothing: two connected servers both end
// with writeVerbSuffix. The daemon warns at boot, reports why in
// /v1/status, and a recurring lesson is proposed to neither server rather
// than to the first one: it stays in local memory only.
func TestAmbiguousWriteSuffixPromotesNothing(t *testing.T) {
	a, b := mcptest.NewProduct(), mcptest.NewProduct()
	srvA := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Product: a}))
	srvB := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Product: b}))
	t.Cleanup(srvA.Close)
	t.Cleanup(srvB.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "crm", "url": srvA.URL}, {"name": "hr", "url": srvB.URL}})
	d, _ := learningDaemon(t, "DELTA_MCP_SERVERS="+string(servers), `DELTA_VOCAB={"writeVerbSuffix":"learning_write"}`, "DELTA_SKILLS=off")
	d.as("", jdJob("LESSON draft the JD for a billing engineer"))
	d.as("", jdJob("LESSON draft the JD for a data engineer"))
	mem := d.drained()
	if mem["rows"] != float64(1) || mem["held"] != float64(0) {
		t.Fatalf("memory %v, want the lesson kept locally, not held (no registry block reached these runs)", mem)
	}
	p := mem["promotion"].(map[string]any)
	if p["curated_tool"] != "" || !strings.Contains(fmt.Sprint(p["curated_warning"]), "matches 2 tools") {
		t.Fatalf("promotion status %v, want no curated tool and the ambiguity named", p)
	}
	if out := p["outbox"].(map[string]any); out["staged"] != float64(0) || out["sent"] != float64(0) {
		t.Fatalf("outbox %v, want nothing staged", out)
	}
	if !strings.Contains(d.logText(), "matches 2 tools (crm__learning_write, hr__learning_write)") {
		t.Fatalf("no boot warning about the ambiguous suffix; log:\n%s", d.logText())
	}
	if n, m := len(a.Calls("learning_write")), len(b.Calls("learning_write")); n != 0 || m != 0 {
		t.Fatalf("learning_write calls: crm %d, hr %d; want none", n, m)
	}
}

// TestLateServerBindsPromotionAndRegistry: the product's server waits for
// a vault credential at boot, so nothing is bound: /v1/status says so and a
// recurring lesson is kept locally only. Once the credential is stored the
// server connects, the curated tool and the skill registry bind without a
// restart, and the next recurrence is proposed exactly once; the next job
// carries the registry's capability block.
func TestLateServerBindsPromotionAndRegistry(t *testing.T) {
	product := mcptest.NewProduct(jdTemplate)
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Product: product}))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "product", "url": srv.URL,
		"headers": map[string]string{"Authorization": "Bearer {{vault:PRODUCT_TOKEN}}"}}})
	d, script := learningDaemon(t, "DELTA_MCP_SERVERS="+string(servers), "DELTA_VOCAB="+productVocab, "DELTA_AGENT_ID=jd-agent",
		"DELTA_VAULT_KEY=0123456789abcdef-test-key")

	mem := d.drained()
	if p := mem["promotion"].(map[string]any); p["curated_tool"] != "" || p["skill_registry"] != "" {
		t.Fatalf("before the credential: promotion status %v, want nothing bound", p)
	}
	d.as("", jdJob("LESSON draft the JD for a billing engineer"))
	d.as("", jdJob("LESSON draft the JD for a data engineer"))
	mem = d.drained()
	if out := mem["promotion"].(map[string]any)["outbox"].(map[string]any); out["staged"] != float64(0) || out["sent"] != float64(0) {
		t.Fatalf("unbound outbox %v, want nothing staged", out)
	}

	if s, m := d.call("PUT", "/v1/secrets/PRODUCT_TOKEN", `{"value":"product-token-1","purpose":"product"}`); s != 201 {
		t.Fatalf("store the credential: %d %v", s, m)
	}
	_, stat := d.call("GET", "/v1/status", "")
	l := stat["learning"].(map[string]any)
	if p := l["memory"].(map[string]any)["promotion"].(map[string]any); p["curated_tool"] != "product__learning_write" || p["skill_registry"] != "product" {
		t.Fatalf("after the credential: promotion status %v", p)
	}
	if sk := l["skills"].(map[string]any); sk["state"] != "on" || sk["server"] != "product" {
		t.Fatalf("after the credential: skills status %v", sk)
	}
	d.as("", jdJob("LESSON draft the JD for a support engineer"))
	d.drained()
	if out := d.promotionsSettled(); out["sent"] != float64(1) {
		t.Fatalf("after the lesson recurred once bound: outbox %v, want one sent", out)
	}
	if calls := product.Calls("learning_write"); len(calls) != 1 || !strings.HasPrefix(calls[0].Key, "prm_") {
		t.Fatalf("learning_write calls %+v, want exactly one", calls)
	}
	d.as("", jdJob("SIXTH draft the JD for a security engineer"))
	req, ok := script.firstRequest("SIXTH")
	if !ok {
		t.Fatal("the last job made no model request")
	}
	found := false
	for _, m := range req.Messages {
		found = found || m.Role == "user" && strings.Contains(m.Content, "Loaded procedure jd-template (version 1)")
	}
	if !found {
		t.Fatalf("the job after binding lacks the registry's capability block: %+v", req.Messages)
	}
}

// TestRegistryBlockMakesLessonsUntrusted: the skill registry's capability
// block is an MCP server's answer in the prompt, so a lesson reflected from
// a run that saw it is marked as drawn from untrusted input and held until
// a second distinct run produces it, exactly as after hydration.
func TestRegistryBlockMakesLessonsUntrusted(t *testing.T) {
	product := mcptest.NewProduct(jdTemplate)
	d, script := learningDaemon(t, "DELTA_MCP_SERVERS="+productServers(t, product), "DELTA_VOCAB="+productVocab, "DELTA_SKILLS=mcp")
	run := d.as("", jdJob("LESSON draft the JD for a billing engineer"))
	if req, ok := script.firstRequest("LESSON"); !ok || !strings.Contains(fmt.Sprint(req.Messages), "Loaded procedure jd-template") {
		t.Fatal("the run's request lacks the capability block")
	}
	mem := d.drained()
	if mem["rows"] != float64(1) || mem["held"] != float64(1) {
		t.Fatalf("memory %v, want the lesson held", mem)
	}
	st := d.openStore()
	rows, err := st.Memories(context.Background())
	if err != nil || len(rows) != 1 || !rows[0].Untrusted || !rows[0].Held() {
		t.Fatalf("memory rows %+v (%v), want one untrusted held row", rows, err)
	}
	prov, err := st.MemoryProvenance(context.Background(), rows[0].ID)
	if err != nil || len(prov) != 1 || prov[0].RunID != run["id"] || !prov[0].Untrusted {
		t.Fatalf("provenance %+v (%v), want the run marked untrusted", prov, err)
	}
}
