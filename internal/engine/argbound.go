package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// Argument bounding (DELTA_TOOL_ARG_MAX_BYTES).
//
// A tool call's arguments live on its assistant message and are replayed on
// every later turn, so a large write pays for itself again on each of them.
// Once a call has succeeded its stored arguments are shrunk, largest values
// first, until they fit; the run journal keeps them whole.

// elidedPrefix opens every placeholder. The guard in invoke refuses a call
// whose arguments carry one (elidedPattern), so a model can never write the
// placeholder where the real content belongs.
const elidedPrefix = "[delta:elided "

// elidedPattern matches a placeholder as boundArgs writes it: the prefix, a
// byte count and "bytes". Text that merely mentions the prefix (source code
// holding the format string, say) is not refused.
var elidedPattern = regexp.MustCompile(`\[delta:elided [0-9]+ bytes`)

// elidedKey is the single key of the object that stands in for arguments
// that cannot be bounded value by value (not an object, not JSON, or keys
// alone too long).
const elidedKey = "_elided"

// maxPlaceholderCallID caps how much of a call id a placeholder quotes.
const maxPlaceholderCallID = 64

// hasPlaceholder reports whether raw tool arguments carry a placeholder.
func hasPlaceholder(args []byte) bool {
	return bytes.Contains(args, []byte("delta:elided")) && elidedPattern.Match(args)
}

// boundArgs returns args shrunk so that their stored form is at most max
// bytes, and whether anything changed. The stored form is what json.Marshal
// makes of a json.RawMessage (compact, HTML-escaped), because that is how the
// store writes a message's tool calls; every output is already in that form.
//
// Arguments already within max are returned as they are, not even
// re-serialised. Otherwise, for a JSON object, string values anywhere in it
// are replaced by a placeholder, largest first, until the object fits; if the
// strings are not enough, whole top-level values go next, largest first (a
// container is always larger than anything inside it, so the largest value
// at any depth is a top-level one). Keys, their order and every value that did
// not need to go survive byte for byte. Anything else over max (not an
// object, not valid JSON, or keys alone too long) becomes a single
// placeholder object, and when even that does not fit, {}. The result is
// always valid JSON of at most max bytes for any max >= 2; a max of 1 is
// taken as 2, since no JSON object is shorter than {}. max <= 0 disables
// bounding.
func boundArgs(args json.RawMessage, max int, callID string) (json.RawMessage, bool) {
	if max <= 0 {
		return args, false
	}
	if max < len("{}") {
		max = len("{}")
	}
	if len(args) <= max && !needsHTMLEscape(args) {
		return args, false
	}
	canon, err := canonical(args)
	if err != nil {
		if len(args) <= max {
			return args, false // not ours to repair: checkpoint already stores invalid arguments as a JSON string
		}
		return wholePlaceholder(len(args), max, callID), true
	}
	if len(canon) <= max {
		if len(canon) < len(args) {
			return canon, true // lossless: only whitespace went
		}
		return args, false
	}
	if canon[0] != '{' {
		return wholePlaceholder(len(canon), max, callID), true
	}
	if out, ok := elideValues(canon, max, callID); ok {
		return out, true
	}
	return wholePlaceholder(len(canon), max, callID), true
}

// canonical is the stored form of JSON: compact and HTML-escaped, as
// json.Marshal writes a json.RawMessage. Invalid JSON is an error.
func canonical(args []byte) ([]byte, error) {
	var c, h bytes.Buffer
	c.Grow(len(args))
	if err := json.Compact(&c, args); err != nil {
		return nil, err
	}
	if !needsHTMLEscape(c.Bytes()) {
		return c.Bytes(), nil
	}
	h.Grow(c.Len() + c.Len()/8)
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes(), nil
}

// needsHTMLEscape reports whether json.Marshal would lengthen args by
// escaping (<, >, &, U+2028, U+2029).
func needsHTMLEscape(args []byte) bool {
	return bytes.ContainsAny(args, "<>&") || bytes.Contains(args, []byte("\u2028")) || bytes.Contains(args, []byte("\u2029"))
}

// placeholder is the stored (JSON-encoded) text that replaces a value of n
// bytes.
func placeholder(n int, callID string) []byte {
	s := fmt.Sprintf("%s%d bytes — full arguments kept in the run journal]", elidedPrefix, n)
	if callID != "" && len(callID) <= maxPlaceholderCallID {
		s = fmt.Sprintf("%s%d bytes of call %s — full arguments kept in the run journal]", elidedPrefix, n, callID)
	}
	b, _ := json.Marshal(s) // HTML-escaped like the rest of the stored form
	return b
}

// wholePlaceholder replaces arguments of n bytes outright: a placeholder
// object, a shorter one, or {} — the first that fits.
func wholePlaceholder(n, max int, callID string) json.RawMessage {
	key, _ := json.Marshal(elidedKey)
	short, _ := json.Marshal(fmt.Sprintf("%s%d bytes]", elidedPrefix, n))
	for _, ph := range [][]byte{placeholder(n, callID), short} {
		obj := slices.Concat([]byte("{"), key, []byte(":"), ph, []byte("}"))
		if len(obj) <= max {
			return obj
		}
	}
	return json.RawMessage(`{}`)
}

// span is a value inside the canonical arguments: bytes [start, end).
type span struct {
	start, end int
	top        int // index of the top-level member it belongs to
}

func (s span) size() int { return s.end - s.start }

// elideValues shrinks a canonical JSON object to at most max bytes by
// replacing values, or reports false when replacing every top-level value
// is still not enough.
func elideValues(canon []byte, max int, callID string) (json.RawMessage, bool) {
	strs, tops := scanObject(canon)
	total := len(canon)
	saved := make([]int, len(tops)) // bytes saved inside each top-level value so far
	var repl []span                 // spans to replace, each with placeholder(size)

	// First strings, at any depth, largest first (document order on ties).
	slices.SortStableFunc(strs, func(a, b span) int { return cmp.Compare(b.size(), a.size()) })
	for _, s := range strs {
		if total <= max {
			break
		}
		gain := s.size() - len(placeholder(s.size(), callID))
		if gain <= 0 {
			break // sorted: no smaller string gains either
		}
		repl = append(repl, s)
		saved[s.top] += gain
		total -= gain
	}

	// Then whole top-level values, largest (as they stand now) first.
	if total > max {
		order := make([]int, len(tops))
		for i := range order {
			order[i] = i
		}
		cur := func(i int) int { return tops[i].size() - saved[i] }
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cur(b), cur(a)) })
		for _, i := range order {
			if total <= max {
				break
			}
			gain := cur(i) - len(placeholder(tops[i].size(), callID))
			if gain <= 0 {
				continue
			}
			// The whole value goes: drop the string spans inside it.
			repl = slices.DeleteFunc(repl, func(s span) bool { return s.top == i })
			repl = append(repl, tops[i])
			total -= gain
		}
	}
	if total > max {
		return nil, false
	}

	slices.SortFunc(repl, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	out := make([]byte, 0, total)
	at := 0
	for _, s := range repl {
		out = append(out, canon[at:s.start]...)
		out = append(out, placeholder(s.size(), callID)...)
		at = s.end
	}
	out = append(out, canon[at:]...)
	if len(out) > max { // the arithmetic above is the plan; the bytes are the proof
		return nil, false
	}
	return out, true
}

// scanObject walks a canonical (compact, valid) JSON object and returns the
// spans of every string value at any depth (keys excluded) and of each
// top-level member's value, in document order.
func scanObject(b []byte) (strs, tops []span) {
	type frame struct{ object, wantKey bool }
	var stack []frame
	topStart := -1
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{':
			stack = append(stack, frame{object: true, wantKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) == 1 && topStart >= 0 {
				tops = append(tops, span{start: topStart, end: i, top: len(tops)})
				topStart = -1
			}
			stack = stack[:len(stack)-1]
		case ':':
			if len(stack) == 1 {
				topStart = i + 1
			}
		case ',':
			f := &stack[len(stack)-1]
			if f.object {
				f.wantKey = true
			}
			if len(stack) == 1 && topStart >= 0 {
				tops = append(tops, span{start: topStart, end: i, top: len(tops)})
				topStart = -1
			}
		case '"':
			end := stringEnd(b, i)
			f := &stack[len(stack)-1]
			if f.object && f.wantKey {
				f.wantKey = false
			} else {
				strs = append(strs, span{start: i, end: end, top: len(tops)})
			}
			i = end - 1
		}
		// Numbers, true, false and null are skipped byte by byte: none of
		// their bytes is structural.
	}
	return strs, tops
}

// stringEnd returns the index just past the string that opens at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}
