package gateway

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// withLimits returns s with the bounds that depend on this gateway's
// configuration filled in: download_url's maxBytes is 1..[http].
// max_download_bytes. It applies to what tools/list advertises and to
// bobby://schemas; the call itself is validated without the bound, so an
// out-of-range value is an invalidRequest that names the limit (checked
// before any network access) rather than a schema violation.
func (g *Gateway) withLimits(tool string, s *jsonschema.Schema) *jsonschema.Schema {
	if tool != "download_url" || s == nil || s.Properties["maxBytes"] == nil {
		return s
	}
	c := *s
	c.Properties = make(map[string]*jsonschema.Schema, len(s.Properties))
	for k, v := range s.Properties {
		c.Properties[k] = v
	}
	mb := *s.Properties["maxBytes"]
	limit := float64(g.cfg.HTTP.MaxDownloadBytes)
	mb.Minimum, mb.Maximum = ptr(1.0), &limit
	mb.Description = fmt.Sprintf("1..%d ([http].max_download_bytes; the default)", g.cfg.HTTP.MaxDownloadBytes)
	c.Properties["maxBytes"] = &mb
	return &c
}

// mcpTool is the tool as this session advertises it: the principal's
// schema with the gateway's configured bounds.
func (cs *clientSession) mcpTool(t *toolDef, phase Phase) *mcp.Tool {
	mt := t.mcpTool(cs.principal, phase)
	if s, ok := mt.InputSchema.(*jsonschema.Schema); ok {
		mt.InputSchema = cs.g.withLimits(t.name, s)
	}
	return mt
}
