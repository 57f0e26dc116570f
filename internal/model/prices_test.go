package model_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

func TestParsePrices(t *testing.T) {
	got, err := model.ParsePrices([]byte(`{"my-model":{"in":2,"out":10,"cacheRead":0.2},"other":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.Price{"my-model": {In: 2, Out: 10, CacheRead: 0.2}, "other": {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePrices = %+v, want %+v", got, want)
	}
}

func TestParsePricesRefuses(t *testing.T) {
	for _, tt := range []struct{ doc, wantInMsg string }{
		{`{"m":{"in":-1}}`, "≥ 0"},
		{`{"m":{"in":"2"}}`, "number"},
		{`{"m":{"in":null}}`, "number"},
		{`{"m":{"in":NaN}}`, "invalid character"},
		{`{"m":{"in":1e999}}`, "number"},
		{`{"m":{"input":2}}`, "unknown field"},
		{`[1,2]`, "JSON object"},
		{`{"m":3}`, "object"},
		{`null`, "null"},
		{`{"":{}}`, "empty model name"},
	} {
		_, err := model.ParsePrices([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.wantInMsg) {
			t.Errorf("ParsePrices(%s) = %v, want an error containing %q", tt.doc, err, tt.wantInMsg)
		}
	}
}

func FuzzParsePrices(f *testing.F) {
	for _, s := range []string{
		`{"m":{"in":2,"out":10,"cacheRead":0.2,"cacheWrite":2.5}}`, `{}`, `null`, `[]`, `{"m":{"in":-1}}`,
		`{"m":{"in":"1"}}`, `{"":{}}`, `{"m":null}`, `{"m":{"in":1e308}}`, `{"m":{"in":-0}}`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := model.ParsePrices([]byte(s))
		if err != nil {
			return
		}
		for m, pr := range p {
			for _, v := range []float64{pr.In, pr.Out, pr.CacheRead, pr.CacheWrite} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("accepted bad price %v for %q from %q", v, m, s)
				}
			}
		}
	})
}
