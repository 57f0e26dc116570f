package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The three working loops, each taking sessionId and pageId.
var prompts = []struct {
	name, title, desc, body string
}{
	{"fill_and_submit_form", "Fill and submit a form",
		"The standard form loop on one page: observe, complete, submit, verify.",
		`Fill and submit the form on page %[2]s of session %[1]s.
1. workflow_observe (or form_snapshot {sessionId:%[1]q, pageId:%[2]q}) with includeForms:true to see the controls and their semantic targets.
2. intent_complete_form {sessionId, pageId, values:{"<label>": "<value>", …}}. Check evidence.revealedControls: controls that appeared while filling can be filled right away with their targets.
3. intent_submit_and_verify {sessionId, pageId}. If the status is failed with error.code formValidationFailed, fix the controls listed in formValidation and submit again.
4. Stop when the outcome is completed and the verification evidence shows the expected page. Never retry a needsReconciliation outcome blindly: observe first.`},
	{"extract_from_page", "Extract data from a page",
		"Read what a page shows without paying for its navigation chrome.",
		`Extract the requested information from page %[2]s of session %[1]s.
1. a11y_snapshot {sessionId:%[1]q, pageId:%[2]q, target:{role:"main"}, interesting:false} for the content; raise maxNodes only if truncated says so.
2. For repeated items use extract_structured {selector, fields:{name:"css", link:"a@href"}}.
3. inspect a single element by ref when one detail is missing. Quote only what the evidence shows.`},
	{"recover_workflow", "Recover a workflow",
		"Reconcile after a failure, a lost response or an unknown handle.",
		`Recover the work on page %[2]s of session %[1]s.
1. session_list: is session %[1]s still there? page_list {sessionId:%[1]q}: is page %[2]s still there (and did a popup open)?
2. If a dialog is listed, answer it with dialog {accept}.
3. Read error.repair.action of the failed result and bobby://failure-taxonomy for the code. needsReconciliation means never retry blindly: take a11y_snapshot and decide from what the page shows.
4. If the handle is unknown, keep going with explicit sessionId/pageId, or start a new workflow and close the orphaned session with session_close.`},
}

func addPrompts(cs *clientSession) {
	for _, p := range prompts {
		p := p
		cs.server.AddPrompt(&mcp.Prompt{
			Name: p.name, Title: p.title, Description: p.desc,
			Arguments: []*mcp.PromptArgument{
				{Name: "sessionId", Description: "the browser session", Required: true},
				{Name: "pageId", Description: "the page in that session", Required: true},
			},
		}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			sid, pid := req.Params.Arguments["sessionId"], req.Params.Arguments["pageId"]
			switch {
			case sid == "":
				return nil, rpcInvalidParams("/params/arguments/sessionId", "required", "prompt "+p.name+" needs sessionId")
			case pid == "":
				return nil, rpcInvalidParams("/params/arguments/pageId", "required", "prompt "+p.name+" needs pageId")
			}
			return &mcp.GetPromptResult{
				Description: p.desc,
				Messages: []*mcp.PromptMessage{{
					Role:    "user",
					Content: &mcp.TextContent{Text: fmt.Sprintf(p.body, sid, pid)},
				}},
			}, nil
		})
	}
}

var _ error = (*jsonrpc.Error)(nil)
