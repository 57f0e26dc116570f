package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/telemetry/otlptest"
)

// plantedKey is a credential-shaped string the model writes to a file: it
// must never reach the OTLP receiver, with consent or without.
const plantedKey = "sk-proj-PLANTEDcredential0123456789"

// otlpScript answers a "write" task with a write_file call in turn 1 and
// a final text in turn 2, and any other task with text at once; every call
// reports a fixed usage so the spans can be checked against the run rows.
func otlpScript(req modeltest.ChatRequest) modeltest.Reply {
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return modeltest.Reply{Text: "saved", Usage: &modeltest.Usage{PromptTokens: 200, CompletionTokens: 15}}
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if strings.Contains(last.Content, "write") {
		args, _ := json.Marshal(map[string]string{"path": "notes.txt", "content": "the key is " + plantedKey})
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_w1", Name: "write_file", Arguments: string(args)}},
			Usage: &modeltest.Usage{PromptTokens: 120, CompletionTokens: 30}}
	}
	return modeltest.Reply{Text: "hello", Usage: &modeltest.Usage{PromptTokens: 50, CompletionTokens: 5}}
}

// respond posts one synchronous /v1/responses request and returns the run id.
func respond(t *testing.T, base, user, input string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"input": input, "metadata": map[string]any{"task_id": "task-" + user}})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Delta-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 || out.Status != "completed" {
		t.Fatalf("POST /v1/responses: %d %s", resp.StatusCode, b)
	}
	return out.ID
}

// waitSpans waits for the receiver to hold spans of n traces; a hang guard,
// not a timing assertion (the lane wakes every 2 s).
func waitSpans(t *testing.T, rcv *otlptest.Receiver, n int) []otlptest.Span {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		sp := rcv.Spans()
		traces := map[string]bool{}
		for _, s := range sp {
			traces[s.TraceID] = true
		}
		if len(traces) >= n {
			return sp
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver has %d traces after a minute, want %d", len(traces), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A real daemon with the scripted model and an OTLP/HTTP receiver on
// loopback: each run is exactly one trace, root → turns → chat and
// execute_tool, with the GenAI attributes and the run's usage; arguments
// and results leave only with DELTA_CAPTURE_PAYLOADS=1, the planted
// credential never; /v1/status shows the lane without its credential.
func TestOTLPTracesEachRun(t *testing.T) {
	for _, payloads := range []bool{false, true} {
		t.Run(fmt.Sprintf("payloads=%v", payloads), func(t *testing.T) { testOTLPTraces(t, payloads) })
	}
}

func testOTLPTraces(t *testing.T, payloads bool) {
	fake, err := modeltest.Start(otlpScript)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	rcv := otlptest.Start()
	defer rcv.Close()
	env := map[string]string{
		"MODEL_BASE_URL": fake.URL(), "MODEL_API_KEY": "k", "DELTA_MODEL_PRIMARY": "scripted/main", "DELTA_UTILITY_MODEL": "",
		"DELTA_AGENT_ID": "agent-7", "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL(), "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20otlp-secret-0123456789",
		"OTEL_SERVICE_NAME": "support-bot", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
	}
	if payloads {
		env["DELTA_CAPTURE_PAYLOADS"] = "1"
		env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip" // the receiver decodes either
	}
	cfg, stop := serveWith(t, env)
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	addr := listenAddr(t, cfg)
	writeRun := respond(t, addr, "alice", "please write the note")
	helloRun := respond(t, addr, "bob", "say hello")
	spans := waitSpans(t, rcv, 2)

	byTrace := map[string][]otlptest.Span{}
	for _, s := range spans {
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	roots := map[string]otlptest.Span{} // run id → root
	for tid, ss := range byTrace {
		var rs []otlptest.Span
		for _, s := range ss {
			if s.ParentID == "" {
				rs = append(rs, s)
			}
		}
		if len(rs) != 1 {
			t.Fatalf("trace %s has %d roots, want 1", tid, len(rs))
		}
		roots[rs[0].Attrs["delta.run.id"]] = rs[0]
	}
	if len(byTrace) != 2 || roots[writeRun].TraceID == "" || roots[helloRun].TraceID == "" {
		t.Fatalf("traces %d for runs %v, want one for each of %s and %s", len(byTrace), keys(roots), writeRun, helloRun)
	}

	// The write run: root → turn 1 (chat, execute_tool) and turn 2 (chat).
	root := roots[writeRun]
	ss := byTrace[root.TraceID]
	children := map[string][]otlptest.Span{}
	for _, s := range ss {
		children[s.ParentID] = append(children[s.ParentID], s)
	}
	names := func(ss []otlptest.Span) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.Name)
		}
		return strings.Join(sorted(n), ", ")
	}
	if root.Name != "invoke_agent agent-7" || names(children[root.SpanID]) != "turn 1, turn 2" || len(ss) != 6 {
		t.Fatalf("root %q with children [%s], %d spans", root.Name, names(children[root.SpanID]), len(ss))
	}
	turn := map[string]otlptest.Span{}
	for _, s := range children[root.SpanID] {
		turn[s.Name] = s
	}
	if got := names(children[turn["turn 1"].SpanID]); got != "chat scripted/main, execute_tool write_file" {
		t.Fatalf("turn 1 children [%s]", got)
	}
	if got := names(children[turn["turn 2"].SpanID]); got != "chat scripted/main" {
		t.Fatalf("turn 2 children [%s]", got)
	}
	chat1, tool := children[turn["turn 1"].SpanID][0], children[turn["turn 1"].SpanID][1]
	if tool.Name != "execute_tool write_file" {
		chat1, tool = tool, chat1
	}
	chat2 := children[turn["turn 2"].SpanID][0]
	want := []struct {
		span  otlptest.Span
		attrs map[string]string
	}{
		{root, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent-7", "gen_ai.usage.input_tokens": "320",
			"gen_ai.usage.output_tokens": "45", "user.id": "alice", "delta.task.id": "task-alice", "delta.run.status": "done"}},
		{chat1, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted/main", "gen_ai.response.model": "scripted/main",
			"gen_ai.usage.input_tokens": "120", "gen_ai.usage.output_tokens": "30", "gen_ai.provider.name": "chat", "delta.run.id": writeRun}},
		{chat2, map[string]string{"gen_ai.usage.input_tokens": "200", "gen_ai.usage.output_tokens": "15"}},
		{tool, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write_file", "gen_ai.tool.call.id": "call_w1", "user.id": "alice"}},
	}
	for _, w := range want {
		for k, v := range w.attrs {
			if w.span.Attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", w.span.Name, k, w.span.Attrs[k], v)
			}
		}
		if w.span.Attrs["gen_ai.conversation.id"] == "" || w.span.Resource["service.name"] != "support-bot" || w.span.Resource["deployment.environment"] != "test" {
			t.Errorf("%s: conversation %q, resource %v", w.span.Name, w.span.Attrs["gen_ai.conversation.id"], w.span.Resource)
		}
	}
	if !(root.StartUnixNano <= chat1.StartUnixNano && chat1.EndUnixNano <= tool.StartUnixNano && tool.EndUnixNano <= chat2.StartUnixNano && chat2.EndUnixNano <= root.EndUnixNano) {
		t.Errorf("span times out of order: root %d–%d chat1 %d–%d tool %d–%d chat2 %d–%d", root.StartUnixNano, root.EndUnixNano,
			chat1.StartUnixNano, chat1.EndUnixNano, tool.StartUnixNano, tool.EndUnixNano, chat2.StartUnixNano, chat2.EndUnixNano)
	}

	// Consent: arguments and results only with it; the credential never.
	args, hasArgs := tool.Attrs["gen_ai.tool.call.arguments"]
	_, hasResult := tool.Attrs["gen_ai.tool.call.result"]
	if hasArgs != payloads || hasResult != payloads {
		t.Errorf("payloads=%v: arguments present %v, result present %v", payloads, hasArgs, hasResult)
	}
	if payloads && (!strings.Contains(args, "notes.txt") || !strings.Contains(args, "[redacted]")) {
		t.Errorf("arguments with consent %q: want the path and the credential redacted", args)
	}
	for _, b := range rcv.Bodies() {
		if bytes.Contains(b, []byte(plantedKey)) || bytes.Contains(b, []byte("otlp-secret")) {
			t.Fatal("a request body carries the planted credential or the OTLP header secret")
		}
		if !payloads && bytes.Contains(b, []byte("notes.txt")) {
			t.Fatal("without consent a request body carries the tool arguments")
		}
	}
	for _, h := range rcv.Headers() {
		if h.Get("Authorization") != "Bearer otlp-secret-0123456789" {
			t.Fatalf("Authorization %q: OTEL_EXPORTER_OTLP_HEADERS not sent", h.Get("Authorization"))
		}
		if gz := h.Get("Content-Encoding") == "gzip"; gz != payloads {
			t.Fatalf("Content-Encoding %q with OTEL_EXPORTER_OTLP_COMPRESSION=gzip %v", h.Get("Content-Encoding"), payloads)
		}
	}

	// /v1/status: the lane, its endpoint host, what it sent; no credential.
	// The receiver holds the spans as soon as it has read the request; the
	// lane marks the runs exported once the answer is back, so read the
	// status until it has (a hang guard, not a timing assertion).
	type otlpStatus struct {
		Enabled       bool   `json:"enabled"`
		Endpoint      string `json:"endpoint"`
		ExportedSpans int64  `json:"exported_spans"`
		ExportedRuns  int64  `json:"exported_runs"`
		PendingRuns   int64  `json:"pending_runs"`
		LastError     string `json:"last_error"`
	}
	var sb []byte
	var o otlpStatus
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(addr + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		sb, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		var st struct {
			OTLP otlpStatus `json:"otlp"`
		}
		if err := json.Unmarshal(sb, &st); err != nil {
			t.Fatal(err)
		}
		o = st.OTLP
		if (o.ExportedRuns >= 2 && o.PendingRuns == 0) || time.Now().After(deadline) {
			break
		}
	}
	if !o.Enabled || o.Endpoint != rcv.URL() || o.ExportedSpans < 8 || o.ExportedRuns < 2 || o.PendingRuns != 0 || o.LastError != "" {
		t.Fatalf("status otlp %+v (receiver %s)", o, rcv.URL())
	}
	if bytes.Contains(sb, []byte("otlp-secret")) {
		t.Fatal("/v1/status shows the OTLP header secret")
	}

	// The spans' token counts are the run's usage rows.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	s, err := store.Open(context.Background(), cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Run(context.Background(), writeRun)
	if err != nil {
		t.Fatal(err)
	}
	if strconv.FormatInt(r.Usage.InputTokens, 10) != root.Attrs["gen_ai.usage.input_tokens"] || strconv.FormatInt(r.Usage.OutputTokens, 10) != root.Attrs["gen_ai.usage.output_tokens"] {
		t.Fatalf("run usage %d/%d, root span %s/%s", r.Usage.InputTokens, r.Usage.OutputTokens, root.Attrs["gen_ai.usage.input_tokens"], root.Attrs["gen_ai.usage.output_tokens"])
	}
}

func listenAddr(t *testing.T, cfg config.Config) string {
	t.Helper()
	return "http://" + net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
