package telemetry

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/event"
)

// Record is one exported event: the correlation spine (user, agent,
// session, run, task, turn) and the event's attributes after the allowlist
// and scrubbing. Field names are the wire contract collectors key on.
type Record struct {
	ID         string         `json:"event.id"` // <daemon id>:<events row id>
	Name       string         `json:"event.name"`
	TimeUnixMS int64          `json:"event.time_unix_ms"`
	UserID     string         `json:"user.id,omitempty"`
	AgentID    string         `json:"agent.id,omitempty"`
	SessionID  string         `json:"session.id,omitempty"`
	RunID      string         `json:"run.id,omitempty"`
	TaskID     string         `json:"task.id,omitempty"`
	Turn       int            `json:"turn"`
	Attributes map[string]any `json:"attributes"`
}

// errorMessageMax bounds exported error text, with consent.
const errorMessageMax = 200

// shaper turns stored events into records.
type shaper struct {
	daemonID string
	agentID  string
	payloads bool                // DELTA_CAPTURE_PAYLOADS: arguments, results, error text too
	redact   func(string) string // vault values; nil = none
}

func (s shaper) record(e event.Event) Record {
	r := Record{
		ID: s.daemonID + ":" + strconv.FormatInt(e.ID, 10), Name: e.Name, TimeUnixMS: e.Time.UnixMilli(),
		UserID: e.Owner, AgentID: s.agentID, SessionID: e.SessionID, RunID: e.RunID, TaskID: e.TaskID, Turn: e.Turn,
	}
	var data map[string]any
	if len(e.Data) > 0 && json.Unmarshal(e.Data, &data) != nil {
		data = nil // not an object: nothing is exported rather than something unchecked
	}
	var attrs map[string]any
	switch e.Name {
	case event.ModelCall:
		attrs = s.modelCall(data)
	case event.ToolCall:
		attrs = pick(data, event.KeyName, "tool.name", event.KeyCallID, "tool.call_id")
		if s.payloads {
			if v, ok := data[event.KeyArguments]; ok {
				attrs["tool.arguments"] = v
			}
		}
	case event.ToolResult:
		attrs = pick(data, event.KeyName, "tool.name", event.KeyCallID, "tool.call_id", event.KeyIsError, "is_error", event.KeyChars, "tool.result_chars")
		if s.payloads {
			if v, ok := data[event.KeyPreview]; ok {
				attrs["tool.result"] = v
			}
		}
	default:
		// Other events keep their attributes (recall excerpts, diagnostic
		// strings) except the free error text, which needs consent.
		attrs = data
		if attrs == nil {
			attrs = map[string]any{}
		}
		for _, k := range []string{event.KeyErrorMessage, event.KeyError} {
			v, ok := attrs[k].(string)
			if !ok {
				continue
			}
			if s.payloads {
				attrs[k] = clip.Runes(v, errorMessageMax)
			} else {
				delete(attrs, k)
			}
		}
		if e.Name == event.Error {
			if v, ok := attrs[event.KeyErrorType]; ok {
				attrs["error.class"] = v
			}
		}
	}
	r.Attributes = scrubMap(attrs, s.redact)
	return r
}

// modelCall maps a model.call to the GenAI-style operational attributes
// that export without consent; tool_calls (the count of tool calls the
// model asked for) needs it.
func (s shaper) modelCall(d map[string]any) map[string]any {
	a := pick(d, event.KeyModel, "gen_ai.request.model", event.KeyProvider, "gen_ai.provider",
		event.KeyFinishReasons, "gen_ai.response.finish_reasons", event.KeyCostUSD, "gen_ai.usage.cost_usd",
		event.KeyLatencyMS, "latency_ms", event.KeyWallMS, "wall_ms", event.KeyCacheHitPct, "cache_hit_pct", event.KeyRetries, "retries", event.KeyStep, "step")
	if u, ok := d[event.KeyUsage].(map[string]any); ok {
		for from, to := range map[string]string{"input_tokens": "gen_ai.usage.input_tokens", "output_tokens": "gen_ai.usage.output_tokens", "cache_read_tokens": "gen_ai.usage.cached_tokens"} {
			if v, ok := u[from]; ok {
				a[to] = v
			}
		}
	}
	if v, _ := d[event.KeyEffort].(string); v != "" {
		a["gen_ai.request.effort"] = v
	}
	if v, _ := d[event.KeySpeed].(string); v != "" {
		a["speed"] = v
	}
	if v, _ := d[event.KeyFallback].(bool); v {
		a["fallback"] = true
	}
	if s.payloads {
		if v, ok := d[event.KeyToolCalls]; ok {
			a["tool_calls"] = v
		}
	}
	return a
}

// pick copies the named keys (from, to pairs) that d has.
func pick(d map[string]any, pairs ...string) map[string]any {
	out := make(map[string]any, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		if v, ok := d[pairs[i]]; ok {
			out[pairs[i+1]] = v
		}
	}
	return out
}

// credentialPatterns match strings that look like credentials whatever
// their context: provider API keys, bearer headers, cloud and chat tokens,
// JWTs and PEM private keys.
var credentialPatterns = regexp.MustCompile(strings.Join([]string{
	`sk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_\-]{16,}`,
	`(?i)bearer\s+[A-Za-z0-9._~+/\-]{12,}=*`,
	`gh[pousr]_[A-Za-z0-9]{20,}`,
	`github_pat_[A-Za-z0-9_]{20,}`,
	`xox[abposr]-[A-Za-z0-9\-]{10,}`,
	`AKIA[0-9A-Z]{16}`,
	`AIza[0-9A-Za-z_\-]{30,}`,
	`eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`,
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
	`(?i)(?:api[_-]?key|secret|password|passwd|token)["']?\s*[:=]\s*["']?[^\s"',;]{8,}`,
}, "|"))

const scrubbed = "[redacted]"

// scrub removes vault values and credential-looking substrings.
func scrub(s string, redact func(string) string) string {
	if redact != nil {
		s = redact(s)
	}
	return credentialPatterns.ReplaceAllString(s, scrubbed)
}

func scrubMap(m map[string]any, redact func(string) string) map[string]any {
	for k, v := range m {
		m[k] = scrubValue(v, redact)
	}
	return m
}

func scrubValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return scrub(x, redact)
	case map[string]any:
		return scrubMap(x, redact)
	case []any:
		for i := range x {
			x[i] = scrubValue(x[i], redact)
		}
		return x
	}
	return v
}
