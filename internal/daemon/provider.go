package daemon

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/anthropic"
	"github.com/deltaharness/delta/internal/model/broker"
	"github.com/deltaharness/delta/internal/model/cascade"
	"github.com/deltaharness/delta/internal/model/openai"
	"github.com/deltaharness/delta/internal/model/responses"
)

// wireSpec is one endpoint's wire settings.
type wireSpec struct {
	api, baseURL, key  string
	headers            map[string]string
	client             *http.Client
	verbosity, summary string // Responses native-lane knobs
}

// newWire builds the client for one endpoint. Wire clients never retry and
// carry no timeout of their own: the cascade applies DELTA_MODEL_TIMEOUT_MS
// per attempt.
func newWire(w wireSpec) (model.Provider, error) {
	switch w.api {
	case config.APIAnthropic:
		return anthropic.New(anthropic.Options{BaseURL: w.baseURL, APIKey: w.key, Headers: w.headers, HTTPClient: w.client}), nil
	case config.APIResponses:
		return responses.New(responses.Options{BaseURL: w.baseURL, APIKey: w.key, Headers: w.headers, HTTPClient: w.client,
			TextVerbosity: w.verbosity, ReasoningSummary: w.summary}), nil
	default:
		return openai.New(openai.Options{BaseURL: w.baseURL, APIKey: w.key, Headers: w.headers, HTTPClient: w.client}), nil
	}
}

// newCascade assembles the primary endpoint (primary model and
// DELTA_MODEL_FALLBACKS, MODEL_HEADERS, optional broker) and the
// DELTA_PROVIDERS endpoints into the provider the engine calls.
func newCascade(cfg config.Config, logger *slog.Logger) (*cascade.Cascade, error) {
	primaryModels := append([]string{cfg.ModelPrimary}, cfg.ModelFallbacks...)
	var eps []cascade.Endpoint

	primary := wireSpec{api: cfg.ModelAPI, baseURL: cfg.ModelBaseURL, key: cfg.ModelAPIKey, headers: cfg.ModelHeaders,
		verbosity: cfg.TextVerbosity, summary: cfg.ReasoningSummary}
	for _, knob := range unmapped(cfg) {
		logger.Warn("model control not renderable on this provider", "control", knob)
	}
	ep := cascade.Endpoint{Label: "primary", Kind: cascade.KindFor(cfg.ModelAPI, cfg.ModelBaseURL, cfg.Broker.TokenURL != ""), Models: primaryModels}
	if cfg.Broker.TokenURL != "" {
		b, err := broker.New(broker.Options{URL: cfg.Broker.TokenURL, Auth: cfg.Broker.Auth, AllowedHosts: cfg.Broker.AllowedHosts, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("DELTA_BROKER_TOKEN_URL: %w", err)
		}
		primary.client, primary.key = &http.Client{Transport: b.Transport(nil)}, ""
		ep.Shared, ep.Reauth = true, b.Invalidate
	}
	p, err := newWire(primary)
	if err != nil {
		return nil, err
	}
	ep.Provider = p
	eps = append(eps, ep)

	for i, spec := range cfg.Providers {
		w := wireSpec{api: spec.API, baseURL: spec.BaseURL, key: spec.APIKey, verbosity: cfg.TextVerbosity, summary: cfg.ReasoningSummary}
		e := cascade.Endpoint{Label: spec.Label, Kind: cascade.KindFor(spec.API, spec.BaseURL, spec.BrokerMintURL != ""), Models: spec.Models}
		if e.Label == "" {
			e.Label = fmt.Sprintf("provider-%d", i+1)
		}
		if len(e.Models) == 0 {
			e.Models = primaryModels
		}
		if spec.BrokerMintURL != "" {
			b, err := broker.New(broker.Options{URL: spec.BrokerMintURL, Auth: spec.BrokerAuth, AllowedHosts: cfg.Broker.AllowedHosts, Logger: logger})
			if err != nil {
				return nil, fmt.Errorf("DELTA_PROVIDERS[%d].brokerMintUrl: %w", i, err)
			}
			w.client, w.key = &http.Client{Transport: b.Transport(nil)}, ""
			e.Shared, e.Reauth = true, b.Invalidate
		}
		p, err := newWire(w)
		if err != nil {
			return nil, fmt.Errorf("DELTA_PROVIDERS[%d] (%s): %w", i, strings.TrimSpace(e.Label), err)
		}
		e.Provider = p
		eps = append(eps, e)
	}
	return cascade.New(cascade.Options{Endpoints: eps, AttemptTimeout: cfg.ModelTimeout, UtilityModel: cfg.UtilityModel, Logger: logger})
}

// unmapped names the configured model controls the primary cannot render:
// one computation for the boot warning and /v1/status controls.unmapped.
func unmapped(cfg config.Config) []string {
	if cfg.ModelAPI == config.APIResponses {
		return responses.Unmapped(cfg.ModelBaseURL, responses.Options{TextVerbosity: cfg.TextVerbosity, ReasoningSummary: cfg.ReasoningSummary})
	}
	var out []string
	if cfg.TextVerbosity != "" {
		out = append(out, "DELTA_TEXT_VERBOSITY")
	}
	if cfg.ReasoningSummary != "" {
		out = append(out, "DELTA_REASONING_SUMMARY")
	}
	return out
}
