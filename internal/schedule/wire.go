package schedule

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The control plane's REST surface, which `delta scheduler` serves and the
// schedule tools call (any other control plane can implement it):
//
//	POST   /v1/schedules       body Create           → 201 Schedule
//	GET    /v1/schedules                              → 200 List (the caller's)
//	GET    /v1/schedules/{id}                         → 200 Schedule, or 404
//	DELETE /v1/schedules/{id}                         → 200 Schedule (status cancelled), or 404
//
// Every request carries Authorization: Bearer <token>; HeaderUser and
// HeaderAgent scope it: a schedule is only listed, read or cancelled by the
// owner and agent that created it (another owner's schedule is a 404). A
// refusal is 4xx with {"error":{"message":…}}.
const (
	Path        = "/v1/schedules"
	HeaderUser  = "X-Delta-User"  // the run's owner; empty = the unowned principal
	HeaderAgent = "X-Delta-Agent" // the agent (DELTA_AGENT_ID); empty = unnamed
)

// Statuses a schedule has.
const (
	StatusActive    = "active"    // will fire again
	StatusDone      = "done"      // a one-time schedule that has fired
	StatusCancelled = "cancelled" // cancelled before it finished
)

// Create is the body of POST /v1/schedules.
type Create struct {
	Spec
	// Input is the task the control plane delivers at each firing: the
	// prompt of the run it starts.
	Input string `json:"input"`
	// PreviousResponseID routes each firing into the session that asked:
	// the task continues from this run. Empty starts a new session every
	// time.
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// SessionID is the session that asked, for the listing.
	SessionID string `json:"session_id,omitempty"`
}

// CheckInput refuses an empty, oversized or non-UTF-8 task input.
func (c Create) CheckInput() error {
	switch {
	case strings.TrimSpace(c.Input) == "":
		return &Problem{Field: "input", Reason: "input is empty", Hint: "send the task to deliver at each firing, written as the instruction the agent will receive"}
	case len(c.Input) > MaxInputBytes:
		return &Problem{Field: "input", Reason: fmt.Sprintf("input is %d bytes, more than %d", len(c.Input), MaxInputBytes), Hint: "shorten it; keep long instructions in a workspace file and name the file"}
	case !utf8.ValidString(c.Input):
		return &Problem{Field: "input", Reason: "input is not valid UTF-8", Hint: "send plain text"}
	}
	return nil
}

// Schedule is one schedule as the control plane reports it.
type Schedule struct {
	ID     string `json:"id"`
	Object string `json:"object"` // "schedule"
	Spec
	Input              string     `json:"input"`
	PreviousResponseID string     `json:"previous_response_id,omitempty"`
	SessionID          string     `json:"session_id,omitempty"`
	Owner              string     `json:"owner"`
	Agent              string     `json:"agent"`
	Status             string     `json:"status"`
	NextFireAt         *time.Time `json:"next_fire_at,omitempty"`
	LastFireAt         *time.Time `json:"last_fire_at,omitempty"`
	Firings            int        `json:"firings"`
	CreatedAt          time.Time  `json:"created_at"`
}

// List is the body of GET /v1/schedules.
type List struct {
	Object string     `json:"object"` // "list"
	Data   []Schedule `json:"data"`
}

// ErrorBody is every refusal's body.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// FireKey is the idempotency key of one firing: the schedule and the slot
// it fires for, so a re-sent firing names the task it already started.
func FireKey(id string, slot time.Time) string {
	return "sched-" + id + "-" + slot.UTC().Format("20060102T150405Z")
}
