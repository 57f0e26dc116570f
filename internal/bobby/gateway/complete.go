package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxCompletionValues is the most values one completion/complete answer
// holds (the protocol's limit); total and hasMore tell the rest.
const maxCompletionValues = 100

// complete answers completion/complete for the prompts' arguments from
// the caller's own live browser sessions: sessionId from the sessions the
// principal owns, pageId from the pages of the session named in the
// request's context (or of all its sessions). Values start with the typed
// prefix and are sorted. Another principal's sessions are never offered. A
// resource reference completes nothing; an unknown prompt or argument is
// invalid params.
func (cs *clientSession) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, rpcInvalidParams("/params/ref", "required", "completion/complete needs params.ref")
	}
	if p.Ref.Type != "ref/prompt" {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	if !slices.ContainsFunc(prompts, func(pr struct{ name, title, desc, body string }) bool { return pr.name == p.Ref.Name }) {
		return nil, rpcInvalidParams("/params/ref/name", "enum", "unknown prompt "+quote(p.Ref.Name)+": prompts/list names the prompts")
	}
	principal := cs.principal.Name
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		principal = req.Extra.TokenInfo.UserID // the bearer of this very request
	}
	var candidates []string
	switch p.Argument.Name {
	case "sessionId":
		for _, s := range cs.g.ownedSessions(principal) {
			candidates = append(candidates, s.id())
		}
	case "pageId":
		sid := ""
		if p.Context != nil {
			sid = p.Context.Arguments["sessionId"]
		}
		for _, s := range cs.g.ownedSessions(principal) {
			if sid != "" && s.id() != sid {
				continue
			}
			for _, pg := range s.pages() {
				candidates = append(candidates, pg.id())
			}
		}
	default:
		return nil, rpcInvalidParams("/params/argument/name", "enum", "prompt "+p.Ref.Name+" takes sessionId and pageId, not "+quote(p.Argument.Name))
	}
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, p.Argument.Value) {
			values = append(values, c)
		}
	}
	slices.Sort(values)
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}
	if len(values) > maxCompletionValues {
		res.Completion.Values, res.Completion.HasMore = values[:maxCompletionValues], true
	}
	return res, nil
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
