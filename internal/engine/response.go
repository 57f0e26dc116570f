package engine

import (
	"encoding/json"
	"strings"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// Status markers that start the output of a run that did not complete, so a
// failed or cancelled answer never passes for a successful one.
const (
	MarkerFailed    = "[delta:failed]"
	MarkerCancelled = "[delta:cancelled]"
)

// Request is an accepted request as the queue stores it.
type Request struct {
	Input           []model.Message `json:"input"` // user-role messages for this run
	Instructions    string          `json:"instructions,omitempty"`
	Context         map[string]any  `json:"context,omitempty"` // metadata.context
	Profile         string          `json:"profile"`           // effective tier after placement
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	Store           bool            `json:"store"`
	Metadata        json.RawMessage `json:"metadata,omitempty"` // as sent, for the record
	// PerRunAuth records that the request carried metadata.authToken. The
	// value is never stored; after a restart the run knows it lost it.
	PerRunAuth bool `json:"per_run_auth,omitempty"`
}

// Response is the Responses-API-shaped result of a run.
type Response struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"`
	CreatedAt          int64          `json:"created_at"`
	Model              string         `json:"model"`
	Status             string         `json:"status"` // in_progress, completed, failed, cancelled
	OutputText         string         `json:"output_text"`
	Output             []OutputItem   `json:"output"`
	PreviousResponseID *string        `json:"previous_response_id"`
	Usage              ResponseUsage  `json:"usage"`
	Error              *ResponseError `json:"error"`
	Metadata           map[string]any `json:"metadata"`
}

// OutputItem is one output message.
type OutputItem struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Role    string          `json:"role"`
	Content []OutputContent `json:"content"`
}

// OutputContent is one part of an output message.
type OutputContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// ResponseUsage is usage in the Responses shape plus Delta's cost.
type ResponseUsage struct {
	InputTokens         int64            `json:"input_tokens"`
	OutputTokens        int64            `json:"output_tokens"`
	TotalTokens         int64            `json:"total_tokens"`
	CostUSD             float64          `json:"cost_usd"`
	InputTokensDetails  map[string]int64 `json:"input_tokens_details"`
	OutputTokensDetails map[string]int64 `json:"output_tokens_details"`
}

// ResponseError says why a run did not complete.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResponseStatus maps a run status to the Responses status.
func ResponseStatus(runStatus string) string {
	switch runStatus {
	case store.StatusDone:
		return "completed"
	case store.StatusFailed:
		return "failed"
	case store.StatusCancelled:
		return "cancelled"
	default:
		return "in_progress"
	}
}

// BuildResponse renders a run and its final text as a Responses object.
func BuildResponse(r store.Run, status, text, errText string) Response {
	resp := Response{
		ID:         r.ID,
		Object:     "response",
		CreatedAt:  r.CreatedAt.Unix(),
		Model:      r.Model,
		Status:     ResponseStatus(status),
		OutputText: text,
		Output: []OutputItem{{
			Type: "message", ID: "msg_" + strings.TrimPrefix(r.ID, "resp_"), Status: "completed", Role: "assistant",
			Content: []OutputContent{{Type: "output_text", Text: text, Annotations: []any{}}},
		}},
		Usage: ResponseUsage{
			InputTokens:         r.Usage.InputTokens,
			OutputTokens:        r.Usage.OutputTokens,
			TotalTokens:         r.Usage.InputTokens + r.Usage.OutputTokens,
			CostUSD:             r.Usage.CostUSD,
			InputTokensDetails:  map[string]int64{"cached_tokens": r.Usage.CacheReadTokens},
			OutputTokensDetails: map[string]int64{"reasoning_tokens": 0},
		},
		Metadata: requestMetadata(r.Request),
	}
	if r.PreviousID != "" {
		p := r.PreviousID
		resp.PreviousResponseID = &p
	}
	// Only a run that ended without completing has an error; one still
	// queued or running has none yet (null, as the Responses API sends it).
	switch status {
	case store.StatusFailed:
		resp.Error = &ResponseError{Code: "run_failed", Message: errText}
	case store.StatusCancelled:
		resp.Error = &ResponseError{Code: "run_cancelled", Message: errText}
	}
	return resp
}

// StartedResponse is the Responses object of a run just accepted, as a
// stream's response.created frame carries it: in_progress, no output and
// no error yet. Model is the model the run has used, else the configured
// primary, the one its first turn calls.
func (s *Service) StartedResponse(run store.Run) Response {
	if run.Model == "" && len(s.engine.o.Models) > 0 {
		run.Model = s.engine.o.Models[0]
	}
	resp := BuildResponse(run, "", "", "")
	resp.Status = "in_progress"
	resp.Output = []OutputItem{}
	return resp
}

// requestMetadata is the metadata the run kept from its request, echoed as
// the Responses API does (the API has already removed what must not be
// kept). It is an empty object when there is none.
func requestMetadata(request json.RawMessage) map[string]any {
	var req struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	out := map[string]any{}
	if json.Unmarshal(request, &req) != nil {
		return out
	}
	for k, v := range req.Metadata {
		out[k] = v
	}
	return out
}
