package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model/modeltest"
)

// outputReserve is the tokens the engine reserves for the reply inside a
// dial: 4096, or an eighth of a smaller dial. A request's body, at three
// bytes a token, must leave this much of the dial free.
func outputReserve(dial int) int { return min(4096, dial/8) }

// longTask scripts a threaded session: a first run about other work, then
// a run of turns tool turns. It checks every request as it arrives — the
// fake keeps none — and records what the test asserts.
type longTask struct {
	dial  int
	turns int

	mu        sync.Mutex
	main      int // main-loop calls of the long run
	summaries int
	largest   int    // the largest main-loop body, in tokens at three bytes a token
	over      string // the first request that passed the dial
	compacted int    // main-loop requests that opened with the compaction envelope
	wrongPin  string // the first envelope that pinned another request
	orphan    string // the first request with a tool result but not its call
}

func (l *longTask) script(req modeltest.ChatRequest) modeltest.Reply {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range req.Messages {
		if m.Role == "system" && strings.Contains(m.Content, "You compact the history") {
			l.summaries++
			return modeltest.TextReply(fmt.Sprintf("Goal: fetch every Brontë page. Done: pages up to about %d fetched with read_file. Next: keep going.", l.main))
		}
	}
	if !strings.Contains(strings.Join(userTexts(req), " "), "Fetch all the Brontë pages") {
		return modeltest.TextReply("Indexed the Marlowe letters.")
	}
	l.main++
	if tokens := len(req.Raw) / 3; tokens > l.largest {
		l.largest = tokens
		if tokens+outputReserve(l.dial) > l.dial && l.over == "" {
			l.over = fmt.Sprintf("call %d: %d tokens", l.main, tokens)
		}
	}
	calls := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == "tool" && !calls[m.ToolCallID] && l.orphan == "" {
			l.orphan = fmt.Sprintf("call %d: result %s", l.main, m.ToolCallID)
		}
		if m.Role == "user" && strings.HasPrefix(m.Content, "<delta:compaction>") {
			l.compacted++
			pin, _, _ := strings.Cut(m.Content, "</delta:request>")
			if (!strings.Contains(pin, "Fetch all the Brontë pages") || strings.Contains(pin, "Marlowe")) && l.wrongPin == "" {
				l.wrongPin = pin
			}
		}
	}
	if l.main > l.turns {
		return modeltest.TextReply(fmt.Sprintf("fetched %d pages", l.turns))
	}
	return modeltest.ToolReply(modeltest.ToolCall{ID: fmt.Sprintf("call_%d", l.main), Name: "read_file",
		Arguments: fmt.Sprintf(`{"path":"pages/p%d.txt"}`, l.main%10)})
}

func userTexts(req modeltest.ChatRequest) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// runLongTask runs the threaded session against a daemon at dial and
// returns the script's record and the long run's final task object.
func runLongTask(t *testing.T, dial, turns int) (*longTask, map[string]any, []map[string]any) {
	t.Helper()
	l := &longTask{dial: dial, turns: turns}
	fake, err := modeltest.Start(l.script)
	if err != nil {
		t.Fatal(err)
	}
	fake.ForgetRequests()
	t.Cleanup(func() { fake.Close() })
	d := newDaemon(t, fake, fmt.Sprintf("DELTA_COMPACT_AT_TOKENS=%d", dial),
		fmt.Sprintf("DELTA_MAX_STEPS=%d", turns+10), "DELTA_MAX_TOKENS=1000000000000", "DELTA_MAX_COST_USD=1000000")
	pages := filepath.Join(d.dir, "ws", "pages")
	if err := os.MkdirAll(pages, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		text := strings.Repeat(fmt.Sprintf("Page %d of the Brontë ledgers, entry %d. ", i, i*7), 25)
		if err := os.WriteFile(filepath.Join(pages, fmt.Sprintf("p%d.txt", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, first := d.call("POST", "/v1/responses", `{"input":"Index the Marlowe letters."}`)
	if s != 200 || first["status"] != "completed" {
		t.Fatalf("first run: %d %v", s, first)
	}
	body, _ := json.Marshal(map[string]any{"input": "Fetch all the Brontë pages, one read_file call each.", "previous_response_id": first["id"]})
	s, task := d.call("POST", "/v1/tasks", string(body))
	if s != 202 {
		t.Fatalf("long run: %d %v", s, task)
	}
	id := task["id"].(string)
	// A bail-out, not a timing assertion: a healthy run takes seconds.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, task = d.call("GET", "/v1/tasks/"+id, "")
		if st := task["status"]; st != "queued" && st != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long run is still %v; log tail:\n%s", task["status"], tailText(d.logText(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if task["status"] != "done" {
		t.Fatalf("the long run ended %v: %v\nlog tail:\n%s", task["status"], task, tailText(d.logText(), 3000))
	}
	return l, task, compactionEvents(t, d, id)
}

func prepared(evs []map[string]any) int {
	n := 0
	for _, e := range evs {
		if e["prepared"] == true {
			n++
		}
	}
	return n
}

// compactionEvents pages through a task's events for its compactions.
func compactionEvents(t *testing.T, d *daemon, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	since := 0.0
	for {
		s, page := d.call("GET", fmt.Sprintf("/v1/tasks/%s/events?since=%d&limit=500", id, int64(since)), "")
		evs, _ := page["events"].([]any)
		if s != 200 || len(evs) == 0 {
			return out
		}
		for _, e := range evs {
			ev := e.(map[string]any)
			since = ev["id"].(float64)
			if ev["name"] == "compaction" {
				out = append(out, ev["data"].(map[string]any))
			}
		}
	}
}

func tailText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (l *longTask) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("dial %d: %d main calls, %d summaries, largest request %d tokens (+%d reserve)", l.dial, l.main, l.summaries, l.largest, outputReserve(l.dial))
	if l.main != l.turns+1 {
		t.Fatalf("%d main calls, want %d", l.main, l.turns+1)
	}
	if l.summaries == 0 || l.compacted == 0 {
		t.Fatalf("%d summaries and %d compacted requests in a run that outgrew its dial", l.summaries, l.compacted)
	}
	if l.over != "" {
		t.Fatalf("a request passed the dial of %d with its %d-token reserve: %s", l.dial, outputReserve(l.dial), l.over)
	}
	if l.wrongPin != "" {
		t.Fatalf("an envelope pinned another request than this run's:\n%s", l.wrongPin)
	}
	if l.orphan != "" {
		t.Fatalf("compaction split a turn: %s", l.orphan)
	}
}

// TestThousandTurnRunStaysUnderTheDial: a 1,000-turn tool run at
// DELTA_COMPACT_AT_TOKENS=40000 finishes; no request the model received
// passed the dial with the reply's reserve, and every compacted window
// pins this run's own request, not the thread's first one.
func TestThousandTurnRunStaysUnderTheDial(t *testing.T) {
	l, task, evs := runLongTask(t, 40000, 1000)
	l.check(t)
	// Every summary became a compaction but at most one made ahead that the
	// run finished before needing.
	if len(evs) > l.summaries || l.summaries > len(evs)+1 {
		t.Fatalf("%d compaction events for %d summaries", len(evs), l.summaries)
	}
	t.Logf("tail budget at dial 40000: %v tokens; %d compactions, %d of them prepared ahead", evs[0]["tail_budget_tokens"], len(evs), prepared(evs))
	if res, _ := task["result"].(map[string]any); res == nil || res["output_text"] != "fetched 1000 pages" {
		t.Fatalf("result %v", task["result"])
	}
}

// TestDialBelowTheTail: at a dial below the flat 24,000-token tail the tail
// shrinks to three quarters of the room the fixed parts leave, and the run
// still finishes under the dial.
func TestDialBelowTheTail(t *testing.T) {
	l, _, evs := runLongTask(t, 20000, 150)
	l.check(t)
	for _, e := range evs {
		if tb := e["tail_budget_tokens"].(float64); tb >= 24000 || tb <= 0 {
			t.Fatalf("tail budget %v at a dial of 20000, want it shrunk below 24000", tb)
		}
	}
	t.Logf("tail budget at dial 20000: %v tokens; %d compactions, %d of them prepared ahead", evs[0]["tail_budget_tokens"], len(evs), prepared(evs))
}

// TestSmallDialCompacts: a dial under what the fixed reply reserve and
// summary room used to take with the default tools (about 15,000 tokens)
// compacts and keeps every request under it, instead of sending the whole
// conversation until the model refused it.
func TestSmallDialCompacts(t *testing.T) {
	l, _, evs := runLongTask(t, 13000, 150)
	l.check(t)
	t.Logf("tail budget at dial 13000: %v tokens; %d compactions", evs[0]["tail_budget_tokens"], len(evs))
}
