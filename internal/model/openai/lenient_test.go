package openai

import (
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// TestOddlyTypedChunks: a chunk with a field of an unexpected type is
// read, not refused, by the rules the SDK's decoder applied (lenient.go);
// what the caller gets is what it always got.
func TestOddlyTypedChunks(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"arguments as an object", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":{"x": [1, 2]}}}]},"finish_reason":"tool_calls"}]}`,
			`calls=a f {"x": [1, 2]} finish=tool_calls text=`},
		{"index as a string", `{"choices":[{"index":"0","delta":{"content":"hi"}}]}`, `calls= finish= text=hi`},
		{"index as a float", `{"choices":[{"index":1.5,"delta":{"content":"not choice 0"}},{"index":0.2,"delta":{"content":"yes"}}]}`, `calls= finish= text=yes`},
		{"content as a number", `{"choices":[{"index":0,"delta":{"content":12.50}},{"index":0,"delta":{"content":7}}],"model":3}`, `calls= finish= text=12.57`},
		{"first of a repeated name", `{"choices":[{"index":0,"delta":{"content":"first"},"delta":{"content":"second"},"finish_reason":1}]}`, `calls= finish=1 text=first`},
		{"name matches exactly", `{"choices":[{"index":0,"delta":{"Content":"no","content":true},"index":"x"}]}`, `calls= finish= text=true`},
		{"one bad choice drops them all", `{"choices":[{"index":0,"delta":{"content":"lost"}},"bad",{"index":"0"}]}`, `calls= finish= text=`},
		{"a delta of another type", `{"choices":[{"index":0,"delta":"x","finish_reason":"stop"},null]}`, `calls= finish=stop text=`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAccumulator(model.Stream{})
			if err := a.event([]byte(tc.data)); err != nil {
				t.Fatalf("event: %v", err)
			}
			r := a.response()
			var calls []string
			for _, c := range r.ToolCalls {
				calls = append(calls, c.ID+" "+c.Name+" "+string(c.Arguments))
			}
			if got := "calls=" + strings.Join(calls, ";") + " finish=" + r.FinishReason + " text=" + r.Text; got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestOddlyTypedUsage: counts sent as strings are read, a usage that is
// not an object is no usage, and a cost of another type is not a cost.
func TestOddlyTypedUsage(t *testing.T) {
	a := newAccumulator(model.Stream{})
	for _, data := range []string{
		`{"choices":[],"usage":{"prompt_tokens":"120","completion_tokens":true,"prompt_tokens_details":{"cached_tokens":"1e2","cache_write_tokens":[]},"cost":"0.5"}}`,
		`{"choices":[],"usage":"none","model":["m"]}`,
	} {
		if err := a.event([]byte(data)); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
	}
	u := a.response().Usage
	if u.InputTokens != 120 || u.OutputTokens != 1 || u.CacheReadTokens != 100 || u.CacheWriteTokens != 0 || u.CostReported {
		t.Fatalf("usage %+v", u)
	}
	if m := a.response().Model; m != `["m"]` {
		t.Fatalf("model %q", m)
	}
	for _, bad := range []string{`1`, `"x"`, `[{}]`, `true`} {
		if err := newAccumulator(model.Stream{}).event([]byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed stream chunk") {
			t.Errorf("%s: %v, want a malformed chunk", bad, err)
		}
	}
}
