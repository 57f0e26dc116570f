// Package engine runs Delta's model loop: for one run it assembles the prompt
// spine, calls the model, runs every tool call of the turn concurrently,
// checkpoints each step, and repeats until a final answer, a cancel, an
// exhausted budget or a failure — then writes exactly one terminal result.
//
// Durability contract (with package store): an assistant message and all its
// tool intents commit together; each tool result and its conversation message
// commit together — a call with effects as soon as it ends, a read-only call
// (which a crash only makes run again) with the next write of its run,
// normally the next checkpoint, as turn.started is (held.go); the terminal
// status and the run.finished event commit together. On a resumed run a call
// whose result is journalled is never re-run, an interrupted read-only call
// runs again, and an interrupted mutating call gets an [interrupted] result
// telling the model to verify.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// Prompt is what the engine needs from the bundle.
type Prompt interface {
	ReadSelf() string
	System(self string, tools []model.ToolSpec) []string
	Turn(modelName string, now time.Time, reqContext map[string]any) string
}

// Spiller keeps oversized tool results on disk (the workspace).
type Spiller interface {
	Spill(runID, callID, text string, max int) (string, error)
}

// Tools looks tools up by name.
type Tools interface {
	Get(name string) (tool.Tool, bool)
}

// Budget is a run's ceiling on steps, fresh tokens and dollars.
type Budget struct {
	Steps   int
	Tokens  int64
	CostUSD float64
}

// Options wires an Engine.
type Options struct {
	Store     *store.Store
	Broker    *event.Broker
	Provider  model.Provider
	Models    []string // the configured primary first; shown as {{model}} on turn 1
	Prompt    Prompt
	Tools     Tools
	Spill     Spiller
	ToolNames func(profile string) []string // tools a tier may use, in index order
	// Resident returns the tools offered to a run this turn, a subset of
	// ToolNames(profile) (progressive tool loading). It is asked at the start
	// of every turn, so activations made by a tool — and restored after a
	// restart — take effect on the next turn (nil = ToolNames(profile)).
	Resident func(ctx context.Context, runID, profile string) []string
	Budget   func(profile string) Budget
	Prices   map[string]model.Price

	// ReasoningEffort is the effort asked of the model when the request
	// names none (DELTA_REASONING_EFFORT; "" = the provider's default).
	ReasoningEffort string

	ToolTimeout  time.Duration // 0 = none
	ResultMax    int           // inline tool result cap in characters
	Attempts     int           // wire attempts per model (default 3)
	RetryBackoff time.Duration // first retry wait (default 250ms, doubling)
	Logger       *slog.Logger
	Now          func() time.Time
	WorkspaceDir string // where the handoff looks for this run's spill files
	// Redact scrubs known secret values from tool results before they are
	// stored, spilled, streamed or shown to the model (nil = none).
	Redact func(string) string
	// CallContext attaches a run's per-request credential (metadata.authToken)
	// to the context of its tool calls (nil = ignored).
	CallContext func(ctx context.Context, runToken string) context.Context
	// TurnBlocks returns extra per-turn user-role blocks for a session (the
	// todo plan), rebuilt every turn so they survive compaction (nil = none).
	TurnBlocks func(ctx context.Context, sessionID string) []string
	// AttemptBlocks returns user-role blocks computed once per execution
	// attempt from the run's task text (the local skills directory, recalled
	// memory, task-start hydration); they ride on every turn of that attempt
	// after the request instructions, and are never stored, so a resumed
	// attempt computes them again (nil = none). Its ctx carries the run's
	// credential through CallContext, as the run's tool calls do.
	AttemptBlocks func(ctx context.Context, runID, sessionID, task string) []string
	// Attach returns msgs with verified images attached for a vision model
	// (DELTA_VISION_MODELS); it is applied to each call's copy of the
	// conversation only, so images never reach the database (nil = none).
	Attach func(ctx context.Context, modelName string, msgs []model.Message) []model.Message
	// ToolArgMax bounds the stored arguments of a successful tool call on
	// its assistant message (DELTA_TOOL_ARG_MAX_BYTES); the journal keeps
	// them whole (0 = off).
	ToolArgMax int
	// CaptureCalls stores each successfully served main-loop call, as the
	// engine assembled it, with the checkpoint of its step
	// (DELTA_CAPTURE_CALLS). Off, a step builds nothing for it.
	CaptureCalls bool
	// CompactAt is the context dial in tokens (DELTA_COMPACT_AT_TOKENS): a
	// request estimated past it, or a previous call whose real prompt
	// crossed it, compacts the session's older history first
	// (0 = DefaultCompactAt).
	CompactAt int
	// Utility makes a compaction's summary call (nil = the provider's
	// utility lane when it has one, else the provider).
	Utility func(ctx context.Context, req model.Request) (model.Response, error)
	// Reflect reports whether a run that completed successfully owes a
	// reflection: its terminal write then also writes the reflection outbox
	// row, and Reflected is called once the response is released (nil =
	// never).
	Reflect   func(run store.Run) bool
	Reflected func(runID string)
	// Leases is asked before each turn of a run, and binds the run's
	// writes to its session's lease (Guard), when workers share the
	// database (nil = this process is the only writer).
	Leases SessionLeases
	// CommitAheadAfter is how long a model call must have taken for its
	// step of read-only calls to commit in the background (ahead.go):
	// against a provider that answers in microseconds the hand-off costs
	// more than it hides (0 = 100µs, negative = never commit ahead).
	CommitAheadAfter time.Duration
}

// Engine executes runs.
type Engine struct {
	o Options
	// tokens holds per-run credentials in memory only: they are never
	// written to the database, so a run resumed after a restart has none.
	tokens   sync.Map // run id → string
	unpriced sync.Map // model id → warned
}

// TokenLost is what CallContext receives for a run that was submitted with
// a per-request credential the process no longer holds (it restarted): the
// tool side must refuse credentialed calls rather than fall back.
const TokenLost = "\x00delta:token-lost"

// SetRunToken remembers a run's per-request credential for its tool calls.
func (e *Engine) SetRunToken(runID, token string) {
	if token != "" {
		e.tokens.Store(runID, token)
	}
}

// New fills defaults.
func New(o Options) *Engine {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ResultMax <= 0 {
		o.ResultMax = 20000
	}
	if o.Broker == nil {
		o.Broker = event.NewBroker()
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.CommitAheadAfter == 0 {
		o.CommitAheadAfter = 100 * time.Microsecond
	}
	return &Engine{o: o}
}

// Openings of the per-turn user-role blocks; a block always starts with
// one, so tools (and scripted test providers) can tell them from the user's
// own words.
const (
	TurnBlockPrefix         = "<delta:turn>"
	InstructionsBlockPrefix = "<delta:instructions>"
)

// errCancelled ends a run as cancelled.
var errCancelled = errors.New("cancelled")

// budgetError ends a run as failed with a handoff.
type budgetError struct {
	diag    string
	run     store.Run
	budget  Budget
	reached []string
}

// data is the budget.exhausted event's data: counters, ceilings and which
// ceilings were reached.
func (e *budgetError) data() map[string]any {
	return map[string]any{
		event.KeySteps: e.run.Steps, event.KeyMaxSteps: e.budget.Steps,
		event.KeyTokens: e.run.Usage.Fresh(), event.KeyMaxTokens: e.budget.Tokens,
		event.KeyCostUSD: e.run.Usage.CostUSD, event.KeyMaxCostUSD: e.budget.CostUSD,
		event.KeyOver: e.reached,
	}
}

func (e *budgetError) Error() string { return "budget exhausted: " + e.diag }

// Execute runs (or resumes) one run to a terminal state. It never panics and
// always leaves the run terminal unless the process dies or ctx is cancelled
// by shutdown (then the run stays running and resumes on the next start).
// cancel reports whether a ctx cancellation is a user cancel (true) or a
// shutdown (false).
func (e *Engine) Execute(ctx context.Context, runID string, userCancel func() bool) {
	e.ExecuteHead(ctx, store.RunHead{ID: runID}, userCancel)
}

// ExecuteHead is Execute for a run the dispatcher has read: when head
// carries the run's session and request (a claim's), the run is not read
// again before its start, whose transaction locks and returns it current.
func (e *Engine) ExecuteHead(ctx context.Context, head store.RunHead, userCancel func() bool) {
	runID := head.ID
	logger := e.o.Logger.With(event.KeyRun, runID)
	var x *execution
	defer func() {
		if p := recover(); p != nil {
			logger.Error("run panicked", "panic", p, "stack", string(debug.Stack()))
			e.fail(context.WithoutCancel(ctx), x, runID, "", failure{kind: failInternal, err: fmt.Errorf("internal error: %v", p)})
		}
	}()
	var req Request
	// A run's session and request never change once it is accepted, so
	// a claim's read of them is as good as a fresh one.
	run := store.Run{ID: runID, SessionID: head.SessionID, Request: head.Request}
	var err error
	if run.SessionID == "" || len(run.Request) == 0 {
		run, err = e.o.Store.Run(ctx, runID)
	}
	if err == nil {
		err = json.Unmarshal(run.Request, &req)
	}
	if err != nil {
		if ctx.Err() != nil {
			// A shutdown leaves the run to resume on the next start; a
			// user's cancel ends it here.
			if userCancel() {
				e.finish(context.WithoutCancel(ctx), nil, runID, store.StatusCancelled, "", "cancelled by request")
			}
			return
		}
		logger.Error("load run", "err", err)
		e.fail(context.WithoutCancel(ctx), nil, runID, "", failure{kind: failStore, err: fmt.Errorf("load run: %w", err)})
		return
	}
	// From here on every write of the run verifies its session lease in
	// its own transaction (workers sharing a database).
	ctx = e.guardLease(ctx, run.SessionID)
	if req.PerRunAuth {
		if _, held := e.tokens.Load(runID); !held {
			// Resumed after a restart: the caller's credential is gone.
			e.tokens.Store(runID, TokenLost)
		}
	}
	run, startEv, err := e.o.Store.Start(ctx, runID, req.Input)
	if errors.Is(err, store.ErrAlreadyFinal) {
		return
	}
	if errors.Is(err, store.ErrSessionLeaseLost) {
		logger.Warn("run not started: this worker no longer holds its session; the worker holding it runs it", "err", err)
		return
	}
	if err != nil {
		logger.Error("start run", "err", err)
		if ctx.Err() == nil {
			e.fail(context.WithoutCancel(ctx), nil, runID, "", failure{kind: failStore, err: fmt.Errorf("start run: %w", err)})
		}
		return
	}
	e.o.Broker.Publish(startEv)
	if req.ReasoningEffort == "" {
		req.ReasoningEffort = e.o.ReasoningEffort
	}
	x = &execution{e: e, run: run, req: req, logger: logger, task: run.TaskID(), turn: run.Steps}
	defer x.stopCommitter()
	if run.CancelRequested {
		e.finish(context.WithoutCancel(ctx), x, runID, store.StatusCancelled, "", "cancelled before start")
		return
	}
	text, err := x.loop(ctx)
	switch {
	case leaseLost(err):
		logger.Warn("run stopped: this worker no longer holds its session; the worker holding it resumes the run", "err", err)
	case err == nil:
		// The final reply commits with the terminal write, which outlives
		// a shutdown that lands now, or the answer would be asked for (and
		// billed) again on the next start.
		e.finish(context.WithoutCancel(ctx), x, runID, store.StatusDone, text, "")
	case ctx.Err() != nil && !userCancel():
		// What the attempt held back is still true: write it, so the
		// resumed attempt does not run its read-only calls again.
		if err := x.flush(context.WithoutCancel(ctx)); err != nil {
			logger.Warn("write held results at shutdown", "err", err)
		}
		logger.Info("run interrupted by shutdown; it resumes on next start")
	case errors.Is(err, errCancelled) || ctx.Err() != nil:
		x.settleOpenCalls(context.WithoutCancel(ctx), "[cancelled] the run was cancelled before this call finished; verify any side effect before repeating it")
		e.finish(context.WithoutCancel(ctx), x, runID, store.StatusCancelled, text, "cancelled by request")
	default:
		var be *budgetError
		if errors.As(err, &be) {
			e.fail(context.WithoutCancel(ctx), x, runID, x.handoff(), err)
			return
		}
		logger.Warn("run failed", "err", err)
		e.fail(context.WithoutCancel(ctx), x, runID, "", err)
	}
}

// Kinds of failure, the error.type of a run's error event.
const (
	failBudget   = "budget"
	failModel    = "model"
	failOverflow = "context_overflow"
	failStore    = "store"
	failInternal = "internal"
)

// failure is an error that ends a run, with the kind its error event reports.
type failure struct {
	kind string
	err  error
}

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// fail ends a run as failed with output text (the handoff, or "") and
// records why: an error event, preceded by budget.exhausted when a ceiling
// stopped it, both in the terminal write's transaction.
func (e *Engine) fail(ctx context.Context, x *execution, runID, text string, err error) {
	kind := failInternal
	var f failure
	var be *budgetError
	switch {
	case errors.As(err, &be):
		kind = failBudget
	case errors.As(err, &f):
		kind = f.kind
	}
	var extra []event.Event
	newEvent := func(name string, data any) event.Event {
		if x != nil {
			return x.event(name, data)
		}
		return event.New(runID, "", name, data)
	}
	if be != nil {
		extra = append(extra, newEvent(event.BudgetExhausted, be.data()))
	}
	extra = append(extra, newEvent(event.Error, map[string]any{
		event.KeyErrorType: kind, event.KeyErrorMessage: truncateRunes(e.o.Redact(err.Error()), 500)}))
	e.finishWith(ctx, x, runID, store.StatusFailed, text, err.Error(), extra)
}

// finish writes the terminal state and publishes run.finished.
func (e *Engine) finish(ctx context.Context, x *execution, runID, status, text, errText string) {
	e.finishWith(ctx, x, runID, status, text, errText, nil)
}

// finishWith writes the terminal state with extra events in the same
// transaction, before run.finished, and publishes them all.
func (e *Engine) finishWith(ctx context.Context, x *execution, runID, status, text, errText string, extra []event.Event) {
	var final *store.Step
	if x != nil {
		// Only a run done with its final reply ends with it.
		if status == store.StatusDone {
			final = x.final
		}
		x.final = nil
		// What the attempt held back precedes its end in the log.
		if err := x.flush(ctx); err != nil {
			e.o.Logger.Error("finish: write held results", event.KeyRun, runID, "err", err)
		}
	}
	switch status {
	case store.StatusFailed:
		text = strings.TrimSpace(MarkerFailed + " " + firstNonEmpty(text, errText))
	case store.StatusCancelled:
		text = strings.TrimSpace(MarkerCancelled + " " + firstNonEmpty(text, errText))
	}
	shownText, shownErr := e.o.Redact(text), e.o.Redact(errText)
	// build is the run's Responses-shaped result from its record as the
	// terminal write finds it.
	build := func(run store.Run) json.RawMessage {
		if x != nil && x.lastModel != "" {
			run.Model = x.lastModel
		}
		if run.Model == "" && len(e.o.Models) > 0 {
			run.Model = e.o.Models[0]
		}
		b, _ := json.Marshal(BuildResponse(run, status, shownText, shownErr))
		return b
	}
	var ev event.Event
	var stepEvs []event.Event
	var err error
	var reflect bool
	if final != nil {
		// The run's record is the transaction's to read: no read here.
		fillSession(extra, x.run.SessionID)
		reflect = e.o.Reflect != nil && e.o.Reflect(x.run)
		crashpoint.Hit(crashpoint.BeforeFinish)
		stepEvs, ev, err = e.o.Store.FinishStep(ctx, *final, status, build, errText, reflect, extra...)
	} else {
		var run store.Run
		run, err = e.o.Store.Run(ctx, runID)
		if err != nil {
			e.o.Logger.Error("finish: read run", event.KeyRun, runID, "err", err)
			return
		}
		b := build(run)
		crashpoint.Hit(crashpoint.BeforeFinish)
		fillSession(extra, run.SessionID)
		reflect = status == store.StatusDone && e.o.Reflect != nil && e.o.Reflect(run)
		if reflect {
			ev, err = e.o.Store.FinishReflecting(ctx, runID, status, b, errText, extra...)
		} else {
			ev, err = e.o.Store.Finish(ctx, runID, status, b, errText, extra...)
		}
	}
	if errors.Is(err, store.ErrAlreadyFinal) {
		return
	}
	if errors.Is(err, store.ErrSessionLeaseLost) {
		e.o.Logger.Warn("run not finished here: this worker no longer holds its session; the worker holding it resumes the run", event.KeyRun, runID, "err", err)
		return
	}
	if err != nil {
		e.o.Logger.Error("finish run", event.KeyRun, runID, "err", err)
		return
	}
	e.tokens.Delete(runID)
	if final != nil {
		x.stepped(*final)
		x.publish(stepEvs...)
	}
	for _, x := range extra {
		e.o.Broker.Publish(x)
	}
	e.o.Broker.Publish(ev)
	if reflect {
		crashpoint.Hit(crashpoint.AfterFinish)
		if e.o.Reflected != nil {
			e.o.Reflected(runID)
		}
	}
}

// fillSession gives the events of extra that name no session the run's.
func fillSession(extra []event.Event, sessionID string) {
	for i := range extra {
		if extra[i].SessionID == "" {
			extra[i].SessionID = sessionID
		}
	}
}

// taskText is the run's own input, its user messages joined, for
// retrieval that ranks by the task.
func taskText(input []model.Message) string {
	var parts []string
	for _, m := range input {
		if m.Role == model.RoleUser && strings.TrimSpace(m.Content) != "" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// execution is the state of one execution attempt of a run.
type execution struct {
	e         *Engine
	run       store.Run
	req       Request
	logger    *slog.Logger
	self      string   // DELTA.md snapshot for this attempt
	attempt   []string // AttemptBlocks of this attempt
	lastModel string
	lastText  string
	callStats callStats
	prevInput int64  // gross input tokens of the previous call, for cache_shortfall_tokens
	task      string // the run's metadata.task_id, for the event spine
	// turn is the run's current turn (its model-call number, counted across
	// attempts), for the event spine. Written only between turns.
	turn int
	// offered is the tool names offered on the current turn; a call to any
	// other tool is refused. Written only between turns, before any call
	// of the turn starts.
	offered []string

	mu      sync.Mutex      // guards history and held: tool results commit concurrently
	history []model.Message // the session's conversation as committed, and held results
	// held is what this attempt keeps back for its next write (held.go):
	// the turn.started of the turn in progress and the results of
	// read-only calls, so a step costs one transaction.
	held held
	// memo lets the wire client reuse its encoding of the conversation's
	// unchanged opening from one call of this attempt to the next.
	memo    model.Memo
	callIDs map[string]bool // every tool-call id of history, built on the first checkpoint (callid.go)
	// journalled is the call ids of the run's journal as recovery read
	// them, for the first checkpoint's callIDs (nil once used).
	journalled map[string]bool
	// historyEnd is where the stored conversation ends in the request the
	// last assemble built; the messages after it are per-turn blocks.
	historyEnd int

	// summary is the session's compaction in force (nil = none): its note
	// opens the window after this run's pinned request.
	summary *store.Compaction
	pinned  string // this run's request, verbatim from its record
	// lastGross is the real prompt size of the previous call (its gross
	// input tokens), 0 after a compaction; lastEst is what the estimate
	// said of that call's request.
	lastGross int64
	lastEst   int
	// sizes holds the serialized size of each message of history measured
	// so far, histBytes their sum (guarded by mu; reset with history).
	sizes     []int
	histBytes int
	// prep is a summary being made ahead of the dial (nil = none);
	// compactions counts the compactions this execution applied.
	prep        *prepared
	compactions int
	dialWarned  bool // the dial was found too small for the fixed parts
	// ahead holds the batches of steps committing in the background, in
	// order (ahead.go); empty when none is.
	ahead []*inflight
	// commits feeds the goroutine that commits ahead (ahead.go), started
	// at the first such commit; nil before.
	commits chan func()
	// final is the run's final reply, built and not yet committed: it
	// commits with the run's terminal write (finishWith), nil before.
	final *store.Step
}

// compactAt is the dial in tokens.
func (x *execution) compactAt() int {
	if x.e.o.CompactAt > 0 {
		return x.e.o.CompactAt
	}
	return DefaultCompactAt
}

// event builds an event of this run stamped with its correlation spine.
func (x *execution) event(name string, data any) event.Event {
	ev := event.New(x.run.ID, x.run.SessionID, name, data)
	ev.Owner, ev.TaskID, ev.Turn = x.run.Owner, x.task, x.turn
	return ev
}

func (x *execution) publish(evs ...event.Event) {
	for _, ev := range evs {
		x.e.o.Broker.Publish(ev)
	}
}

// loop runs the attempt's turns until the run's final reply, and returns it.
func (x *execution) loop(ctx context.Context) (string, error) {
	// A summary made ahead and never used is still paid for.
	defer x.dropPrepared(context.WithoutCancel(ctx))
	text, err := x.turns(ctx)
	// A step committing in the background ends before the attempt does;
	// when it failed, nothing after it happened, and its error is the
	// attempt's.
	if serr := x.settle(ctx); serr != nil {
		x.final = nil
		return x.lastText, serr
	}
	return text, err
}

func (x *execution) turns(ctx context.Context) (string, error) {
	e := x.e
	x.self = e.o.Prompt.ReadSelf()
	if e.o.AttemptBlocks != nil {
		// The blocks may call MCP tools for the run (task-start
		// hydration): they get the run's credential as its tool calls do.
		actx := ctx
		if e.o.CallContext != nil {
			if tok, ok := e.tokens.Load(x.run.ID); ok {
				actx = e.o.CallContext(ctx, tok.(string))
			}
		}
		x.attempt = e.o.AttemptBlocks(actx, x.run.ID, x.run.SessionID, taskText(x.req.Input))
	}
	names := x.resident(ctx)
	x.offered = names
	specs := x.specs(names)
	system := e.o.Prompt.System(x.self, specs)
	budget := e.o.Budget(x.req.Profile)
	x.lastModel = x.run.Model

	// Recovery: settle the calls a previous attempt left in doubt.
	if err := x.recoverCalls(ctx); err != nil {
		return "", err
	}
	if x.run.Attempts > 1 {
		// An earlier attempt may have checkpointed its final reply and
		// stopped before the terminal write: finish from that reply, with
		// no second model call.
		text, final, err := e.o.Store.FinalReply(ctx, x.run.SessionID, x.run.ID)
		if err != nil {
			return "", err
		}
		if final {
			x.lastText = text
			return text, nil
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return x.lastText, errCancelled
		}
		if err := x.holdsLease(ctx); err != nil {
			return x.lastText, err
		}
		// x.run's counters are kept current by checkpoint: no read per step.
		if err := checkBudget(x.run, budget); err != nil {
			return "", err
		}
		x.turn = x.run.Steps + 1
		// The tool list and the spine's tool index are part of the
		// prompt-cached prefix: they are rebuilt only when the resident set
		// changes (a search_tools activation), which costs one cache miss
		// on that turn and keeps the prefix stable on every other.
		if now := x.resident(ctx); !slices.Equal(now, names) {
			names, specs = now, x.specs(now)
			x.offered = names
			system = e.o.Prompt.System(x.self, specs)
		}
		if x.history == nil {
			// Read the conversation once per attempt; later turns append to
			// it in memory as they commit, so a step costs O(1) reads.
			if err := x.loadWindow(ctx); err != nil {
				return "", err
			}
		}
		modelName := x.lastModel
		if modelName == "" && len(e.o.Models) > 0 {
			modelName = e.o.Models[0]
		}
		req, est := x.assemble(ctx, system, specs, modelName, true)
		x.startTurn(modelName, len(specs))
		// Compact before sending when the request would pass the dial, or
		// the previous call's real prompt did (cached tokens still fill
		// the window).
		if est > x.compactAt() || x.lastGross > int64(x.compactAt()) {
			// Compaction reads and rewrites the stored conversation: the
			// step committing ahead lands first.
			if err := x.settle(ctx); err != nil {
				return x.lastText, err
			}
			reason := reasonEstimate
			if est <= x.compactAt() {
				reason = reasonPrompt
			}
			// When the parts compaction cannot shrink already fill the dial,
			// summarizing would cost a utility call every turn and still
			// not fit: the request goes as it is, and only the provider's
			// own refusal forces a compaction.
			if fixed := x.fixedTokens(ctx, system, specs, modelName); tailBudget(x.compactAt(), fixed, false) > 0 {
				changed, err := x.compact(ctx, reason, fixed, est, false)
				if err != nil {
					return x.lastText, err
				}
				if changed {
					req, est = x.assemble(ctx, system, specs, modelName, true)
				}
			} else if !x.dialWarned {
				x.dialWarned = true
				x.logger.Warn("DELTA_COMPACT_AT_TOKENS is smaller than what compaction cannot shrink (spine, tool schemas, per-turn blocks, this run's request, the summary's room and the reply's reserve); not compacting before sending",
					"dial", x.compactAt(), "fixed_tokens", fixed)
			}
		}
		x.prepareAhead(ctx, est, func() int { return x.fixedTokens(ctx, system, specs, modelName) })
		x.lastEst = est
		resp, err := x.callModel(ctx, req)
		// Nothing of this reply is acted on before the steps committing
		// ahead of it are durable, unless it only asks for read-only calls
		// (ahead.go): its step then joins their commit queue. When a commit
		// failed, the reply is dropped unread.
		if err != nil || !x.aheadable(resp) {
			if serr := x.settle(ctx); serr != nil {
				return x.lastText, serr
			}
		}
		if errors.Is(err, model.ErrContextOverflow) {
			// The provider refused the prompt as too long: one forced
			// compaction, then the same turn once more. With nothing left
			// to compact, attached images go and the largest tool result
			// is elided (its full text stays in the journal and any spill
			// file) instead.
			changed, cerr := x.compact(ctx, reasonOverflow, x.fixedTokens(ctx, system, specs, modelName), est, true)
			if cerr != nil {
				return x.lastText, cerr
			}
			retry := changed
			if changed {
				req, _ = x.assemble(ctx, system, specs, modelName, true)
			} else if reduced, ok := elideLargestToolResult(withoutImages(req.Messages)); ok || len(reduced) < len(req.Messages) {
				req.Messages, retry = reduced, true
			}
			if retry {
				x.logger.Warn("context window exceeded; reduced the request and retrying the turn once", "compacted", changed)
				resp, err = x.callModel(ctx, req)
			}
			if errors.Is(err, model.ErrContextOverflow) {
				return x.lastText, failure{kind: failOverflow, err: fmt.Errorf("the conversation no longer fits the model's context window and compaction could not reduce it enough: %w", err)}
			}
		}
		if err != nil {
			return x.lastText, err
		}
		x.lastModel = resp.Model
		if strings.TrimSpace(resp.Text) != "" {
			x.lastText = resp.Text
		}
		if len(resp.ToolCalls) == 0 {
			// The final reply is not checkpointed on its own: it commits
			// with the run's terminal write, one transaction for both
			// (finishWith), so a run pays no commit for a reply that only
			// ends it, and no stored reply waits for its run's end.
			st, _, _, err := x.step(ctx, resp, req, x.historyEnd)
			if err != nil {
				return x.lastText, x.checkpointFailed(ctx, err)
			}
			x.final = &st
			return resp.Text, nil
		}
		// A step of read-only calls commits in the background while they
		// run and the next call goes out (ahead.go); any other commits
		// before its calls start.
		checkpoint := x.checkpoint
		if x.aheadable(resp) {
			checkpoint = x.checkpointAhead
		}
		if err := checkpoint(ctx, resp, req, x.historyEnd); err != nil {
			return x.lastText, x.checkpointFailed(ctx, err)
		}
		crashpoint.Hit(crashpoint.AfterIntent)
		charges := e.o.Store.Charges()
		x.runTools(ctx, resp.ToolCalls)
		// Tools may charge usage to the run (a subagent's spend): when any
		// charge was committed meanwhile, re-read the counters so the next
		// budget check sees it.
		if e.o.Store.Charges() != charges {
			if err := x.settle(ctx); err != nil {
				return x.lastText, err
			}
			if r, err := e.o.Store.Run(ctx, x.run.ID); err == nil {
				x.run.Usage, x.run.Steps = r.Usage, r.Steps
			}
		}
	}
}

// loadWindow reads the session's active window: the compaction in force,
// if any, and the messages it left active (the tool results of its tail
// re-capped as they were when it ran), and pins this run's request.
func (x *execution) loadWindow(ctx context.Context) error {
	history, err := x.e.o.Store.Messages(ctx, x.run.SessionID)
	if err != nil {
		return err
	}
	c, ok, err := x.e.o.Store.LatestCompaction(ctx, x.run.SessionID)
	if err != nil {
		return err
	}
	history = append([]model.Message{}, history...)
	if ok {
		x.summary = &c
		if n := min(c.TailRows, len(history)); n > 0 {
			copy(history[:n], retained(history[:n], c.RecapChars))
		}
	}
	// The pinned request is this run's own, read from its record (a
	// threaded session's first request may be about other work).
	x.pinned = pinnedRequest(x.run.Request)
	x.mu.Lock()
	x.history, x.sizes, x.histBytes = history, nil, 0
	x.mu.Unlock()
	return nil
}

// assemble builds this turn's request and its estimate in tokens: the
// compaction envelope (when the session has a summary), the history, then
// the per-turn blocks. Request-scoped text rides in delimited user-role
// blocks after the history: it can specialise the task but never becomes
// system policy. The history's share of the estimate is kept per message
// as the history grows, so a step does not re-measure the whole window.
func (x *execution) assemble(ctx context.Context, system []string, specs []model.ToolSpec, modelName string, withHistory bool) (model.Request, int) {
	e := x.e
	var msgs []model.Message
	if x.summary != nil || !withHistory {
		summary := ""
		if x.summary != nil && withHistory {
			summary = x.summary.Summary
		}
		msgs = append(msgs, envelope(x.pinned, summary))
	}
	histBytes, from := 0, len(msgs)
	if withHistory {
		x.mu.Lock()
		msgs = append(msgs, sanitize(x.history)...)
		histBytes = x.historyBytes()
		if len(msgs)-from != len(x.history) {
			// sanitize answered a call left open: measure this once whole.
			histBytes = messagesBytes(msgs[from:])
		}
		x.mu.Unlock()
	}
	to := len(msgs)
	if withHistory {
		x.historyEnd = to // what a captured call tags as the conversation
	}
	if turn := e.o.Prompt.Turn(modelName, e.o.Now(), x.req.Context); turn != "" {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: TurnBlockPrefix + "\n" + turn + "\n</delta:turn>"})
	}
	if e.o.TurnBlocks != nil {
		for _, blk := range e.o.TurnBlocks(ctx, x.run.SessionID) {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Content: blk})
		}
	}
	if x.req.Instructions != "" {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: InstructionsBlockPrefix + "\n" + x.req.Instructions + "\n</delta:instructions>"})
	}
	for _, blk := range x.attempt {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: blk})
	}
	otherBytes := messagesBytes(msgs[:from]) + messagesBytes(msgs[to:])
	if withHistory && e.o.Attach != nil {
		// Verified images for a vision model ride on this call's copy
		// of the conversation only, after every other block.
		before := len(msgs)
		msgs = e.o.Attach(ctx, modelName, msgs)
		otherBytes += messagesBytes(msgs[min(before, len(msgs)):])
	}
	est := bytesToTokens(estimateFixedBytes(system, specs)+histBytes+otherBytes) + imagesOf(msgs)*estimateImageTokens + outputReserve(x.compactAt())
	return model.Request{System: system, Messages: msgs, Tools: specs, ReasoningEffort: x.req.ReasoningEffort, Memo: &x.memo}, est
}

// historyBytes is the serialized size of x.history, measuring only the
// messages added since the last call. x.mu must be held.
func (x *execution) historyBytes() int {
	for i := len(x.sizes); i < len(x.history); i++ {
		n := messageBytes(&x.history[i])
		x.sizes = append(x.sizes, n)
		x.histBytes += n
	}
	return x.histBytes
}

// fixedTokens is the estimated size of this turn's request without its
// history and summary: the part a compaction cannot shrink.
func (x *execution) fixedTokens(ctx context.Context, system []string, specs []model.ToolSpec, modelName string) int {
	_, est := x.assemble(ctx, system, specs, modelName, false)
	return est
}

// startTurn opens the turn with turn.started: the budget allows the turn
// and its model call is next. The event reports no state of its own, so it
// is held for the turn's next write (normally its checkpoint) and goes out
// first in that transaction; a crash before that write leaves the turn
// unrecorded, and the resumed attempt opens it again.
func (x *execution) startTurn(modelName string, tools int) {
	x.hold(x.event(event.TurnStarted, map[string]any{event.KeyTurn: x.turn, event.KeyModel: modelName, event.KeyTools: tools}))
}

// resident is the tool names offered this turn.
func (x *execution) resident(ctx context.Context) []string {
	if x.e.o.Resident != nil {
		return x.e.o.Resident(ctx, x.run.ID, x.req.Profile)
	}
	return x.e.o.ToolNames(x.req.Profile)
}

// specs looks up the specs of names, in order.
func (x *execution) specs(names []string) []model.ToolSpec {
	var specs []model.ToolSpec
	for _, n := range names {
		if t, ok := x.e.o.Tools.Get(n); ok {
			specs = append(specs, t.Spec())
		}
	}
	return specs
}

// checkBudget refuses another model call once a ceiling is reached. A
// zero ceiling is reached at once: budgets fail closed.
func checkBudget(r store.Run, b Budget) error {
	var over []string
	if r.Steps >= b.Steps {
		over = append(over, "steps")
	}
	if r.Usage.Fresh() >= b.Tokens {
		over = append(over, "tokens")
	}
	if r.Usage.CostUSD >= b.CostUSD {
		over = append(over, "cost")
	}
	if len(over) == 0 {
		return nil
	}
	return &budgetError{run: r, budget: b, reached: over, diag: fmt.Sprintf("%d/%d steps, %d/%d tokens, $%.4f/$%.2f (%s)",
		r.Steps, b.Steps, r.Usage.Fresh(), b.Tokens, r.Usage.CostUSD, b.CostUSD, strings.Join(over, ", "))}
}

// sanitize makes a stored history valid for a provider: an assistant tool
// call without a result (a crash or cancel between intent and result) gets a
// synthetic interrupted result so the wire never sees a dangling call.
// When every call is answered — the shape every committed turn has — it
// returns history itself, so a step does not build a set and a copy of the
// whole conversation to find nothing.
func sanitize(history []model.Message) []model.Message {
	if allAnswered(history) {
		return history
	}
	answered := make(map[string]bool)
	for _, m := range history {
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	out := make([]model.Message, 0, len(history))
	for _, m := range history {
		out = append(out, m)
		if m.Role != model.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if answered[c.ID] {
				continue
			}
			out = append(out, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name,
				Content: "[interrupted] this call has no recorded result; verify its effect before relying on it"})
		}
	}
	return out
}

// allAnswered reports, without allocating, that every tool call of
// history has its result after it and before the next assistant message.
// It can say false of a history sanitize would leave as it is (a result
// stored out of place); sanitize then takes its long way.
func allAnswered(history []model.Message) bool {
	for i := range history {
		for _, c := range history[i].ToolCalls {
			if history[i].Role != model.RoleAssistant {
				break
			}
			found := false
			for j := i + 1; j < len(history) && history[j].Role != model.RoleAssistant; j++ {
				if history[j].Role == model.RoleTool && history[j].ToolCallID == c.ID {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// withoutImages drops the messages that carry attached images (Attach
// appends them as messages of their own), or returns msgs as it came.
func withoutImages(msgs []model.Message) []model.Message {
	if !slices.ContainsFunc(msgs, func(m model.Message) bool { return len(m.Images) > 0 }) {
		return msgs
	}
	return slices.DeleteFunc(slices.Clone(msgs), func(m model.Message) bool { return len(m.Images) > 0 })
}

// elideLargestToolResult returns a copy of msgs with the largest tool
// result replaced by a short note, or false when there is none worth it.
func elideLargestToolResult(msgs []model.Message) ([]model.Message, bool) {
	best := -1
	for i, m := range msgs {
		if m.Role == model.RoleTool && len(m.Content) > 512 && (best < 0 || len(m.Content) > len(msgs[best].Content)) {
			best = i
		}
	}
	if best < 0 {
		return msgs, false
	}
	out := append([]model.Message(nil), msgs...)
	n := len([]rune(out[best].Content))
	out[best].Content = fmt.Sprintf("[elided: this %s result (%d characters) did not fit the context window; "+
		"re-read a narrower part of it if you still need it]", out[best].Name, n)
	return out, true
}
