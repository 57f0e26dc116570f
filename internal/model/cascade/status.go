package cascade

import (
	"net/url"
	"strings"
)

// KindFor names an endpoint in human terms from its wire (MODEL_API value:
// "anthropic", "responses", anything else = Chat Completions), its base URL
// and whether a broker mints its credential.
func KindFor(api, baseURL string, broker bool) string {
	switch strings.ToLower(strings.TrimSpace(api)) {
	case "anthropic":
		return KindAnthropic
	case "responses":
		if broker {
			return KindCodex
		}
		return KindOpenAI
	}
	if u, err := url.Parse(baseURL); err == nil {
		h := strings.ToLower(u.Hostname())
		if h == "openrouter.ai" || strings.HasSuffix(h, ".openrouter.ai") {
			return KindOpenRouter
		}
	}
	return KindChat
}

// StatusView is the secret-free model view of /v1/status: no keys, no
// URLs (a base URL may carry a token in its query), no headers.
type StatusView struct {
	Provider string         `json:"provider"`       // human name of the primary endpoint
	Model    string         `json:"model"`          // the primary model
	Chain    []string       `json:"provider_chain"` // human names, primary first, one per endpoint
	Steps    []EndpointView `json:"endpoints"`      // the same chain with labels and models
	Utility  string         `json:"utility_model"`  // "" = main cascade
}

// EndpointView is one endpoint in the status view.
type EndpointView struct {
	Label    string   `json:"label"`
	Provider string   `json:"provider"`
	Models   []string `json:"models"`
	Shared   bool     `json:"shared_credential,omitempty"`
}

// Describe renders endpoints for /v1/status.
func Describe(endpoints []Endpoint, utilityModel string) StatusView {
	v := StatusView{Chain: []string{}, Steps: []EndpointView{}, Utility: utilityModel}
	for i, ep := range endpoints {
		if i == 0 {
			v.Provider = ep.Kind
			if len(ep.Models) > 0 {
				v.Model = ep.Models[0]
			}
		}
		v.Chain = append(v.Chain, ep.Kind)
		v.Steps = append(v.Steps, EndpointView{
			Label: ep.Label, Provider: ep.Kind, Models: append([]string{}, ep.Models...), Shared: ep.Shared,
		})
	}
	return v
}

// Status is Describe for this cascade's endpoints.
func (c *Cascade) Status() StatusView { return Describe(c.o.Endpoints, c.o.UtilityModel) }
