package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// Promotion defaults.
const (
	DefaultPromoteMinRuns = 2 // distinct runs the same normalized lesson must come from
	PromoteAttempts       = 5 // attempts before a promotion is given up
	// MetaIdempotencyKey is the _meta key every promotion call carries, so
	// a product that honours it can drop the duplicate a crash after its
	// answer (and before Delta recorded it) would otherwise cause.
	MetaIdempotencyKey = "delta/idempotency_key"
)

// Recurs reports whether a memory row, as a reflection's write left it,
// qualifies for promotion: the write added a distinct producing run, the
// row is not a user's private memory, not held for coming only from runs
// that read untrusted tool output, and either it now comes from minRuns
// distinct runs or the write is a trusted human-review correction.
func Recurs(m store.Memory, rubric string, newRun bool, minRuns int) bool {
	if !newRun || m.Scope == store.MemoryScopeUser || m.Held() {
		return false
	}
	return m.Runs >= max(minRuns, 1) || rubric == store.RubricCorrection
}

// PromotionKey is the idempotency key of a lesson's promotion: one per
// normalized content, full identity, kind and bound adapter.
func PromotionKey(w store.MemoryWrite, kind, target, adapter string) string {
	k := w.Key
	h := sha256.Sum256([]byte(strings.Join([]string{k.Namespace, k.AgentID, k.Scope, k.UserID, k.TaskType, kind, w.Norm, target, adapter}, "\x00")))
	return "prm_" + hex.EncodeToString(h[:16])
}

// BindCurated picks the curated write tool among the connected tools'
// names: the one whose full name ends with suffix. None, or more than one
// (a suffix two servers share), binds nothing and says why, so a lesson is
// never proposed to the wrong server.
func BindCurated(names []string, suffix string) (name, warning string) {
	if strings.TrimSpace(suffix) == "" {
		return "", "promotion of facts, preferences and pitfalls is off: vocab writeVerbSuffix is empty"
	}
	var found []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return "", fmt.Sprintf("promotion of facts, preferences and pitfalls is off: no connected tool ends with writeVerbSuffix %q", suffix)
	}
	return "", fmt.Sprintf("promotion of facts, preferences and pitfalls is off: writeVerbSuffix %q matches %d tools (%s); "+
		"make it specific to one server, e.g. %q", suffix, len(found), strings.Join(found, ", "), found[0])
}

// Curated calls the curated write tool with args, carrying key as the
// call's idempotency key; an error result is an error.
type Curated func(ctx context.Context, tool string, args map[string]any, key string) (string, error)

// Procedure is a procedure proposed to the capability store.
type Procedure struct {
	Name          string
	Body          string
	Description   string
	ChangeSummary string
	Key           string // the idempotency key
}

// Capability is the capability store procedures are promoted to (the skill
// registry).
type Capability interface {
	// Family names the bound tool family, part of a promotion's key.
	Family() string
	ProposeProcedure(ctx context.Context, p Procedure) (string, error)
}

// PromotionStore is what the promoter needs of the store.
type PromotionStore interface {
	PromotionsDue(ctx context.Context) ([]store.Promotion, error)
	ClaimPromotion(ctx context.Context, id int64, at time.Time) (store.Promotion, error)
	FinishPromotion(ctx context.Context, o store.PromotionOutcome) (event.Event, error)
}

// PromoterOptions wires a Promoter.
type PromoterOptions struct {
	Store PromotionStore
	// CuratedTool is the bound curated tool ("" = facts, preferences and
	// pitfalls are not promoted); Call sends to it.
	CuratedTool string
	Call        Curated
	// Capability receives procedures (nil = not promoted).
	Capability Capability
	MinRuns    int // default DefaultPromoteMinRuns
	// Shape is vocab writeShape (nil = the built-in envelope); RunRefKey
	// and TargetKind are vocab runRefKey and learningTargetKind.
	Shape       []byte
	RunRefKey   string
	TargetKind  string
	MaxAttempts int // default PromoteAttempts
	Publish     func(event.Event)
	Logger      *slog.Logger
	Now         func() time.Time
}

// Promoter drains the promotion outbox: at start (rows a crash or a
// shutdown left) and whenever a reflection completed. There is no retry
// timer: a failed attempt waits for the next successful reflection, the
// next binding change (Bind) or the next start.
type Promoter struct {
	o    PromoterOptions
	loop wakeLoop
	mu   sync.Mutex // one drain at a time

	// bmu guards the adapters (CuratedTool and Capability at first,
	// changed by Bind when tools connect after boot) and stale, never held
	// across a call, so Bind never waits for a drain.
	bmu        sync.RWMutex
	stale      map[int64]bool // rows for an adapter that is not bound now, warned once
	curated    string
	capability Capability
}

// NewPromoter fills defaults; Run starts its loop.
func NewPromoter(o PromoterOptions) *Promoter {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinRuns <= 0 {
		o.MinRuns = DefaultPromoteMinRuns
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = PromoteAttempts
	}
	if o.RunRefKey == "" {
		o.RunRefKey = "run_ref"
	}
	if o.TargetKind == "" {
		o.TargetKind = "note"
	}
	return &Promoter{o: o, loop: newWakeLoop(), stale: map[int64]bool{},
		curated: o.CuratedTool, capability: o.Capability}
}

// Bind replaces the adapters (curated "" or capability nil: not bound), as
// when an MCP server connects after boot, and asks the loop to drain: rows
// staged for an adapter that is bound now are sent, rows for one that is
// not stay stranded.
func (p *Promoter) Bind(curated string, capability Capability) {
	p.bmu.Lock()
	p.curated, p.capability = curated, capability
	clear(p.stale) // a row stranded again is warned about again
	p.bmu.Unlock()
	p.Notify()
}

func (p *Promoter) adapters() (string, Capability) {
	p.bmu.RLock()
	defer p.bmu.RUnlock()
	return p.curated, p.capability
}

// Bound reports whether any adapter is bound.
func (p *Promoter) Bound() bool {
	curated, capability := p.adapters()
	return curated != "" || capability != nil
}

func (p *Promoter) target(kind string) (target, adapter string) {
	curated, capability := p.adapters()
	if kind == "procedure" {
		if capability == nil {
			return store.PromotionCapability, ""
		}
		return store.PromotionCapability, capability.Family()
	}
	return store.PromotionCurated, curated
}

// Stage is the reflector's promotion decision: a stage for a lesson that
// recurs (Recurs) and whose adapter is bound, nil otherwise.
func (p *Promoter) Stage(w store.MemoryWrite, put store.MemoryPut) *store.PromotionStage {
	m := put.Memory
	if !Recurs(m, w.Rubric, put.NewRun, p.o.MinRuns) {
		return nil
	}
	target, adapter := p.target(m.Kind)
	if adapter == "" {
		return nil
	}
	return &store.PromotionStage{Key: PromotionKey(w, m.Kind, target, adapter), Target: target, Adapter: adapter}
}

// Notify asks the loop to drain; it never blocks.
func (p *Promoter) Notify() { p.loop.notify() }

// Run drains once, then on every Notify, until ctx ends.
func (p *Promoter) Run(ctx context.Context) { p.loop.run(ctx, p.Drain, p.o.Logger, "promotion drain") }

// Drain attempts every due promotion whose adapter is still bound.
func (p *Promoter) Drain(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	due, err := p.o.Store.PromotionsDue(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, row := range due {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, adapter := p.target(row.Kind); adapter != row.Adapter {
			p.bmu.Lock()
			warned := p.stale[row.ID]
			p.stale[row.ID] = true
			p.bmu.Unlock()
			if !warned {
				p.o.Logger.Warn("promotion stranded: its adapter is not bound now; restore the binding or migrate the outbox",
					"promotion", row.ID, "adapter", row.Adapter, "bound", adapter)
			}
			continue
		}
		if err := p.attempt(ctx, row); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Promoter) attempt(ctx context.Context, row store.Promotion) error {
	row, err := p.o.Store.ClaimPromotion(ctx, row.ID, p.o.Now())
	if errors.Is(err, store.ErrNotDue) {
		return nil
	}
	if err != nil {
		return err
	}
	result, err := p.send(ctx, row)
	crashpoint.Hit(crashpoint.PromotionAfterCall)
	if ctx.Err() != nil {
		// Shutting down: the row stays claimed, due again at the next
		// start, with this attempt counted.
		return ctx.Err()
	}
	out := store.PromotionOutcome{ID: row.ID, Result: clip.Runes(result, 2000), MaxAttempts: p.o.MaxAttempts, At: p.o.Now()}
	if err != nil {
		out.Err = clip.Runes(err.Error(), 500)
	}
	e, ferr := p.o.Store.FinishPromotion(context.WithoutCancel(ctx), out)
	if errors.Is(ferr, store.ErrNotDue) {
		return nil
	}
	if ferr != nil {
		return ferr
	}
	if p.o.Publish != nil {
		p.o.Publish(e)
	}
	if err != nil {
		p.o.Logger.Warn("promotion attempt failed", "promotion", row.ID, "attempts", row.Attempts, "err", err)
	}
	return nil
}

func (p *Promoter) send(ctx context.Context, row store.Promotion) (string, error) {
	curated, capability := p.adapters()
	if row.Target == store.PromotionCapability {
		if capability == nil || capability.Family() != row.Adapter {
			return "", fmt.Errorf("the skill registry %s is no longer bound", row.Adapter)
		}
		return capability.ProposeProcedure(ctx, ProcedureOf(row))
	}
	if curated == "" || curated != row.Adapter {
		return "", fmt.Errorf("the curated tool %s is no longer bound", row.Adapter)
	}
	args, err := p.Arguments(row)
	if err != nil {
		return "", err
	}
	return p.o.Call(ctx, curated, args, row.Key)
}

// Values are the placeholders a writeShape can use for row.
func (p *Promoter) Values(row store.Promotion) map[string]any {
	return map[string]any{
		"summary":         Summary(row),
		"brief":           Brief(row),
		"details":         Brief(row),
		"run_ref_key":     p.o.RunRefKey,
		"run_id":          row.RunID,
		"target_kind":     p.o.TargetKind,
		"kind":            row.Kind,
		"content":         row.Content,
		"confidence":      row.Confidence,
		"runs":            row.Runs,
		"scope":           row.Scope,
		"task_type":       nonEmpty(row.TaskType),
		"rubric":          row.Rubric,
		"namespace":       row.Namespace,
		"agent_id":        nonEmpty(row.AgentID),
		"idempotency_key": row.Key,
	}
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Arguments are the curated tool's arguments for row: writeShape rendered
// with Values, or the built-in envelope.
func (p *Promoter) Arguments(row store.Promotion) (map[string]any, error) {
	if len(p.o.Shape) > 0 {
		return RenderShape(p.o.Shape, p.Values(row))
	}
	return map[string]any{
		"summary":     Summary(row),
		"details":     Brief(row),
		p.o.RunRefKey: row.RunID,
		"items":       []any{map[string]any{"kind": p.o.TargetKind, "content": row.Content, "confidence": row.Confidence}},
	}, nil
}

// Summary is a promotion's one-line summary.
func Summary(row store.Promotion) string {
	return fmt.Sprintf("Reflection (%s) from run %s", row.Kind, row.RunID)
}

// Brief says where a promoted lesson came from.
func Brief(row store.Promotion) string {
	kind := "Post-task"
	if row.Rubric == store.RubricCorrection {
		kind = "Post-review"
	}
	b := fmt.Sprintf("%s reflection: a %s learned in %d distinct run(s)", kind, row.Kind, row.Runs)
	if row.TaskType != "" {
		b += " of task type " + row.TaskType
	}
	return b + ", confidence " + text(row.Confidence) + "."
}

// ProcedureOf is the procedure proposal for a capability row: named after
// the task type (else the lesson's first words), the lesson as its body.
func ProcedureOf(row store.Promotion) Procedure {
	name := slug(row.TaskType)
	if name == "" {
		name = slug(strings.Join(strings.Fields(row.Content)[:min(6, len(strings.Fields(row.Content)))], " "))
	}
	if name == "" {
		name = "learned-procedure"
	}
	desc := "Procedure learned by reflection"
	if row.TaskType != "" {
		desc += " for " + row.TaskType + " tasks"
	}
	return Procedure{Name: name, Body: row.Content, Description: clip.Runes(desc, 200),
		ChangeSummary: Summary(row) + ": " + Brief(row), Key: row.Key}
}

// slug is s lowercased with runs of anything but letters and digits as one
// "-", at most 64 characters.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return clip.Runes(b.String(), 64)
}
