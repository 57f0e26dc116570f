package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// ParsePrices parses a price-override document (DELTA_MODEL_PRICES): a JSON
// object mapping a model ID to {"in","out","cacheRead","cacheWrite"} in
// dollars per million tokens. Missing fields are 0 (a missing cacheWrite is
// later valued at 1.25 × in, see Cost). A negative, null, non-numeric or
// unknown price field is an error rather than a 0: a wrong price would
// weaken the dollar budget silently.
func ParsePrices(doc []byte) (map[string]Price, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("want a JSON object of model → prices: %w", err)
	}
	if raw == nil {
		return nil, errors.New("want a JSON object of model → prices, got null")
	}
	models := make([]string, 0, len(raw))
	for m := range raw {
		models = append(models, m)
	}
	sort.Strings(models) // stable error order
	out := make(map[string]Price, len(raw))
	for _, m := range models {
		if m == "" {
			return nil, errors.New("empty model name")
		}
		p, err := parsePrice(raw[m])
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", m, err)
		}
		out[m] = p
	}
	return out, nil
}

func parsePrice(doc json.RawMessage) (Price, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil || fields == nil {
		return Price{}, errors.New(`want an object like {"in":2,"out":10}`)
	}
	var p Price
	for k, v := range fields {
		var dst *float64
		switch k {
		case "in":
			dst = &p.In
		case "out":
			dst = &p.Out
		case "cacheRead":
			dst = &p.CacheRead
		case "cacheWrite":
			dst = &p.CacheWrite
		default:
			return Price{}, fmt.Errorf("unknown field %q (want in, out, cacheRead, cacheWrite)", k)
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 || v[0] == 'n' || v[0] == '"' || v[0] == '{' || v[0] == '[' || v[0] == 't' || v[0] == 'f' {
			return Price{}, fmt.Errorf("%s: want a number", k)
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return Price{}, fmt.Errorf("%s: want a finite number", k)
		}
		if *dst < 0 || math.IsNaN(*dst) || math.IsInf(*dst, 0) {
			return Price{}, fmt.Errorf("%s: want a price ≥ 0, got %v", k, *dst)
		}
	}
	return p, nil
}
