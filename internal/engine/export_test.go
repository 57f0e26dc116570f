package engine

import "github.com/deltaharness/delta/internal/model"

// EstimateTokens exposes the pre-send estimate at the default dial to the
// black-box tests.
func EstimateTokens(req model.Request) int { return estimateTokens(req, DefaultCompactAt) }

// EstimateTokensAt is the pre-send estimate at a dial of compactAt tokens.
var EstimateTokensAt = estimateTokens

// IsSummaryCall tells a compaction's summary call from a main-loop call.
func IsSummaryCall(system []string) bool { return len(system) == 1 && system[0] == summarizeSystem }
