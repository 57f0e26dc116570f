package gateway

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCompletePromptArguments: completion/complete offers a prompt's
// sessionId and pageId from the caller's own live sessions only, filtered
// by the typed prefix; pageId follows the sessionId already chosen.
func TestCompletePromptArguments(t *testing.T) {
	_, base := httpGateway(t)
	alice := connectHTTP(t, base, "alice-token", nil)
	bob := connectHTTP(t, base, "bob-token", nil)
	if alice.InitializeResult().Capabilities.Completions == nil {
		t.Fatal("initialize does not advertise completions")
	}
	s1 := asStr(mustOK(t, alice, "session_create", map[string]any{"profile": "default"})["id"])
	s2 := asStr(mustOK(t, alice, "session_create", map[string]any{"profile": "default"})["id"])
	p1 := asStr(mustOK(t, alice, "page_open", map[string]any{"sessionId": s1})["id"])
	p2 := asStr(mustOK(t, alice, "page_open", map[string]any{"sessionId": s1})["id"])
	p3 := asStr(mustOK(t, alice, "page_open", map[string]any{"sessionId": s2})["id"])
	bobs := asStr(mustOK(t, bob, "session_create", map[string]any{"profile": "default"})["id"])

	complete := func(cs *mcp.ClientSession, prompt, arg, value string, ctxArgs map[string]string) ([]string, error) {
		t.Helper()
		params := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prompt},
			Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
		if ctxArgs != nil {
			params.Context = &mcp.CompleteContext{Arguments: ctxArgs}
		}
		res, err := cs.Complete(testCtx(t), params)
		if err != nil {
			return nil, err
		}
		if res.Completion.Total != len(res.Completion.Values) || res.Completion.HasMore {
			t.Errorf("total %d, hasMore %v for %d values", res.Completion.Total, res.Completion.HasMore, len(res.Completion.Values))
		}
		return res.Completion.Values, nil
	}
	sorted := func(v ...string) []string { slices.Sort(v); return v }
	for _, tt := range []struct {
		name           string
		cs             *mcp.ClientSession
		prompt, arg, v string
		ctx            map[string]string
		want           []string
	}{
		{"alice's sessions", alice, "fill_and_submit_form", "sessionId", "", nil, sorted(s1, s2)},
		{"by prefix", alice, "extract_from_page", "sessionId", s2[:len(s2)-1], nil, []string{s2}},
		{"no match", alice, "recover_workflow", "sessionId", "zz-no-such", nil, []string{}},
		{"bob sees only his", bob, "fill_and_submit_form", "sessionId", "", nil, []string{bobs}},
		{"pages of the chosen session", alice, "fill_and_submit_form", "pageId", "", map[string]string{"sessionId": s1}, sorted(p1, p2)},
		{"pages of every session", alice, "fill_and_submit_form", "pageId", "", nil, sorted(p1, p2, p3)},
		{"another principal's session gives nothing", bob, "fill_and_submit_form", "pageId", "", map[string]string{"sessionId": s1}, []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := complete(tt.cs, tt.prompt, tt.arg, tt.v, tt.ctx)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("completion = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := complete(alice, "no_such_prompt", "sessionId", "", nil); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("unknown prompt: %v", err)
	}
	if _, err := complete(alice, "fill_and_submit_form", "colour", "", nil); err == nil || !strings.Contains(err.Error(), "takes sessionId and pageId") {
		t.Errorf("unknown argument: %v", err)
	}
	res, err := alice.Complete(testCtx(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "artifact://{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""}})
	if err != nil || len(res.Completion.Values) != 0 {
		t.Errorf("resource completion = %+v, %v; want no values", res, err)
	}
}
