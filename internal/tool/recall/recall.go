// Package recall is the tool that reads this conversation's earlier turns
// back, including those no longer in the model's window: a keyword search
// over the session's messages, a list of the tool arguments that argument
// bounding shortened, and a paged read of one of them from the run journal.
//
// The search is lexical (see store.Recall): a paraphrase that shares no word
// with the original does not match. It is scoped to the calling run's own
// session, so one conversation can never read another's transcript.
package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/deltaharness/delta/internal/clip"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// Name is the tool's name.
const Name = "recall"

// Bounds of one answer.
const (
	DefaultHits  = 5
	MaxHits      = 10
	WholeMessage = 4000  // a message up to this many characters comes back whole
	Excerpt      = 1200  // otherwise this much around the first matching word
	MaxText      = 16000 // characters of one search answer in all
	Page         = 8000  // characters of one artifact page
)

// Store is what recall reads: the session's messages and the run journal.
type Store interface {
	Recall(ctx context.Context, q store.RecallQuery) ([]store.RecallHit, error)
	BoundedCalls(ctx context.Context, sessionID string, limit int) ([]store.BoundedCall, error)
	JournalCall(ctx context.Context, sessionID string, runSeq int64, callID string) (string, json.RawMessage, error)
}

// Recorder keeps the durable recall event (and shows it live).
type Recorder func(ctx context.Context, e event.Event)

// Options configures the tool.
type Options struct {
	Record Recorder // nil: no event
	Logger *slog.Logger
}

type params struct {
	Query    string    `json:"query,omitempty" jsonschema:"words to look for in this conversation's earlier turns (names, ids, numbers, key terms); omit query and artifact to list the tool arguments that were shortened"`
	Limit    int       `json:"limit,omitempty" jsonschema:"most messages to return, 1-10 (default 5)"`
	Artifact *artifact `json:"artifact,omitempty" jsonschema:"read back one shortened tool argument, as listed by recall with no arguments"`
	Offset   int       `json:"offset,omitempty" jsonschema:"with artifact: the character to start the page at (default 0)"`
}

type artifact struct {
	RunSeq int64  `json:"run_seq" jsonschema:"the run number recall listed"`
	CallID string `json:"call_id" jsonschema:"the tool call id recall listed"`
	Field  string `json:"field,omitempty" jsonschema:"the top-level argument to read; omit for the whole arguments"`
}

const description = "Search this conversation's earlier turns, including ones no longer in your context: give `query` " +
	"words (names, ids, numbers, key terms; any word may match, rare words count most, prefixes match) and get the " +
	"matching messages back whole, with the saved file of any large result. Use it instead of re-running a search or " +
	"fetch you already did. With no arguments it lists the tool arguments that were shortened in the history; " +
	"`artifact` {run_seq, call_id, field} reads one back, a page at a time (`offset`)."

// New returns the recall tool over st. It is read-only: it changes nothing.
func New(st Store, o Options) tool.Tool {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return tool.Func(Name, description, true, func(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
		if c.SessionID == "" {
			return tool.Errorf("recall searches the current conversation and this call has none"), nil
		}
		switch {
		case p.Artifact != nil:
			return readArtifact(ctx, st, o, c, p)
		case strings.TrimSpace(p.Query) != "":
			return search(ctx, st, o, c, p)
		default:
			return listBounded(ctx, st, o, c)
		}
	})
}

func record(ctx context.Context, o Options, c tool.Call, data map[string]any) {
	if o.Record != nil {
		o.Record(ctx, event.New(c.RunID, c.SessionID, event.Recall, data))
	}
}

func search(ctx context.Context, st Store, o Options, c tool.Call, p params) (tool.Result, error) {
	limit := p.Limit
	switch {
	case limit <= 0:
		limit = DefaultHits
	case limit > MaxHits:
		limit = MaxHits
	}
	hits, err := st.Recall(ctx, store.RecallQuery{SessionID: c.SessionID, RunID: c.RunID, Text: p.Query, Limit: limit})
	if err != nil {
		return tool.Result{}, err
	}
	// The query is named clipped, in the answer as in the event: the model
	// has it in its own call, and a long one would only fill the window.
	shown := clip.Runes(p.Query, 200)
	record(ctx, o, c, map[string]any{"mode": "search", "query": shown, "hits": len(hits)})
	if len(hits) == 0 {
		return tool.Text(fmt.Sprintf("No earlier message matches %q. Try other words: an exact name, id or number from the turn you need.", shown)), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d earlier message(s) match %q, best first:\n", len(hits), shown)
	for _, h := range hits {
		entry := render(h, p.Query)
		if b.Len()+len(entry) > MaxText {
			fmt.Fprintf(&b, "\n[more matches left out to keep this answer short; narrow the query]\n")
			break
		}
		b.WriteString(entry)
	}
	return tool.Text(b.String()), nil
}

// spillPath finds the file a spilled tool result was saved to.
var spillPath = regexp.MustCompile(`full result saved at (\S+) — read it with read_file`)

func render(h store.RecallHit, query string) string {
	var b strings.Builder
	who := h.Role
	if h.Role == "tool" {
		who = "tool result of " + h.Name
		if h.ToolCallID != "" {
			who += " (call " + h.ToolCallID + ")"
		}
	}
	fmt.Fprintf(&b, "\n--- message %d · %s · %s · run %s", h.ID, who, h.Time.Format("2006-01-02 15:04:05Z"), h.RunID)
	if h.Phrase {
		b.WriteString(" · whole phrase")
	}
	b.WriteString(" ---\n")
	if h.Content != "" {
		b.WriteString(excerpt(h.Content, query))
		b.WriteString("\n")
	}
	for _, call := range h.ToolCalls {
		fmt.Fprintf(&b, "called %s (%s) with %s\n", call.Name, call.ID, excerpt(string(call.Arguments), query))
	}
	if m := spillPath.FindStringSubmatch(h.Content); m != nil {
		fmt.Fprintf(&b, "spilled: the whole result is in %s\n", m[1])
	}
	return b.String()
}

// excerpt is text whole when it is reasonably sized, else the part around
// the first query word found in it. Words are found as the search matched
// them: case and Latin diacritics folded ("maria" finds "María"), so the
// part shown holds the match.
func excerpt(text, query string) string {
	if utf8.RuneCountInString(text) <= WholeMessage {
		return text
	}
	folded, at := foldWithOffsets(text)
	first := -1
	for _, w := range strings.Fields(fold(query)) {
		if len(w) < 3 {
			continue
		}
		if i := strings.Index(folded, w); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	start := 0
	if first >= 0 {
		start = max(0, at[first]-Excerpt/3)
	}
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	end := min(len(text), start+Excerpt)
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "[…%d bytes before…] ", start)
	}
	b.WriteString(text[start:end])
	if end < len(text) {
		fmt.Fprintf(&b, " […%d bytes after…]", len(text)-end)
	}
	return b.String()
}

// fold is s lowercased with its combining marks dropped after canonical
// decomposition ("María" → "maria").
func fold(s string) string {
	f, _ := foldWithOffsets(s)
	return f
}

// foldWithOffsets folds s rune by rune and maps each byte of the result
// to the byte of s its rune came from.
func foldWithOffsets(s string) (string, []int) {
	var b strings.Builder
	at := make([]int, 0, len(s))
	var buf [utf8.UTFMax]byte
	for i, r := range s {
		if r < utf8.RuneSelf { // ASCII: nothing to decompose
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
			at = append(at, i)
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		for _, d := range norm.NFD.String(string(buf[:n])) {
			if unicode.Is(unicode.Mn, d) {
				continue
			}
			d = unicode.ToLower(d)
			for range utf8.RuneLen(d) {
				at = append(at, i)
			}
			b.WriteRune(d)
		}
	}
	return b.String(), at
}

func listBounded(ctx context.Context, st Store, o Options, c tool.Call) (tool.Result, error) {
	calls, err := st.BoundedCalls(ctx, c.SessionID, 50)
	if err != nil {
		return tool.Result{}, err
	}
	record(ctx, o, c, map[string]any{"mode": "list", "hits": len(calls)})
	if len(calls) == 0 {
		return tool.Text("No tool arguments were shortened in this conversation. To search earlier turns, call recall with a query."), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d call(s) had arguments shortened after they succeeded (newest first). Read one back with artifact {run_seq, call_id, field}:\n", len(calls))
	for _, bc := range calls {
		fmt.Fprintf(&b, "- run_seq %d, call_id %s, %s: %s\n", bc.RunSeq, bc.Call.ID, bc.Call.Name, strings.Join(elidedFields(bc.Call.Arguments), ", "))
	}
	return tool.Text(b.String()), nil
}

// elidedFields names the top-level arguments that hold a placeholder.
func elidedFields(args json.RawMessage) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return []string{"(whole arguments)"}
	}
	var out []string
	for k, v := range obj {
		if strings.Contains(string(v), store.ElidedMarker) {
			out = append(out, "field "+k)
		}
	}
	if len(out) == 0 {
		return []string{"(whole arguments)"}
	}
	slices.Sort(out)
	return out
}

func readArtifact(ctx context.Context, st Store, o Options, c tool.Call, p params) (tool.Result, error) {
	a := p.Artifact
	if a.RunSeq <= 0 || strings.TrimSpace(a.CallID) == "" {
		return tool.Errorf("artifact needs run_seq and call_id as recall listed them; call recall with no arguments to list them"), nil
	}
	if p.Offset < 0 {
		return tool.Errorf("offset must be 0 or more"), nil
	}
	name, args, err := st.JournalCall(ctx, c.SessionID, a.RunSeq, a.CallID)
	if errors.Is(err, store.ErrNotFound) {
		return tool.Errorf("no call %s in run %d of this conversation is kept (wrong ids, or the journal has been pruned); call recall with no arguments to list what can be read", a.CallID, a.RunSeq), nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	text := string(args)
	if a.Field != "" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			return tool.Errorf("the arguments of call %s are not a JSON object; omit field to read them whole", a.CallID), nil
		}
		v, ok := obj[a.Field]
		if !ok {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return tool.Errorf("call %s has no argument %q; it has: %s", a.CallID, a.Field, strings.Join(keys, ", ")), nil
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			text = s
		} else {
			text = string(v)
		}
	}
	record(ctx, o, c, map[string]any{"mode": "artifact", "run_seq": a.RunSeq, "call_id": a.CallID, "field": a.Field})
	runes := []rune(text)
	if p.Offset > len(runes) {
		return tool.Errorf("offset %d is past the end: the value has %d characters", p.Offset, len(runes)), nil
	}
	end := min(len(runes), p.Offset+Page)
	var b strings.Builder
	fmt.Fprintf(&b, "%s call %s (run %d)", name, a.CallID, a.RunSeq)
	if a.Field != "" {
		fmt.Fprintf(&b, ", argument %s", a.Field)
	}
	fmt.Fprintf(&b, ": characters %d–%d of %d", p.Offset, end, len(runes))
	if end < len(runes) {
		fmt.Fprintf(&b, "; the next page starts at offset %d", end)
	}
	b.WriteString("\n")
	b.WriteString(string(runes[p.Offset:end]))
	return tool.Text(b.String()), nil
}
