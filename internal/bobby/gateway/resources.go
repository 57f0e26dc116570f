package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/bobby/policy"
)

// Static resources. Readable by any authenticated principal; only live
// artifact:// entries are gated (by artifact:read and ownership).
const (
	ResourceTaxonomy     = TaxonomyURI
	ResourceCapabilities = "bobby://capabilities"
	ResourcePhases       = "bobby://phases"
	ResourceSchemas      = "bobby://schemas"
	artifactScheme       = "artifact://"
)

func addResources(cs *clientSession) {
	static := []struct {
		uri, name, title, desc string
		body                   func() any
	}{
		{ResourceTaxonomy, "failure-taxonomy", "Failure taxonomy", "Every error code and rejection reason: meaning, repair action, retry rule.", func() any { return taxonomyDoc() }},
		{ResourceCapabilities, "capabilities", "Tool capabilities", "Tool → required capability (static and dynamic), annotations and phases.", func() any { return capabilitiesDoc(cs.g.tools) }},
		{ResourcePhases, "phases", "Toolset phases", "Phase → tools table and the toolset_select rules.", func() any { return phasesDoc(cs.g.startPhase) }},
		{ResourceSchemas, "schemas", "Tool schemas", "Input and output JSON Schemas of every tool, the command_execute envelope kinds and their inputs.", func() any { return schemasDoc(cs) }},
	}
	for _, r := range static {
		body := r.body
		uri := r.uri
		cs.server.AddResource(&mcp.Resource{URI: r.uri, Name: r.name, Title: r.title, Description: r.desc, MIMEType: "application/json"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				b, err := json.MarshalIndent(body(), "", " ")
				if err != nil {
					return nil, fmt.Errorf("render %s: %w", uri, err)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
			})
	}
	cs.server.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: checkpointTemplate, Name: "checkpoint", Title: "Checkpoint records", MIMEType: "application/json",
		Description: "The recorded outcomes (every attempt) of a checkpointed command of yours, e.g. click_and_wait_for_popup with autoCheckpoint; kept in bobby's state directory across restarts.",
	}, cs.readCheckpoints)
	if cs.principal.Capabilities.Has(policy.ArtifactRead) {
		cs.server.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: artifactScheme + "{id}", Name: "artifact", Title: "Captured artifact",
			Description: "Screenshots, PDFs and downloads captured by this principal (needs artifact:read).",
		}, cs.readArtifact)
	}
}

// readArtifact serves artifact://<id>. Capability and ownership are
// re-checked on every read; another principal's artifact is "not found".
func (cs *clientSession) readArtifact(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	p := cs.principal
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if tp, ok := req.Extra.TokenInfo.Extra[tokenInfoPrincipal].(policy.Principal); ok {
			p = tp
		}
	}
	if !p.Capabilities.Has(policy.ArtifactRead) || p.Expired(cs.g.now()) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	a, ok := cs.g.artifacts.get(strings.TrimPrefix(uri, artifactScheme))
	if !ok || a.Owner != p.Name {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: a.MIME, Blob: a.Data}}}, nil
}

func capabilitiesDoc(tools []*toolDef) map[string]any {
	rows := []map[string]any{}
	for _, t := range tools {
		var phases []string
		for _, p := range t.phases {
			phases = append(phases, string(p))
		}
		cap := string(t.capability)
		if cap == "" {
			cap = "(any authenticated principal)"
		}
		row := map[string]any{
			"tool": t.name, "capability": cap, "dynamic": t.dynamic, "phases": phases, "engines": t.enginesOf(),
			"readOnlyHint": t.ann.ReadOnly, "destructiveHint": t.ann.Destructive, "idempotentHint": t.ann.Idempotent, "openWorldHint": t.ann.OpenWorld,
		}
		if t.engineGap != "" {
			row["engineGap"] = t.engineGap
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["tool"].(string) < rows[j]["tool"].(string) })
	return map[string]any{
		"uri":          ResourceCapabilities,
		"capabilities": policy.All,
		"rules": []string{
			"A tool is listed only to principals holding its capability; every call re-checks, so advertisement is never authority.",
			"Sessions and pages belong to the principal that created them; another principal gets notFound.",
			"A tool runs on the engines it lists ([browser] engine: chromium, firefox); on another engine tools/list leaves it out and a call answers unsupportedOnEngine (engineGap says why).",
			"artifact:// resources are created by screenshot, pdf, download_url and clicks that download (artifact:capture) and read with artifact:read by their owner only.",
		},
		"tools": rows,
	}
}

func schemasDoc(cs *clientSession) map[string]any {
	tools := map[string]any{}
	for _, t := range cs.g.tools {
		tools[t.name] = map[string]any{"input": withDefs(cs.g.withLimits(t.name, t.input(cs.principal))), "output": t.outputFull()}
	}
	kinds := map[string]any{}
	for _, k := range commandKinds(toolTable) {
		if k == "intent" {
			intents := map[string]any{}
			for ik, tool := range intentKinds() {
				intents[ik] = withDefs(toolIndex[tool].kindSchema())
			}
			kinds[k] = map[string]any{"input.kind": intents}
			continue
		}
		kinds[k] = withDefs(toolIndex[k].kindSchema())
	}
	return map[string]any{
		"uri":          ResourceSchemas,
		"tools":        tools,
		"envelopeKind": kinds,
		"rejected":     rejectionOutput,
		"notes": []string{
			"Argument names are camelCase.",
			"tools/list advertises abridged schemas: no length/range/count bounds, a semantic target as one object, an output schema of the top-level properties and their types (in the explore phase {type:object} only), and in the explore phase no workflowId/evidenceDetail/timeoutMs/idempotencyKey. These schemas are the full ones, and every call is validated against them.",
			"output is the shape of a call that ran (completed or failed); a call refused before it ran (status rejected) has the shape of rejected.",
			"Violations return {reason:\"schemaViolation\", pointer, constraint}: the pointer is the argument's location in the schema, the constraint its keyword; the submitted value is never echoed.",
		},
	}
}

// artifact is one captured file.
type artifact struct {
	ID      string
	Owner   string
	MIME    string
	Data    []byte
	SHA256  string
	Created time.Time
}

func (a *artifact) uri() string { return artifactScheme + a.ID }

// evidence is how a tool result names the artifact: where to read it and
// what it holds.
func (a *artifact) evidence() map[string]any {
	return map[string]any{"uri": a.uri(), "mimeType": a.MIME, "bytes": len(a.Data), "sha256": a.SHA256}
}

// artifactStore keeps recent artifacts in memory, bounded by count and
// bytes; the oldest go first.
type artifactStore struct {
	maxCount int
	maxBytes int

	mu    sync.Mutex
	byID  map[string]*artifact
	order []string
	bytes int
}

func newArtifactStore(maxCount, maxBytes int) *artifactStore {
	return &artifactStore{maxCount: maxCount, maxBytes: maxBytes, byID: map[string]*artifact{}}
}

func (s *artifactStore) put(owner, mime string, data []byte, sum string, now time.Time) *artifact {
	a := &artifact{ID: newID(), Owner: owner, MIME: mime, Data: data, SHA256: sum, Created: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[a.ID] = a
	s.order = append(s.order, a.ID)
	s.bytes += len(data)
	for len(s.order) > 1 && (len(s.order) > s.maxCount || s.bytes > s.maxBytes) {
		old := s.byID[s.order[0]]
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
		s.bytes -= len(old.Data)
	}
	return a
}

func (s *artifactStore) get(id string) (*artifact, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	return a, ok
}
