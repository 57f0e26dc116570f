// Package todo is the model's working plan: a short per-session list of
// items, each pending, doing or done, kept by the store and re-injected every
// turn as a user-role block. Because the block is rebuilt from the table
// rather than living in the message history, the plan survives compaction.
//
// The plan is bounded: a call that would outgrow the budget is refused with
// a result telling the model to shorten it (and to keep longer notes in a
// workspace file), and the previous plan stays.
package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/tool"
)

// Name is the tool's name.
const Name = "todo"

// BlockPrefix opens the per-turn plan block, so providers and tests can tell
// it from the user's own words.
const BlockPrefix = "<delta:todo>"

// Statuses an item may have.
const (
	Pending = "pending"
	Doing   = "doing"
	Done    = "done"
)

// Default budget of one plan.
const (
	DefaultMaxItems = 30
	DefaultMaxChars = 2000
)

// Item is one line of the plan.
type Item struct {
	Text   string `json:"text" jsonschema:"what to do, one short line"`
	Status string `json:"status" jsonschema:"pending, doing or done"`
}

// Options configures Plans.
type Options struct {
	MaxItems int // default DefaultMaxItems
	MaxChars int // total characters of all item texts; default DefaultMaxChars
	Logger   *slog.Logger
	Now      func() time.Time
	// Cache keeps the plans read in memory, written through by Set, so a
	// turn's block costs no read of the table. Only for a process that is
	// the one writer of every plan (a daemon on its SQLite file); workers
	// sharing a database read each time, since a session's next run may
	// go to another worker.
	Cache bool
}

// Storage keeps one plan document per session (*store.Store). TodoPlan
// returns "" for a session without a plan; SetTodoPlan with "" deletes it.
type Storage interface {
	TodoPlan(ctx context.Context, sessionID string) (string, error)
	SetTodoPlan(ctx context.Context, sessionID, items string, at time.Time) error
}

// Plans keeps the sessions' plans, each a JSON array of items, in storage.
type Plans struct {
	st Storage
	o  Options

	mu    sync.Mutex
	cache map[string]string // session id → its stored plan ("" = none), with Options.Cache
	// sets counts the writes: a read that a write overlapped is not
	// cached, as it may hold the plan from before the write.
	sets uint64
}

// cacheMax bounds the cached plans; past it the cache starts over.
const cacheMax = 4096

// New fills defaults.
func New(st Storage, o Options) *Plans {
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Plans{st: st, o: o}
}

// Get returns a session's plan; a session without one has an empty plan.
func (p *Plans) Get(ctx context.Context, sessionID string) ([]Item, error) {
	raw, err := p.stored(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if raw == "" {
		return nil, nil
	}
	var items []Item
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, fmt.Errorf("decode todo plan of session %s: %w", sessionID, err)
	}
	return items, nil
}

// stored is a session's plan document as stored, from the cache when it
// holds it.
func (p *Plans) stored(ctx context.Context, sessionID string) (string, error) {
	if !p.o.Cache {
		return p.st.TodoPlan(ctx, sessionID)
	}
	p.mu.Lock()
	raw, ok := p.cache[sessionID]
	sets := p.sets
	p.mu.Unlock()
	if ok {
		return raw, nil
	}
	raw, err := p.st.TodoPlan(ctx, sessionID)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.sets == sets {
		p.keep(sessionID, raw)
	}
	p.mu.Unlock()
	return raw, nil
}

// keep caches a session's plan document; p.mu is held.
func (p *Plans) keep(sessionID, raw string) {
	if p.cache == nil || len(p.cache) >= cacheMax {
		p.cache = make(map[string]string)
	}
	p.cache[sessionID] = raw
}

// Set replaces a session's plan; an empty plan deletes the row. Items must
// already be valid (see check).
func (p *Plans) Set(ctx context.Context, sessionID string, items []Item) error {
	raw := ""
	if len(items) > 0 {
		b, err := json.Marshal(items)
		if err != nil {
			return fmt.Errorf("encode todo plan: %w", err)
		}
		raw = string(b)
	}
	err := p.st.SetTodoPlan(ctx, sessionID, raw, p.o.Now())
	if p.o.Cache {
		p.mu.Lock()
		p.sets++
		if err == nil {
			p.keep(sessionID, raw)
		} else {
			delete(p.cache, sessionID) // what the table holds now is read again
		}
		p.mu.Unlock()
	}
	return err
}

// Block is the plan as the per-turn user-role block, or "" when the session
// has none. A read failure is logged and yields "": a missing plan must not
// stop a run.
func (p *Plans) Block(ctx context.Context, sessionID string) string {
	items, err := p.Get(ctx, sessionID)
	if err != nil {
		p.o.Logger.Warn("todo plan not injected", "session", sessionID, "err", err)
		return ""
	}
	if len(items) == 0 {
		return ""
	}
	return BlockPrefix + "\nYour working plan (update it with the todo tool; each call replaces it whole):\n" +
		render(items) + "</delta:todo>"
}

type params struct {
	Items []Item `json:"items" jsonschema:"the whole plan, in order; it replaces the previous one; an empty list clears it"`
}

const description = "Keep your working plan for this session: a short ordered list of items, each pending, doing or done. " +
	"Each call replaces the whole plan, and the plan is shown to you again at the start of every turn, so use it to " +
	"track multi-step work and running findings. Keep it short (at most %d items and %d characters in all): " +
	"move longer notes into a workspace file and refer to that file from an item."

// Tool is the todo tool over these plans. It counts as read-only: replaying
// it after an interruption sets the same plan again.
func (p *Plans) Tool() tool.Tool {
	return tool.Func(Name, fmt.Sprintf(description, p.o.MaxItems, p.o.MaxChars), true,
		func(ctx context.Context, c tool.Call, in params) (tool.Result, error) {
			if c.SessionID == "" {
				return tool.Errorf("the todo plan is kept per session and this call has none"), nil
			}
			items, problem := p.check(in.Items)
			if problem != "" {
				return tool.Errorf("%s", problem), nil
			}
			if err := ctx.Err(); err != nil {
				return tool.Result{}, err
			}
			if err := p.Set(ctx, c.SessionID, items); err != nil {
				return tool.Result{}, err
			}
			if len(items) == 0 {
				return tool.Text("The plan is now empty."), nil
			}
			return tool.Text("Plan saved:\n" + render(items)), nil
		})
}

// check normalises items (trimmed text, lower-case status) and returns a
// message for the model when they are invalid or over budget.
func (p *Plans) check(in []Item) ([]Item, string) {
	out := make([]Item, 0, len(in))
	chars := 0
	var problems []string
	for i, it := range in {
		it.Text = strings.TrimSpace(it.Text)
		it.Status = strings.ToLower(strings.TrimSpace(it.Status))
		switch {
		case it.Text == "":
			problems = append(problems, fmt.Sprintf("items[%d].text is empty", i))
		case strings.ContainsAny(it.Text, "\n\r"):
			problems = append(problems, fmt.Sprintf("items[%d].text has a line break; keep each item to one line", i))
		}
		switch it.Status {
		case Pending, Doing, Done:
		default:
			problems = append(problems, fmt.Sprintf("items[%d].status is %q; want pending, doing or done", i, it.Status))
		}
		chars += utf8.RuneCountInString(it.Text)
		out = append(out, it)
	}
	if len(problems) > 0 {
		return nil, "the plan was not saved: " + strings.Join(problems, "; ")
	}
	if len(out) > p.o.MaxItems || chars > p.o.MaxChars {
		return nil, fmt.Sprintf("the plan was not saved: it has %d items and %d characters, over the budget of %d items and %d characters. "+
			"Shorten it: drop or merge done items, summarise, and move longer notes into a workspace file (write_file) that an item refers to. "+
			"The previous plan is unchanged.", len(out), chars, p.o.MaxItems, p.o.MaxChars)
	}
	return out, ""
}

func render(items []Item) string {
	var b strings.Builder
	for i, it := range items {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, it.Status, it.Text)
	}
	return b.String()
}
