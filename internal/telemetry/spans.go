package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaharness/delta/internal/event"
)

// The span tree of one run, after the OpenTelemetry GenAI semantic
// conventions:
//
//	invoke_agent <agent>            the run: run.started … run.finished
//	├── turn <n>                    turn.started … its last event
//	│   ├── chat <model>            the model call: model.call minus wall_ms
//	│   └── execute_tool <name>     tool.call … tool.result
//	└── turn <n+1> …
//
// Every span carries the correlation spine (run, task, session, user,
// agent). Values come only from the shaped records, so the allowlist,
// consent and scrubbing of the NDJSON lane hold here too.

// Span attribute keys delta adds beside the GenAI ones.
const (
	attrRunID       = "delta.run.id"
	attrTaskID      = "delta.task.id"
	attrUserID      = "user.id"
	attrRunStatus   = "delta.run.status"
	attrAttempts    = "delta.run.attempts"
	attrTurn        = "delta.turn"
	attrToolsOffer  = "delta.turn.tools"
	attrCostUSD     = "delta.usage.cost_usd"
	attrLatencyMS   = "delta.latency_ms"
	attrRetries     = "delta.retries"
	attrFallback    = "delta.fallback"
	attrCacheHitPct = "delta.cache_hit_pct"
	attrEffort      = "delta.reasoning_effort"
	attrToolCalls   = "delta.tool_calls"
	attrResultChars = "delta.tool.result_chars"
	attrInterrupted = "delta.tool.interrupted"
	attrSystem      = "gen_ai.system" // the older name of gen_ai.provider.name, still read by many backends
)

// spanSpec is one span to emit: ids, parent, times, attributes, status.
type spanSpec struct {
	id, parent  trace.SpanID
	name        string
	kind        trace.SpanKind
	start, end  time.Time
	attrs       []attribute.KeyValue
	errType     string // non-empty = error status
	errText     string // the status description, with consent
	events      []spanEvent
	interrupted bool
}

type spanEvent struct {
	name  string
	at    time.Time
	attrs []attribute.KeyValue
}

// runTree is one run's trace: the root first, then its descendants.
type runTree struct {
	trace trace.TraceID
	spans []spanSpec
}

// traceID and spanID derive the run's ids from stable names, so the same
// run exported again has the same ids.
func traceID(runID string) trace.TraceID {
	h := sha256.Sum256([]byte("delta/trace/" + runID))
	var id trace.TraceID
	copy(id[:], h[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

func spanID(runID, part string) trace.SpanID {
	h := sha256.Sum256([]byte("delta/span/" + runID + "/" + part))
	var id trace.SpanID
	copy(id[:], h[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

type turnAcc struct {
	n          int
	start, end time.Time
	started    bool
	reqModel   string
	tools      any
	chat       *Record
	retries    []Record
	calls      []string // tool-call ids in call order
	err        *Record  // an error of the turn that is no tool call's
}

type toolAcc struct {
	call   Record
	result *Record
	err    *Record
}

// buildRun shapes the run's events (ending with run.finished) into its
// span tree.
func buildRun(s shaper, evs []event.Event) runTree {
	if len(evs) == 0 {
		return runTree{}
	}
	runID := evs[0].RunID
	tree := runTree{trace: traceID(runID)}
	turns := map[int]*turnAcc{}
	tools := map[string]*toolAcc{}
	var finished, runErr *Record
	var first, queued, started time.Time
	attempts := 0
	var in, out int64
	var cost float64
	turn := func(n int) *turnAcc {
		t := turns[n]
		if t == nil {
			t = &turnAcc{n: n}
			turns[n] = t
		}
		return t
	}
	var spine Record
	for _, e := range evs {
		at := time.UnixMilli(e.Time.UnixMilli()).UTC()
		if first.IsZero() {
			first = at
		}
		switch e.Name {
		case event.RunQueued, event.RunStarted, event.RunResumed, event.RunFinished, event.TurnStarted,
			event.ModelRetry, event.ModelCall, event.ToolCall, event.ToolResult, event.Error:
		default:
			// Other events only stretch their turn; shaping them (decode
			// and scrub) would be spent on nothing the trace shows.
			if t := turns[e.Turn]; t != nil && e.Name == event.Checkpoint && t.end.Before(at) {
				t.end = at
			}
			continue
		}
		r := s.record(e)
		if spine.SessionID == "" {
			spine.SessionID = r.SessionID
		}
		if spine.UserID == "" {
			spine.UserID = r.UserID
		}
		if spine.TaskID == "" {
			spine.TaskID = r.TaskID
		}
		grow := func(t *turnAcc) {
			if t.end.Before(at) {
				t.end = at
			}
		}
		switch e.Name {
		case event.RunQueued:
			queued = at
		case event.RunStarted, event.RunResumed:
			attempts++
			if started.IsZero() {
				started = at
			}
		case event.RunFinished:
			finished = &r
		case event.TurnStarted:
			t := turn(r.Turn)
			if !t.started {
				t.started, t.start = true, at
				t.reqModel, _ = r.Attributes[event.KeyModel].(string)
				t.tools = r.Attributes[event.KeyTools]
			}
			grow(t)
		case event.ModelRetry:
			t := turn(r.Turn)
			t.retries = append(t.retries, r)
			grow(t)
		case event.ModelCall:
			t := turn(r.Turn)
			t.chat = &r
			in += asInt(r.Attributes["gen_ai.usage.input_tokens"])
			out += asInt(r.Attributes["gen_ai.usage.output_tokens"])
			cost += asFloat(r.Attributes["gen_ai.usage.cost_usd"])
			grow(t)
		case event.ToolCall:
			id, _ := r.Attributes["tool.call_id"].(string)
			t := turn(r.Turn)
			if _, seen := tools[id]; !seen {
				t.calls = append(t.calls, id)
				tools[id] = &toolAcc{call: r}
			}
			grow(t)
		case event.ToolResult:
			id, _ := r.Attributes["tool.call_id"].(string)
			if a := tools[id]; a != nil {
				a.result = &r
			}
			if t := turns[r.Turn]; t != nil {
				grow(t)
			}
		case event.Error:
			if id, _ := r.Attributes[event.KeyCallID].(string); id != "" && tools[id] != nil {
				tools[id].err = &r
			} else {
				runErr = &r
				if t := turns[r.Turn]; t != nil {
					t.err = &r
					grow(t)
				}
			}
		}
	}
	if finished == nil {
		return runTree{}
	}
	end := time.UnixMilli(finished.TimeUnixMS).UTC()
	start := started
	if start.IsZero() {
		start = queued
	}
	if start.IsZero() {
		start = first
	}
	agent := s.agentID
	common := []attribute.KeyValue{attribute.String(attrRunID, runID)}
	if spine.SessionID != "" {
		common = append(common, semconv.GenAIConversationID(spine.SessionID))
	}
	if spine.TaskID != "" {
		common = append(common, attribute.String(attrTaskID, spine.TaskID))
	}
	if spine.UserID != "" {
		common = append(common, attribute.String(attrUserID, spine.UserID))
	}
	if agent != "" {
		common = append(common, semconv.GenAIAgentID(agent), semconv.GenAIAgentName(agent))
	}
	with := func(a ...attribute.KeyValue) []attribute.KeyValue {
		return append(append(make([]attribute.KeyValue, 0, len(common)+len(a)), common...), a...)
	}

	rootID := spanID(runID, "run")
	status, _ := finished.Attributes[event.KeyStatus].(string)
	root := spanSpec{id: rootID, name: "invoke_agent", kind: trace.SpanKindInternal, start: start, end: end,
		attrs: with(semconv.GenAIOperationNameInvokeAgent, attribute.String(attrRunStatus, status), attribute.Int(attrAttempts, attempts),
			semconv.GenAIUsageInputTokens(int(in)), semconv.GenAIUsageOutputTokens(int(out)), attribute.Float64(attrCostUSD, cost))}
	if agent != "" {
		root.name += " " + agent
	}
	if status == "failed" {
		root.errType = "failed"
		if runErr != nil {
			if v, _ := runErr.Attributes[event.KeyErrorType].(string); v != "" {
				root.errType = v
			}
		}
		root.errText, _ = finished.Attributes[event.KeyError].(string) // present only with consent
	}
	ns := make([]int, 0, len(turns))
	for n, t := range turns {
		if t.started || t.chat != nil {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	if len(ns) > 0 {
		if m := turns[ns[0]].reqModel; m != "" {
			root.attrs = append(root.attrs, semconv.GenAIRequestModel(m))
		}
	}
	tree.spans = append(tree.spans, root)
	for _, n := range ns {
		t := turns[n]
		key := strconv.Itoa(n)
		tid := spanID(runID, "turn/"+key)
		ts := spanSpec{id: tid, parent: rootID, name: "turn " + key, kind: trace.SpanKindInternal, start: t.start, end: t.end,
			attrs: with(attribute.Int(attrTurn, n))}
		if t.tools != nil {
			ts.attrs = append(ts.attrs, attribute.Int64(attrToolsOffer, asInt(t.tools)))
		}
		if !t.started && t.chat != nil {
			ts.start = time.UnixMilli(t.chat.TimeUnixMS).UTC().Add(-time.Duration(asInt(t.chat.Attributes["wall_ms"])) * time.Millisecond)
		}
		var kids []spanSpec
		if t.chat != nil || t.err != nil {
			kids = append(kids, chatSpan(t, runID, tid, ts.start, with))
		}
		for _, id := range t.calls {
			kids = append(kids, toolSpan(tools[id], runID, tid, end, with))
		}
		for _, k := range kids {
			if k.end.After(ts.end) {
				ts.end = k.end
			}
		}
		if t.err != nil {
			ts.errType = attrString(t.err.Attributes, event.KeyErrorType, "error")
			ts.errText, _ = t.err.Attributes[event.KeyErrorMessage].(string)
		}
		tree.spans = append(tree.spans, ts)
		tree.spans = append(tree.spans, kids...)
	}
	for i := range tree.spans {
		if sp := &tree.spans[i]; sp.end.Before(sp.start) {
			sp.end = sp.start
		}
	}
	return tree
}

// chatSpan is the turn's model call; a turn whose call failed (an error
// and no model.call) gets a failed chat span up to the error.
func chatSpan(t *turnAcc, runID string, parent trace.SpanID, turnStart time.Time, with func(...attribute.KeyValue) []attribute.KeyValue) spanSpec {
	sp := spanSpec{id: spanID(runID, "chat/"+strconv.Itoa(t.n)), parent: parent, kind: trace.SpanKindClient,
		attrs: with(semconv.GenAIOperationNameChat)}
	if t.reqModel != "" {
		sp.attrs = append(sp.attrs, semconv.GenAIRequestModel(t.reqModel))
	}
	name := t.reqModel
	if c := t.chat; c != nil {
		a := c.Attributes
		sp.end = time.UnixMilli(c.TimeUnixMS).UTC()
		sp.start = sp.end.Add(-time.Duration(asInt(a["wall_ms"])) * time.Millisecond)
		// The record's gen_ai.request.model is the model that served the call.
		if m, _ := a["gen_ai.request.model"].(string); m != "" {
			sp.attrs = append(sp.attrs, semconv.GenAIResponseModel(m))
			if name == "" {
				name = m
			}
		}
		if p, _ := a["gen_ai.provider"].(string); p != "" {
			sp.attrs = append(sp.attrs, semconv.GenAIProviderNameKey.String(p), attribute.String(attrSystem, p))
		}
		sp.attrs = append(sp.attrs, semconv.GenAIUsageInputTokens(int(asInt(a["gen_ai.usage.input_tokens"]))),
			semconv.GenAIUsageOutputTokens(int(asInt(a["gen_ai.usage.output_tokens"]))))
		if v, ok := a["gen_ai.usage.cached_tokens"]; ok {
			sp.attrs = append(sp.attrs, semconv.GenAIUsageCacheReadInputTokens(int(asInt(v))))
		}
		if fr, ok := a["gen_ai.response.finish_reasons"].([]any); ok {
			sp.attrs = append(sp.attrs, semconv.GenAIResponseFinishReasons(stringsOf(fr)...))
		}
		for from, to := range map[string]string{"gen_ai.usage.cost_usd": attrCostUSD, "latency_ms": attrLatencyMS, "retries": attrRetries,
			"fallback": attrFallback, "cache_hit_pct": attrCacheHitPct, "gen_ai.request.effort": attrEffort, "tool_calls": attrToolCalls} {
			if v, ok := a[from]; ok {
				sp.attrs = append(sp.attrs, value(to, v))
			}
		}
	} else {
		sp.start = turnStart
		sp.end = time.UnixMilli(t.err.TimeUnixMS).UTC()
	}
	if sp.start.Before(turnStart) {
		sp.start = turnStart
	}
	if t.chat == nil && t.err != nil {
		sp.errType = attrString(t.err.Attributes, event.KeyErrorType, "error")
		sp.errText, _ = t.err.Attributes[event.KeyErrorMessage].(string)
	}
	for _, r := range t.retries {
		ev := spanEvent{name: event.ModelRetry, at: time.UnixMilli(r.TimeUnixMS).UTC()}
		for _, k := range sortedKeys(r.Attributes) {
			ev.attrs = append(ev.attrs, value(k, r.Attributes[k]))
		}
		sp.events = append(sp.events, ev)
	}
	sp.name = "chat"
	if name != "" {
		sp.name += " " + name
	}
	return sp
}

// toolSpan is one tool call, from its intent to its result; a call with no
// result (the run ended first) ends with the run, as interrupted.
func toolSpan(a *toolAcc, runID string, parent trace.SpanID, runEnd time.Time, with func(...attribute.KeyValue) []attribute.KeyValue) spanSpec {
	c := a.call.Attributes
	id, _ := c["tool.call_id"].(string)
	name, _ := c["tool.name"].(string)
	sp := spanSpec{id: spanID(runID, "tool/"+id), parent: parent, name: "execute_tool " + name, kind: trace.SpanKindInternal,
		start: time.UnixMilli(a.call.TimeUnixMS).UTC(), end: runEnd,
		attrs: with(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name), semconv.GenAIToolCallID(id), semconv.GenAIToolTypeKey.String("function"))}
	if v, ok := c["tool.arguments"]; ok { // with consent only
		sp.attrs = append(sp.attrs, semconv.GenAIToolCallArgumentsKey.String(jsonText(v)))
	}
	if r := a.result; r != nil {
		sp.end = time.UnixMilli(r.TimeUnixMS).UTC()
		if v, ok := r.Attributes["tool.result_chars"]; ok {
			sp.attrs = append(sp.attrs, attribute.Int64(attrResultChars, asInt(v)))
		}
		if v, ok := r.Attributes["tool.result"]; ok { // with consent only
			sp.attrs = append(sp.attrs, semconv.GenAIToolCallResultKey.String(jsonText(v)))
		}
		if isErr, _ := r.Attributes["is_error"].(bool); isErr {
			sp.errType = "tool_error"
		}
	} else {
		sp.interrupted = true
		sp.errType = "interrupted"
		sp.attrs = append(sp.attrs, attribute.Bool(attrInterrupted, true))
	}
	if e := a.err; e != nil {
		sp.errType = attrString(e.Attributes, event.KeyErrorType, "tool_error")
		sp.errText, _ = e.Attributes[event.KeyErrorMessage].(string)
	}
	return sp
}

// emit starts and ends the tree's spans with their recorded times; the
// batching processor takes them from there.
func (t *Traces) emit(tree runTree) int {
	spans := make(map[trace.SpanID]trace.SpanContext, len(tree.spans))
	for _, sp := range tree.spans {
		ctx := context.WithValue(context.Background(), idsKey{}, spanIDs{trace: tree.trace, span: sp.id})
		if p, ok := spans[sp.parent]; ok {
			ctx = trace.ContextWithSpanContext(ctx, p)
		}
		_, s := t.tracer.Start(ctx, sp.name, trace.WithTimestamp(sp.start), trace.WithSpanKind(sp.kind), trace.WithAttributes(sp.attrs...))
		spans[sp.id] = s.SpanContext()
		for _, ev := range sp.events {
			s.AddEvent(ev.name, trace.WithTimestamp(ev.at), trace.WithAttributes(ev.attrs...))
		}
		if sp.errType != "" {
			s.SetAttributes(semconv.ErrorTypeKey.String(sp.errType))
			s.SetStatus(codes.Error, sp.errText)
		}
		s.End(trace.WithTimestamp(sp.end))
	}
	return len(tree.spans)
}

// value turns a shaped attribute into a span attribute: whole numbers as
// integers, other JSON values as their text.
func value(k string, v any) attribute.KeyValue {
	switch x := v.(type) {
	case string:
		return attribute.String(k, x)
	case bool:
		return attribute.Bool(k, x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return attribute.Int64(k, int64(x))
		}
		return attribute.Float64(k, x)
	}
	return attribute.String(k, jsonText(v))
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

func asFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

func attrString(m map[string]any, k, def string) string {
	if v, _ := m[k].(string); v != "" {
		return v
	}
	return def
}

func stringsOf(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
