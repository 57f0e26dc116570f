package gateway

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// referenceHandleTools are the tools the reference lets a workflowHandle
// stand for sessionId+pageId+workflowId. A tool of the table accepts a
// handle exactly when it is one of these (the rest are not declared yet).
var referenceHandleTools = []string{
	"a11y_snapshot", "click", "click_and_wait_for_popup", "context_ask", "context_neighbors",
	"control_action", "cookie_delete", "cookie_get", "cookie_set", "dialog", "download_url",
	"emulate", "evaluate_javascript", "extract_structured", "form_snapshot", "inspect",
	"intent_complete_form", "intent_dismiss_obstruction", "intent_extract", "intent_fill",
	"intent_follow", "intent_locate", "intent_submit_and_verify", "intent_wait_for_state",
	"navigate", "network_log", "page_activate", "page_close", "pdf", "screenshot", "type_text",
	"upload_files", "wait_for",
}

func TestHandleAllowlist(t *testing.T) {
	if len(referenceHandleTools) != 33 {
		t.Fatalf("the reference lists 33 handle tools, this list %d", len(referenceHandleTools))
	}
	for _, td := range toolTable {
		want := slices.Contains(referenceHandleTools, td.name)
		if td.handle != want {
			t.Errorf("%s: accepts a workflowHandle = %v, want %v", td.name, td.handle, want)
		}
		_, inSchema := td.input(policy.Principal{}).Properties["workflowHandle"]
		if td.name != "workflow_observe" && inSchema != want {
			t.Errorf("%s: input schema has workflowHandle = %v, want %v", td.name, inSchema, want)
		}
	}
}

// jsonFields are the JSON names of a struct type's fields, embedded
// structs flattened.
func jsonFields(rt reflect.Type) []string {
	var out []string
	for _, f := range reflect.VisibleFields(rt) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestArgsMatchSchemas: every tool's typed arguments have exactly the
// properties of its input schema (a command kind: of its kind input), so
// nothing validated is dropped on decoding and nothing decoded is
// unvalidated.
func TestArgsMatchSchemas(t *testing.T) {
	all, _ := policy.NewPrincipal("all", policy.NewSet(policy.All...), zeroTime, "")
	for _, td := range toolTable {
		s := td.input(all)
		if td.cmd != nil {
			s = td.kindSchema()
		}
		var props []string
		for k := range s.Properties {
			props = append(props, k)
		}
		sort.Strings(props)
		got := jsonFields(td.argsType)
		if td.cmd == nil && td.scoped {
			// scopeArgs also carries idempotencyKey, which only some tools take.
			got = slices.DeleteFunc(got, func(f string) bool { _, ok := s.Properties[f]; return !ok && f == "idempotencyKey" })
		}
		if !slices.Equal(got, props) {
			t.Errorf("%s: argument fields %v, schema properties %v", td.name, got, props)
		}
	}
}

// results records the structuredContent of every tools/call result the
// tests make through callTool, for TestOutputParity.
var results struct {
	sync.Mutex
	byTool map[string][]json.RawMessage
}

func recordResult(tool string, sc []byte) {
	results.Lock()
	defer results.Unlock()
	if results.byTool == nil {
		results.byTool = map[string][]json.RawMessage{}
	}
	results.byTool[tool] = append(results.byTool[tool], append(json.RawMessage(nil), sc...))
}

// checkOutputParity validates every recorded result against the output
// schemas the tool advertises: the tools/list one (every result, refused
// ones too) and the full one of bobby://schemas (results that ran; a
// refused call has the rejection shape).
func checkOutputParity() (int, []string) {
	results.Lock()
	defer results.Unlock()
	var failures []string
	resolve := func(s *jsonschema.Schema) *jsonschema.Resolved {
		rs, err := s.Resolve(nil)
		if err != nil {
			failures = append(failures, "resolve: "+err.Error())
		}
		return rs
	}
	rejected := resolve(rejectionOutput)
	n := 0
	for tool, list := range results.byTool {
		td := toolIndex[tool]
		if td == nil {
			continue
		}
		full, adv := resolve(td.outputFull()), resolve(td.advertisedOutput(""))
		if full == nil || adv == nil || rejected == nil {
			continue
		}
		for _, raw := range list {
			var v any
			_ = json.Unmarshal(raw, &v)
			n++
			if err := adv.Validate(v); err != nil {
				failures = append(failures, tool+" (advertised): "+err.Error())
			}
			target := full
			if m, _ := v.(map[string]any); m["status"] == StatusRejected {
				target = rejected
			}
			if err := target.Validate(v); err != nil {
				msg := err.Error()
				if len(msg) > 600 {
					msg = msg[len(msg)-600:]
				}
				failures = append(failures, tool+": "+msg)
			}
		}
	}
	if n == 0 {
		failures = append(failures, "no results were recorded")
	}
	return n, failures
}
