package engine

// EstimateTokens exposes the pre-send estimate to the black-box tests.
var EstimateTokens = estimateTokens

// IsSummaryCall tells a compaction's summary call from a main-loop call.
func IsSummaryCall(system []string) bool { return len(system) == 1 && system[0] == summarizeSystem }
