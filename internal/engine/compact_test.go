package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/todo"
)

// longRun is a scripted model that calls the "fetch" tool turns times and
// then answers, and a summarizer; it records every main-loop request and
// every summary request.
type longRun struct {
	mu        sync.Mutex
	turns     int
	dial      int // the engine's dial, for the usage it reports (0 = the default)
	main      []model.Request
	summaries []model.Request
	// summarize answers a summary call (nil = a short note).
	summarize func(n int, req model.Request) (model.Response, error)
	// overflowAt makes the nth main call (1-based) fail as too long.
	overflowAt int
	overflow   error
}

func (l *longRun) provider() model.ProviderFunc {
	return func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if engine.IsSummaryCall(req.System) {
			l.summaries = append(l.summaries, req)
			if l.summarize != nil {
				return l.summarize(len(l.summaries), req)
			}
			return model.Response{Model: req.Model, Text: fmt.Sprintf("Note %d: fetched pages so far.", len(l.summaries)),
				Usage: model.Usage{InputTokens: 1000, OutputTokens: 100}}, nil
		}
		l.main = append(l.main, req)
		n := len(l.main)
		if n == l.overflowAt {
			return model.Response{}, l.overflow
		}
		dial := l.dial
		if dial == 0 {
			dial = engine.DefaultCompactAt
		}
		usage := model.Usage{InputTokens: int64(engine.EstimateTokensAt(req, dial)), OutputTokens: 20}
		if n > l.turns {
			return model.Response{Model: req.Model, Text: "all pages fetched", Usage: usage}, nil
		}
		return model.Response{Model: req.Model, Usage: usage, ToolCalls: []model.ToolCall{{
			ID: fmt.Sprintf("call_%d", n), Name: "fetch", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"page-%d"}`, n))}}}, nil
	}
}

// fetchTool answers with about size bytes that name the page asked for.
func fetchTool(size int) tool.Tool {
	return tool.Func("fetch", "fetch a page", true, func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Text(a.Text + " says: " + strings.Repeat("lorem ipsum ", size/12)), nil
	})
}

func compactionEvents(t *testing.T, h *harness, runID string) []map[string]any {
	t.Helper()
	evs, err := h.st.Events(context.Background(), store.EventFilter{RunID: runID, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Name == event.Compaction {
			var d map[string]any
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// checkWellFormed fails when a request holds a tool result whose call it
// does not hold: compaction split a turn.
func checkWellFormed(t *testing.T, i int, req model.Request) {
	t.Helper()
	calls := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == model.RoleTool && !calls[m.ToolCallID] {
			t.Fatalf("request %d: tool result %s without its call", i, m.ToolCallID)
		}
	}
}

func TestCompactionKeepsEveryRequestUnderTheDial(t *testing.T) {
	const dial = 12000
	l := &longRun{turns: 60, dial: dial}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = dial }, fetchTool(1500))
	r, resp := h.run(t, "fetch every page of the Quillfeather archive")
	if r.Status != store.StatusDone || resp.OutputText != "all pages fetched" {
		t.Fatalf("run %s (%s): %q", r.Status, r.Error, resp.OutputText)
	}
	if len(l.summaries) == 0 {
		t.Fatal("no compaction in a run that outgrew the dial")
	}
	for i, req := range l.main {
		if est := engine.EstimateTokensAt(req, dial); est > dial {
			t.Fatalf("request %d estimated at %d tokens, over the dial of %d", i+1, est, dial)
		}
		checkWellFormed(t, i+1, req)
	}
	// After a compaction the window opens with this run's request, pinned.
	last := l.main[len(l.main)-1]
	first := last.Messages[0]
	if !strings.HasPrefix(first.Content, engine.CompactionBlockPrefix) || !strings.Contains(first.Content, "fetch every page of the Quillfeather archive") {
		t.Fatalf("the compacted window opens with %q", first.Content)
	}
	if !strings.Contains(first.Content, "[end of compacted history]") || !strings.Contains(first.Content, "Note ") {
		t.Fatalf("the envelope lacks the summary or its end marker: %q", first.Content)
	}
	// Steps count main-loop calls only; the summaries' usage is charged.
	if r.Steps != len(l.main) {
		t.Fatalf("steps = %d, want %d main calls (summaries are not steps)", r.Steps, len(l.main))
	}
	var mainIn int64
	for _, req := range l.main {
		mainIn += int64(engine.EstimateTokensAt(req, dial))
	}
	if want := mainIn + int64(1000*len(l.summaries)); r.Usage.InputTokens != want {
		t.Fatalf("input tokens = %d, want %d (main calls plus %d summaries)", r.Usage.InputTokens, want, len(l.summaries))
	}
	// Each summary became a compaction, but for at most one made ahead
	// that the run finished before needing (it is still charged, above).
	evs := compactionEvents(t, h, r.ID)
	if len(evs) > len(l.summaries) || len(l.summaries) > len(evs)+1 {
		t.Fatalf("%d compaction events for %d summaries", len(evs), len(l.summaries))
	}
	prepared := 0
	for _, e := range evs {
		if e["prepared"] == true {
			prepared++
		}
	}
	if prepared == 0 {
		t.Fatal("no summary was made ahead of the dial")
	}
	for _, k := range []string{"before_tokens", "after_tokens", "covered_messages", "kept_messages", "anchors", "anchors_kept",
		"anchors_recovered", "ledger_calls", "ledger_spills", "pinned_run_id"} {
		if _, ok := evs[0][k]; !ok {
			t.Fatalf("compaction event lacks %s: %v", k, evs[0])
		}
	}
	if evs[0]["pinned_run_id"] != r.ID || evs[0]["after_tokens"].(float64) >= evs[0]["before_tokens"].(float64) {
		t.Fatalf("compaction event %v", evs[0])
	}
	// Older rows are inactive, not gone: recall reads the first page back.
	msgs, _ := h.st.Messages(context.Background(), r.SessionID)
	if len(msgs) >= 2*len(l.main) {
		t.Fatalf("%d active messages after compaction, want fewer than %d", len(msgs), 2*len(l.main))
	}
	hits, err := h.st.Recall(context.Background(), store.RecallQuery{SessionID: r.SessionID, Text: "page-1 says"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("recall of a compacted result = %v, %v", hits, err)
	}
	// The second summary merged the first forward, and the ledger names the
	// calls it covered.
	if len(l.summaries) > 1 {
		in := l.summaries[1].Messages[0].Content
		if !strings.Contains(in, "Merge forward") || !strings.Contains(in, "Note 1") {
			t.Fatalf("the second summary was not asked to merge the first forward: %.300q", in)
		}
	}
	c, ok, err := h.st.LatestCompaction(context.Background(), r.SessionID)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The call ledger carries the calls of earlier generations forward,
	// newest first, within its bound.
	if !strings.Contains(c.Summary, `fetch {"text":"page-30"}`) || !strings.Contains(c.Summary, "more distinct calls") || !strings.Contains(c.Summary, "call recall") {
		t.Fatalf("the summary lacks the call ledger or the recall line: %q", c.Summary)
	}
}

func TestCompactionPinsThisRunsRequestInAThread(t *testing.T) {
	l := &longRun{turns: 2}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 14000 }, fetchTool(3000))
	first, _ := h.run(t, "first ask: index the Marlowe letters")
	l.mu.Lock()
	l.turns, l.main = 30, nil
	l.mu.Unlock()
	r := submitAndWait(t, h.svc, engine.Submission{PreviousID: first.ID, Request: userRequest("second ask: fetch the Brontë ledgers")})
	if r.Status != store.StatusDone {
		t.Fatalf("second run %s %s", r.Status, r.Error)
	}
	if len(compactionEvents(t, h, r.ID)) == 0 {
		t.Fatal("the second run never compacted")
	}
	pinned := 0
	for _, req := range l.main {
		env := req.Messages[0].Content
		if !strings.HasPrefix(env, engine.CompactionBlockPrefix) {
			continue
		}
		pinned++
		reqBlock, _, _ := strings.Cut(env, "</delta:request>")
		if !strings.Contains(reqBlock, "second ask: fetch the Brontë ledgers") || strings.Contains(reqBlock, "first ask") {
			t.Fatalf("the pinned request is not this run's own: %q", reqBlock)
		}
	}
	if pinned == 0 {
		t.Fatal("no request after the compaction carried the envelope")
	}
}

func TestFailedSummaryIsANoOp(t *testing.T) {
	l := &longRun{turns: 40, summarize: func(int, model.Request) (model.Response, error) {
		return model.Response{}, &model.Error{Status: 500, Message: "utility down"}
	}}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 12000 }, fetchTool(1500))
	r, _ := h.run(t, "fetch")
	if r.Status != store.StatusDone {
		t.Fatalf("run %s: %s; a failed summary must leave the run going", r.Status, r.Error)
	}
	if len(l.summaries) == 0 {
		t.Fatal("no summary was attempted")
	}
	if n := len(compactionEvents(t, h, r.ID)); n != 0 {
		t.Fatalf("%d compaction events after failed summaries", n)
	}
	msgs, _ := h.st.Messages(context.Background(), r.SessionID)
	if len(msgs) != 1+2*40+1 {
		t.Fatalf("%d active messages, want all %d (nothing marked inactive)", len(msgs), 1+2*40+1)
	}
	if _, ok, _ := h.st.LatestCompaction(context.Background(), r.SessionID); ok {
		t.Fatal("a compaction row was written for a failed summary")
	}
}

func TestLengthStoppedSummaryIsRetriedOnceAndTheBetterKept(t *testing.T) {
	l := &longRun{turns: 40}
	l.summarize = func(n int, req model.Request) (model.Response, error) {
		if n%2 == 1 {
			return model.Response{Model: req.Model, Text: "A note that ran on and on", FinishReason: "length", Usage: model.Usage{InputTokens: 1, OutputTokens: 1}}, nil
		}
		return model.Response{Model: req.Model, Text: "Short complete note.", FinishReason: "stop", Usage: model.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 12000 }, fetchTool(1500))
	r, _ := h.run(t, "fetch")
	evs := compactionEvents(t, h, r.ID)
	if len(evs) == 0 || len(l.summaries) != 2*len(evs) {
		t.Fatalf("%d summary calls for %d compactions, want two each", len(l.summaries), len(evs))
	}
	if evs[0]["length_retried"] != true {
		t.Fatalf("event %v", evs[0])
	}
	c, _, _ := h.st.LatestCompaction(context.Background(), r.SessionID)
	if !strings.HasPrefix(c.Summary, "Short complete note.") {
		t.Fatalf("kept %q, want the complete retry", c.Summary)
	}
}

func TestPlanSurvivesCompaction(t *testing.T) {
	l := &longRun{turns: 40}
	var plans *todo.Plans
	base := l.provider()
	planned := false
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		if !engine.IsSummaryCall(req.System) && !planned {
			planned = true
			l.mu.Lock()
			l.main = append(l.main, req)
			l.mu.Unlock()
			return model.Response{Model: req.Model, ToolCalls: []model.ToolCall{{ID: "plan", Name: todo.Name,
				Arguments: json.RawMessage(`{"items":[{"text":"fetch the Okonkwo pages","status":"doing"}]}`)}}}, nil
		}
		return base(ctx, req, s)
	})
	h := newHarnessWith(t, p, engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000}, func(o *engine.Options) {
		o.CompactAt = 12000
		o.TurnBlocks = func(ctx context.Context, sessionID string) []string {
			if b := plans.Block(ctx, sessionID); b != "" {
				return []string{b}
			}
			return nil
		}
	}, fetchTool(1500))
	plans = todo.New(h.st, todo.Options{Logger: slog.New(slog.DiscardHandler)})
	h.reg.Add(plans.Tool())
	r, _ := h.run(t, "fetch")
	if r.Status != store.StatusDone || len(compactionEvents(t, h, r.ID)) == 0 {
		t.Fatalf("run %s %s with %d compactions", r.Status, r.Error, len(compactionEvents(t, h, r.ID)))
	}
	last := l.main[len(l.main)-1]
	if !strings.HasPrefix(last.Messages[0].Content, engine.CompactionBlockPrefix) {
		t.Fatal("the last request is not a compacted window")
	}
	for _, m := range last.Messages {
		if strings.HasPrefix(m.Content, todo.BlockPrefix) && strings.Contains(m.Content, "fetch the Okonkwo pages") {
			return
		}
	}
	t.Fatal("the plan is missing from the window after compaction")
}

func TestOverflowForcesOneCompactionAndRetries(t *testing.T) {
	overflow := &model.Error{Status: 400, Message: "prompt is too long", Err: model.ErrContextOverflow}
	l := &longRun{turns: 12, overflowAt: 10, overflow: overflow}
	h := newHarness(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000}, fetchTool(4000))
	r, _ := h.run(t, "fetch")
	if r.Status != store.StatusDone {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	evs := compactionEvents(t, h, r.ID)
	if len(evs) != 1 || evs[0]["forced"] != true || evs[0]["reason"] != "overflow" {
		t.Fatalf("compactions %v, want one forced by the overflow", evs)
	}
	retry := l.main[10] // the call after the refused one
	if !strings.HasPrefix(retry.Messages[0].Content, engine.CompactionBlockPrefix) {
		t.Fatal("the retried turn was not compacted")
	}
	if engine.EstimateTokens(retry) >= engine.EstimateTokens(l.main[9]) {
		t.Fatal("the retried request is no smaller than the refused one")
	}
}

func TestOverflowThatCompactionCannotReduceFailsCleanly(t *testing.T) {
	overflow := &model.Error{Status: 400, Message: "prompt is too long", Err: model.ErrContextOverflow}
	p := model.ProviderFunc(func(_ context.Context, req model.Request, _ model.Stream) (model.Response, error) {
		if engine.IsSummaryCall(req.System) {
			return model.Response{Model: req.Model, Text: "note"}, nil
		}
		return model.Response{}, overflow
	})
	h := newHarness(t, p, big)
	r, _ := h.run(t, "hello")
	if r.Status != store.StatusFailed || !strings.Contains(r.Error, "context window") {
		t.Fatalf("run %s: %q", r.Status, r.Error)
	}
	if !errors.Is(overflow, model.ErrContextOverflow) {
		t.Fatal("unreachable")
	}
}

// TestRealPromptPastTheDialCompacts: the estimate stays under the dial but
// the provider reports a gross prompt over it (its tokenizer counts more):
// the next turn compacts, with the tail shrunk by the provider's ratio so
// the following prompt falls back under the dial.
func TestRealPromptPastTheDialCompacts(t *testing.T) {
	const dial = 30000
	l := &longRun{turns: 30}
	base := l.provider()
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		resp, err := base(ctx, req, s)
		if !engine.IsSummaryCall(req.System) {
			resp.Usage.InputTokens = int64(engine.EstimateTokens(req)) * 2 // a provider that counts twice what we estimate
		}
		return resp, err
	})
	h := newHarnessWith(t, p, engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = dial }, fetchTool(1500))
	r, _ := h.run(t, "fetch")
	if r.Status != store.StatusDone {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	evs := compactionEvents(t, h, r.ID)
	if len(evs) == 0 || evs[0]["reason"] != "previous_prompt" {
		t.Fatalf("compactions %v, want the first one caused by the real prompt", evs)
	}
	// After the first compaction every real prompt is back under the dial
	// until the next compaction: none is over it twice in a row.
	over := 0
	for _, req := range l.main {
		if 2*engine.EstimateTokens(req) > dial {
			over++
			if over > 1 {
				t.Fatalf("two prompts in a row past the dial: the tail did not shrink to the provider's count")
			}
		} else {
			over = 0
		}
	}
}

// TestSummaryIsPreparedAheadOfTheDial: past four fifths of the dial the
// summary is made in the background — a main-loop call runs while the
// summarizer is still answering — and the compaction at the dial applies
// it without a second summary call.
func TestSummaryIsPreparedAheadOfTheDial(t *testing.T) {
	const dial = 16000
	release, arrived := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	inFlight, overlapped, released, summaries := 0, false, false, 0
	l := &longRun{turns: 40, dial: dial}
	base := l.provider()
	p := model.ProviderFunc(func(ctx context.Context, req model.Request, s model.Stream) (model.Response, error) {
		if engine.IsSummaryCall(req.System) {
			mu.Lock()
			inFlight++
			if summaries++; summaries == 1 {
				close(arrived)
			}
			mu.Unlock()
			// Only a main-loop call releases it. A bail-out, not a timing
			// assertion: made on the loop's own turn, the summary would
			// otherwise wait forever.
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			return base(ctx, req, s)
		}
		// The first call past four fifths of the dial is sent right after
		// the background summary is started, and may reach the provider
		// before it: it waits for the summary to arrive (a bail-out again),
		// so the overlap does not hang on which goroutine runs first.
		mu.Lock()
		wait := !released && 5*engine.EstimateTokensAt(req, dial) > 4*dial
		mu.Unlock()
		if wait {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
			}
		}
		mu.Lock()
		if inFlight > 0 && !released {
			overlapped, released = true, true
			close(release)
		}
		mu.Unlock()
		return base(ctx, req, s)
	})
	h := newHarnessWith(t, p, engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = dial }, fetchTool(1500))
	r, _ := h.run(t, "fetch")
	if r.Status != store.StatusDone {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if !overlapped {
		t.Fatal("no main-loop call ran while a summary was being made")
	}
	evs := compactionEvents(t, h, r.ID)
	if len(evs) == 0 || evs[0]["prepared"] != true {
		t.Fatalf("the first compaction %v did not apply the summary made ahead", evs)
	}
	for i, req := range l.main {
		if est := engine.EstimateTokensAt(req, dial); est > dial {
			t.Fatalf("request %d estimated at %d tokens, over the dial", i+1, est)
		}
		checkWellFormed(t, i+1, req)
	}
}

// TestDialSmallerThanTheFixedPartsDoesNotCompactEveryTurn: when the spine,
// schemas and blocks alone fill the dial, no summary is asked for turn
// after turn; the run goes on uncompacted.
func TestDialSmallerThanTheFixedPartsDoesNotCompactEveryTurn(t *testing.T) {
	l := &longRun{turns: 8}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 50, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 4000 }, fetchTool(300))
	r, _ := h.run(t, "fetch "+strings.Repeat("with a very long request ", 400))
	if r.Status != store.StatusDone {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if len(l.summaries) != 0 {
		t.Fatalf("%d summaries for a dial the fixed parts already fill", len(l.summaries))
	}
}

// TestCompactedWindowIsRebuiltFromTheStore: a new engine on the same
// database (a restart) continues a compacted session with the window the
// store holds — the summary in force, only the active messages, each kept
// result as re-capped — and pins the new run's request.
func TestCompactedWindowIsRebuiltFromTheStore(t *testing.T) {
	l := &longRun{turns: 30, dial: 8000}
	h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
		func(o *engine.Options) { o.CompactAt = 8000 }, fetchTool(3000))
	first, _ := h.run(t, "first ask: fetch the Brontë ledgers")
	if len(compactionEvents(t, h, first.ID)) == 0 {
		t.Fatal("the first run never compacted")
	}
	last := l.main[len(l.main)-1]
	ctx := context.Background()
	c, ok, err := h.st.LatestCompaction(ctx, first.SessionID)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	active, err := h.st.Messages(ctx, first.SessionID)
	if err != nil {
		t.Fatal(err)
	}

	// A second engine over the same store, as after a restart: the first
	// one's dispatcher stops first, so it cannot take the next run (whose
	// events would then reach only the first engine's broker).
	h.q.Close(ctx)
	l.mu.Lock()
	l.turns, l.main = 0, nil
	l.mu.Unlock()
	opts := h.opts
	opts.Broker = nil
	_, svc := serve(t, h.st, engine.New(opts), 1)
	if r := submitAndWait(t, svc, engine.Submission{PreviousID: first.ID, Request: userRequest("second ask: list what you fetched")}); r.Status != store.StatusDone {
		t.Fatalf("second run %s %s", r.Status, r.Error)
	}
	got := l.main[0]
	env := got.Messages[0].Content
	if !strings.HasPrefix(env, engine.CompactionBlockPrefix) || !strings.Contains(env, "second ask: list what you fetched") ||
		!strings.Contains(env, c.Summary[:40]) {
		t.Fatalf("the rebuilt window opens with %.400q", env)
	}
	// The history part: the store's active messages then the new request,
	// exactly as the first engine last sent its share of them.
	hist := got.Messages[1 : 1+len(active)+1]
	if hist[len(hist)-1].Content != "second ask: list what you fetched" {
		t.Fatalf("the new request is not where history ends: %+v", hist[len(hist)-1])
	}
	recapped := false
	for _, m := range hist {
		recapped = recapped || strings.Contains(m.Content, "re-capped at compaction")
	}
	if !recapped {
		t.Fatal("no kept result is re-capped after the restart (the first engine sent them re-capped)")
	}
	before := last.Messages[1:]
	for i := range active[:len(active)-1] { // the first run's final answer came after its last request
		if hist[i].Role != before[i].Role || hist[i].Content != before[i].Content || hist[i].ToolCallID != before[i].ToolCallID {
			t.Fatalf("message %d differs after the restart:\n%+v\nwas\n%+v", i, hist[i], before[i])
		}
	}
}

// TestCompactionWorksAtSmallDials: a long run of sizeable tool results at
// the smallest dial the configuration accepts, and at other small dials,
// compacts and sends no request estimated past the dial, instead of
// sending the whole conversation because the fixed reserves filled it.
func TestCompactionWorksAtSmallDials(t *testing.T) {
	for _, dial := range []int{4000, 6000, 8000, 12000} {
		t.Run(fmt.Sprint(dial), func(t *testing.T) {
			l := &longRun{turns: 40, dial: dial}
			h := newHarnessWith(t, l.provider(), engine.Budget{Steps: 200, Tokens: 1 << 40, CostUSD: 1000},
				func(o *engine.Options) { o.CompactAt = dial }, fetchTool(1500))
			r, resp := h.run(t, "fetch every page of the Quillfeather archive")
			if r.Status != store.StatusDone || resp.OutputText != "all pages fetched" {
				t.Fatalf("run %s (%s): %q", r.Status, r.Error, resp.OutputText)
			}
			if len(l.summaries) == 0 || len(compactionEvents(t, h, r.ID)) == 0 {
				t.Fatalf("no compaction at a dial of %d in a run that outgrew it", dial)
			}
			for i, req := range l.main {
				if est := engine.EstimateTokensAt(req, dial); est > dial {
					t.Fatalf("request %d estimated at %d tokens, over the dial of %d", i+1, est, dial)
				}
				checkWellFormed(t, i+1, req)
			}
		})
	}
}
