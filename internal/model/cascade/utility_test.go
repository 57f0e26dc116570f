package cascade

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

func TestUtilityModelFor(t *testing.T) {
	for _, tt := range []struct {
		kind, in, want string
		ok             bool
	}{
		{KindAnthropic, "anthropic/claude-haiku-4.5", "claude-haiku-4-5", true},
		{KindAnthropic, "claude-sonnet-4.5.1", "claude-sonnet-4-5-1", true},
		{KindAnthropic, "claude-haiku-4-5", "claude-haiku-4-5", true},
		{KindAnthropic, "openai/gpt-5-mini", "", false},
		{KindOpenAI, "anthropic/claude-haiku-4.5", "", false},
		{KindCodex, "claude-haiku-4-5", "", false},
		{KindOpenAI, "openai/gpt-5-mini", "gpt-5-mini", true},
		{KindOpenRouter, "anthropic/claude-haiku-4.5", "anthropic/claude-haiku-4.5", true},
		{KindChat, "llama-3.3-70b", "llama-3.3-70b", true},
	} {
		got, ok := UtilityModelFor(tt.kind, tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("UtilityModelFor(%s, %s) = %q %v, want %q %v", tt.kind, tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// utilityChain: native Anthropic, an OpenAI Responses endpoint, OpenRouter.
func utilityChain(f *fakes) []Endpoint {
	return []Endpoint{
		{Label: "anth", Kind: KindAnthropic, Provider: f.provider("anth"), Models: []string{"claude-sonnet-4-5"}},
		{Label: "oai", Kind: KindOpenAI, Provider: f.provider("oai"), Models: []string{"gpt-5"}},
		{Label: "or", Kind: KindOpenRouter, Provider: f.provider("or"), Models: []string{"anthropic/claude-sonnet-4.5"}},
	}
}

func TestUtilityLane(t *testing.T) {
	for _, tt := range []struct {
		name     string
		utility  string
		failing  map[string]bool // labels whose utility attempt fails
		attempts []string
		reasons  []string
	}{
		{"served on native anthropic", "anthropic/claude-haiku-4.5", nil,
			[]string{"anth/claude-haiku-4-5"}, nil},
		{"responses skipped for claude, next compatible after any failure", "anthropic/claude-haiku-4.5",
			map[string]bool{"anth/claude-haiku-4-5": true},
			[]string{"anth/claude-haiku-4-5", "or/anthropic/claude-haiku-4.5"}, []string{"provider_failover"}},
		{"lane exhausted falls back to the main cascade", "anthropic/claude-haiku-4.5",
			map[string]bool{"anth/claude-haiku-4-5": true, "or/anthropic/claude-haiku-4.5": true},
			[]string{"anth/claude-haiku-4-5", "or/anthropic/claude-haiku-4.5", "anth/claude-sonnet-4-5"},
			[]string{"provider_failover", "model_switch"}},
		{"non-claude utility skips native anthropic", "openai/gpt-5-mini", nil,
			[]string{"oai/gpt-5-mini"}, nil},
		{"empty utility model uses the main cascade", "", nil,
			[]string{"anth/claude-sonnet-4-5"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{fail: func(label, m string, _ int) error {
				if tt.failing[label+"/"+m] {
					return statusErr(400) // even an ordinary 4xx moves the lane on
				}
				return nil
			}}
			c, err := New(Options{Endpoints: utilityChain(f), UtilityModel: tt.utility, Backoff: func(int) time.Duration { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			_, err = c.Utility(context.Background(), model.Request{ReasoningEffort: "high"}, model.Stream{
				OnRetry: func(r model.Retry) { reasons = append(reasons, r.Reason) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !equal(f.got(), tt.attempts) || !equal(reasons, tt.reasons) {
				t.Errorf("attempts %q reasons %q, want %q %q", f.got(), reasons, tt.attempts, tt.reasons)
			}
			for _, r := range f.reqs {
				if r.ReasoningEffort != "" {
					t.Errorf("utility call to %s carried reasoning effort %q", r.Model, r.ReasoningEffort)
				}
			}
		})
	}
}

func TestUtilityNoSecondAnswerAfterText(t *testing.T) {
	calls := 0
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		calls++
		s.OnText("partial")
		return model.Response{}, statusErr(500)
	})
	c, _ := New(Options{Endpoints: []Endpoint{{Label: "or", Kind: KindOpenRouter, Provider: p, Models: []string{"main"}}}, UtilityModel: "small"})
	_, err := c.Utility(context.Background(), model.Request{}, model.Stream{})
	if !errors.Is(err, ErrAfterText) || calls != 1 {
		t.Fatalf("err %v after %d calls; want ErrAfterText after 1", err, calls)
	}
}

func TestKindForAndDescribe(t *testing.T) {
	for _, tt := range []struct {
		api, url string
		broker   bool
		want     string
	}{
		{"anthropic", "https://api.anthropic.com/v1", false, KindAnthropic},
		{"responses", "https://api.openai.com/v1", false, KindOpenAI},
		{"responses", "https://chatgpt.com/backend-api/codex", true, KindCodex},
		{"chat", "https://openrouter.ai/api/v1", false, KindOpenRouter},
		{"", "http://127.0.0.1:8000/v1", false, KindChat},
	} {
		if got := KindFor(tt.api, tt.url, tt.broker); got != tt.want {
			t.Errorf("KindFor(%s, %s, %v) = %s, want %s", tt.api, tt.url, tt.broker, got, tt.want)
		}
	}
	f := &fakes{}
	v := Describe(utilityChain(f), "anthropic/claude-haiku-4.5")
	if v.Provider != KindAnthropic || v.Model != "claude-sonnet-4-5" || !equal(v.Chain, []string{KindAnthropic, KindOpenAI, KindOpenRouter}) ||
		len(v.Steps) != 3 || v.Steps[2].Label != "or" {
		t.Errorf("Describe = %+v", v)
	}
}
