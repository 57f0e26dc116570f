package cascade

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/model"
)

// Utility runs a compaction, reflection or judging call. The
// utility model is tried once on each compatible endpoint, in cascade order;
// any failure there falls back to the main cascade. Reasoning effort is never
// applied to utility calls, on the lane or on the fallback. With no utility
// model configured the call goes straight to the main cascade.
func (c *Cascade) Utility(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
	req.ReasoningEffort = ""
	var plan []step
	if m := c.o.UtilityModel; m != "" {
		for _, i := range c.order() {
			if name, ok := UtilityModelFor(c.o.Endpoints[i].Kind, m); ok {
				plan = append(plan, step{ep: i, model: name})
			}
		}
	}
	if len(plan) > 0 {
		// One attempt per endpoint: the fallback is the main cascade, which
		// has its own retries.
		resp, _, err := c.run(ctx, req, s, plan, lane{attempts: 1, tryEvery: true})
		if err == nil || ctx.Err() != nil {
			return resp, err
		}
		if errors.Is(err, ErrAfterText) {
			return resp, err // never a second answer after the first began
		}
		c.o.Logger.Warn("utility model failed; falling back to the main cascade", "model", c.o.UtilityModel, "err", err)
		if s.OnRetry != nil {
			first := c.o.Endpoints[c.order()[0]]
			last := plan[len(plan)-1]
			s.OnRetry(model.Retry{
				Reason: ReasonSwitch, Provider: c.o.Endpoints[last.ep].Label, Model: last.model,
				NextProvider: first.Label, NextModel: first.Models[0], Attempt: 1, Error: clip.Runes(err.Error(), 300),
			})
		}
	}
	return c.Complete(ctx, req, s)
}

// dottedVersion matches a dot between two digits ("4.5" in claude-haiku-4.5).
var dottedVersion = regexp.MustCompile(`(\d)\.(\d)`)

// UtilityModelFor is the model name the utility model takes on an endpoint
// of kind, and whether that endpoint can serve it at all:
//
//   - native Anthropic serves only Claude models, by their native id: the
//     "anthropic/" vendor prefix goes and dotted versions become dashes
//     (anthropic/claude-haiku-4.5 → claude-haiku-4-5);
//   - Responses endpoints (openai-native, codex-sign-in) never serve a
//     Claude model; other models lose an "openai/" vendor prefix;
//   - Chat Completions endpoints (OpenRouter, gateways) take the id as is.
func UtilityModelFor(kind, name string) (string, bool) {
	claude := strings.Contains(strings.ToLower(name), "claude")
	switch kind {
	case KindAnthropic:
		if !claude {
			return "", false
		}
		name = strings.TrimPrefix(name, "anthropic/")
		for dottedVersion.MatchString(name) { // overlapping runs like 4.5.1
			name = dottedVersion.ReplaceAllString(name, "$1-$2")
		}
		return name, true
	case KindOpenAI, KindCodex:
		if claude {
			return "", false
		}
		return strings.TrimPrefix(name, "openai/"), true
	}
	return name, true
}
