// Package memory is governed local memory: the rules an artifact must pass
// before it is stored (confidence floor, size, kind, scope routing), recall
// at a session's first run (scoring and the untrusted-data block), and the
// reflector that drains the reflection outbox on the utility lane. Rows are
// kept by store through the interfaces declared here.
package memory

import (
	"strings"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/store"
)

// Governance limits.
const (
	MinConfidence        = 0.6 // below it an artifact is refused
	CorrectionConfidence = 0.8 // a human-review correction gets at least this
	MaxContent           = 500 // characters; longer is refused
)

// Kinds an artifact may have.
var Kinds = []string{"fact", "preference", "pitfall", "procedure"}

// Refusal reasons.
const (
	ReasonLowConfidence = "low_confidence"
	ReasonTooLong       = "too_long"
	ReasonBadKind       = "bad_kind"
	ReasonEmpty         = "empty"
	// ReasonWidenUnauthorized is a narrowing, not a refusal: the artifact
	// asked for a wider audience than the run's own, without a trusted
	// review authorizing it, and is stored at the run's own scope.
	ReasonWidenUnauthorized = "widen_unauthorized"
)

// Artifact is one lesson a reflection proposes.
type Artifact struct {
	Kind       string   `json:"kind"`
	Content    string   `json:"content"`
	Confidence float64  `json:"confidence"`
	Scope      string   `json:"scope,omitempty"`   // the audience asked for; never more than the run's own without review
	Aliases    []string `json:"aliases,omitempty"` // extra recall terms
}

// Identity is who produced an artifact.
type Identity struct {
	Namespace string
	AgentID   string
	UserID    string // the run's owner ("" for a userless run)
	TaskType  string
	// Correction: the run is a trusted human-review disposition (the
	// correction rubric).
	Correction bool
	// WidenAuthorized: that review explicitly authorized a wider audience.
	WidenAuthorized bool
}

// Decision is what governance made of an artifact.
type Decision struct {
	Write    *store.MemoryWrite // nil when refused
	Refused  string             // the refusal reason, "" when written
	Narrowed bool               // a wider scope was asked for and not granted
}

// Normalize is the form duplicates are matched on: lowercased, with runs of
// whitespace collapsed to one space.
func Normalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// OwnScope is the audience a run's lessons belong to without review: the
// user's private memory when the run is tied to a user, else the declared
// task type's shared memory, else the agent's.
func OwnScope(id Identity) string {
	switch {
	case id.UserID != "":
		return store.MemoryScopeUser
	case id.TaskType != "":
		return store.MemoryScopeTaskType
	}
	return store.MemoryScopeAgent
}

// Govern applies the rules to a: refused below the confidence floor, past
// the size cap, with an unknown kind or no content; otherwise written at the
// run's own scope, or at the scope a asks for only when a trusted review
// authorized widening. A model alone can never widen.
func Govern(a Artifact, id Identity, runID string) Decision {
	content := strings.TrimSpace(a.Content)
	kind := strings.ToLower(strings.TrimSpace(a.Kind))
	switch {
	case content == "":
		return Decision{Refused: ReasonEmpty}
	case !validKind(kind):
		return Decision{Refused: ReasonBadKind}
	case utf8.RuneCountInString(content) > MaxContent:
		return Decision{Refused: ReasonTooLong}
	}
	conf := a.Confidence
	if id.Correction && conf < CorrectionConfidence {
		conf = CorrectionConfidence
	}
	if conf < MinConfidence {
		return Decision{Refused: ReasonLowConfidence}
	}
	if conf > 1 {
		conf = 1
	}
	scope := OwnScope(id)
	asked := strings.ToLower(strings.TrimSpace(a.Scope))
	narrowed := false
	if asked != "" && asked != scope {
		if id.Correction && id.WidenAuthorized && validScope(asked, id) {
			scope = asked
		} else {
			narrowed = true
		}
	}
	key := store.MemoryKey{Namespace: id.Namespace, AgentID: id.AgentID, Scope: scope, TaskType: id.TaskType}
	if scope == store.MemoryScopeUser {
		key.UserID = id.UserID
	}
	rubric := store.RubricTask
	if id.Correction {
		rubric = store.RubricCorrection
	}
	var aliases []string
	for _, al := range a.Aliases {
		if al = Normalize(al); al != "" {
			aliases = append(aliases, al)
		}
	}
	return Decision{Narrowed: narrowed, Write: &store.MemoryWrite{
		Key: key, Kind: kind, Content: content, Norm: Normalize(content), Aliases: clipAliases(strings.Join(aliases, " ")),
		Confidence: conf, Rubric: rubric, RunID: runID,
	}}
}

func clipAliases(s string) string {
	if utf8.RuneCountInString(s) <= 200 {
		return s
	}
	return string([]rune(s)[:200])
}

func validKind(k string) bool {
	for _, v := range Kinds {
		if k == v {
			return true
		}
	}
	return false
}

func validScope(scope string, id Identity) bool {
	switch scope {
	case store.MemoryScopeAgent, store.MemoryScopeOrg:
		return true
	case store.MemoryScopeTaskType:
		return id.TaskType != ""
	}
	return false
}
