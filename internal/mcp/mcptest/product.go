package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaIdempotencyKey is the _meta key the product deduplicates
// learning_write calls on (the key Delta's promotions send).
const MetaIdempotencyKey = "delta/idempotency_key"

// ProductCall is one call the product received.
type ProductCall struct {
	Tool string
	Args map[string]any
	Key  string // the _meta idempotency key ("" when absent)
}

// ProductSkill is one skill of the product's registry.
type ProductSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Body        string `json:"body"`
	Version     int    `json:"version"`
}

// Product plays the connected product: a curated write tool
// (learning_write) that accepts a proposal once per idempotency key, and a
// skill registry (skill_search, skill_get, skill_create, skill_update) with
// versioned bodies. It records every call. Its state outlives the server's
// sessions (and a Delta restart), like a real product's.
type Product struct {
	mu        sync.Mutex
	calls     []ProductCall
	proposals []ProductCall
	keys      map[string]int
	skills    []*ProductSkill
	// conflicts is how many skill_update calls still answer with a version
	// conflict whatever their base version.
	conflicts int
}

// NewProduct returns a product whose registry holds skills (version 1 when
// none is given).
func NewProduct(skills ...ProductSkill) *Product {
	p := &Product{keys: map[string]int{}}
	for _, s := range skills {
		s.Version = max(s.Version, 1)
		p.skills = append(p.skills, &s)
	}
	return p
}

// ConflictNextUpdates makes the next n skill_update calls report a version
// conflict (as if another writer had just updated the skill), bumping the
// skill's version each time.
func (p *Product) ConflictNextUpdates(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conflicts = n
}

// Calls lists the calls to tool (every tool for ""), in order.
func (p *Product) Calls(tool string) []ProductCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ProductCall
	for _, c := range p.calls {
		if tool == "" || c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

// Proposals lists the learning_write calls the product accepted: one per
// idempotency key.
func (p *Product) Proposals() []ProductCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.proposals)
}

// Skill returns the registry's skill named name.
func (p *Product) Skill(name string) (ProductSkill, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.skills {
		if s.Name == name {
			return *s, true
		}
	}
	return ProductSkill{}, false
}

func (p *Product) record(req *sdk.CallToolRequest, tool string) (map[string]any, error) {
	args := map[string]any{}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
	}
	key, _ := req.Params.Meta[MetaIdempotencyKey].(string)
	p.calls = append(p.calls, ProductCall{Tool: tool, Args: args, Key: key})
	return args, nil
}

func (p *Product) find(name string) *ProductSkill {
	for _, s := range p.skills {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func jsonResult(v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	return textResult(string(b))
}

// addProduct registers the product's tools on s.
func addProduct(s *sdk.Server, p *Product) {
	open := json.RawMessage(`{"type":"object","additionalProperties":true}`)
	handle := func(name, desc string, f func(args map[string]any, key string) *sdk.CallToolResult) {
		s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: open},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				args, err := p.record(req, name)
				if err != nil {
					return errResult("arguments are not a JSON object: " + err.Error()), nil
				}
				key, _ := req.Params.Meta[MetaIdempotencyKey].(string)
				return f(args, key), nil
			})
	}
	handle("learning_write", "Propose a learning for human review.", func(args map[string]any, key string) *sdk.CallToolResult {
		if n, dup := p.keys[key]; dup && key != "" {
			return textResult(fmt.Sprintf("duplicate of proposal #%d (same idempotency key); nothing new recorded", n))
		}
		p.proposals = append(p.proposals, ProductCall{Tool: "learning_write", Args: args, Key: key})
		if key != "" {
			p.keys[key] = len(p.proposals)
		}
		return textResult(fmt.Sprintf("proposal #%d awaits review", len(p.proposals)))
	})
	handle("skill_search", "List the registry's skills, in index order.", func(args map[string]any, _ string) *sdk.CallToolResult {
		limit := 25
		if l, ok := args["limit"].(float64); ok && l > 0 {
			limit = int(l)
		}
		var out []map[string]string
		for _, sk := range p.skills[:min(limit, len(p.skills))] {
			out = append(out, map[string]string{"name": sk.Name, "description": sk.Description})
		}
		return jsonResult(map[string]any{"skills": out})
	})
	handle("skill_get", "Read one skill: its body and version.", func(args map[string]any, _ string) *sdk.CallToolResult {
		name, _ := args["name"].(string)
		sk := p.find(name)
		if sk == nil {
			return errResult("no skill named " + name)
		}
		return jsonResult(sk)
	})
	handle("skill_create", "Create a skill.", func(args map[string]any, _ string) *sdk.CallToolResult {
		name, _ := args["name"].(string)
		body, _ := args["body"].(string)
		desc, _ := args["description"].(string)
		if strings.TrimSpace(name) == "" || strings.TrimSpace(body) == "" {
			return errResult("name and body are required")
		}
		if p.find(name) != nil {
			return errResult("skill " + name + " exists: update it with its base_version")
		}
		p.skills = append(p.skills, &ProductSkill{Name: name, Description: desc, Body: body, Version: 1})
		return textResult("created " + name + " version 1")
	})
	handle("skill_update", "Update a skill from its base version.", func(args map[string]any, _ string) *sdk.CallToolResult {
		name, _ := args["name"].(string)
		body, _ := args["body"].(string)
		sk := p.find(name)
		if sk == nil {
			return errResult("no skill named " + name)
		}
		base, _ := args["base_version"].(float64)
		camel, _ := args["baseVersion"].(float64)
		if base != camel {
			return errResult("base_version and baseVersion differ")
		}
		if p.conflicts > 0 {
			p.conflicts--
			sk.Version++
			sk.Body += "\n- (edited by another writer)"
		}
		if int(base) != sk.Version {
			return errResult(fmt.Sprintf("version conflict: base_version %d, current version %d; reload and retry", int(base), sk.Version))
		}
		sk.Body, sk.Version = body, sk.Version+1
		return textResult(fmt.Sprintf("updated %s to version %d", name, sk.Version))
	})
}
