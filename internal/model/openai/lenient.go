package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The lenient reading below is what openai-go's decoder made of a chunk or
// completion whose fields have unexpected types, kept so that such a body
// reads as it always did without linking the SDK's root package (its
// generated types and their registrations are a quarter of the binary).
// The rules, each checked against the SDK by FuzzLenientChunkMatchesSDK
// and FuzzCompletionMatchesSDK:
//   - member names match exactly (no case folding) and the first of a
//     repeated name wins;
//   - a null member is as if absent (an unknown one read raw is "null");
//   - a string field takes a string's text (escapes decoded, other bytes
//     kept as they are), a number's text, true, false, or an object's or
//     array's raw JSON;
//   - an integer field takes a number (truncated), a string holding one,
//     true as 1, anything else as 0;
//   - an object field that holds anything but an object stays empty;
//   - an array field that holds anything but an array, or an array with a
//     member that is neither an object nor null, stays empty.

// lenientMembers calls f with each member of the object raw, the first of
// a repeated name only (a null value too: each field's reader takes it as
// absent, and an unknown member keeps its raw JSON, null or not); it reports false when raw is not an object (null
// counts as an empty object).
func lenientMembers(raw []byte, f func(name string, value []byte)) bool {
	switch kind(raw) {
	case 'n':
		return true
	case '{':
	default:
		return false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return false
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		f(name, bytes.TrimSpace(v))
	}
	return true
}

// lenientObject is lenientMembers for a nested object field: a value of
// another type leaves the field empty.
func lenientObject(raw []byte, f func(name string, value []byte)) {
	if kind(raw) == '{' {
		lenientMembers(raw, f)
	}
}

// lenientArray calls f with each element of the array raw, or not at all
// when raw is not an array or one of its elements is neither an object nor
// null (the SDK then drops the whole array).
func lenientArray(raw []byte, f func(elem []byte)) {
	if kind(raw) != '[' {
		return
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return
	}
	for i, e := range elems {
		elems[i] = bytes.TrimSpace(e)
		if k := kind(elems[i]); k != '{' && k != 'n' {
			return
		}
	}
	for _, e := range elems {
		f(e)
	}
}

// kind is the first byte of a JSON value: '{', '[', '"', 't', 'f', 'n',
// or '0' for a number.
func kind(raw []byte) byte {
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	}
	return '0'
}

// lenientString is a string field's value.
func lenientString(raw []byte) string {
	switch kind(raw) {
	case '"':
		return stringText(raw)
	case '0':
		s := raw
		if s[0] == '-' {
			s = s[1:]
		}
		for _, c := range s {
			if c < '0' || c > '9' {
				return strconv.FormatFloat(number(raw), 'f', -1, 64)
			}
		}
		return string(raw)
	case 't':
		return "true"
	case 'f':
		return "false"
	case '{', '[':
		return string(raw)
	}
	return ""
}

// lenientInt is an integer field's value.
func lenientInt(raw []byte) int64 {
	switch kind(raw) {
	case 't':
		return 1
	case '"':
		s := stringText(raw)
		if n, ok := parseInt(s); ok {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatToInt(f)
		}
		return 0
	case '0':
		f := number(raw)
		if f >= -9007199254740991 && f <= 9007199254740991 {
			return int64(f)
		}
		if n, ok := parseInt(string(raw)); ok {
			return n
		}
		return floatToInt(f)
	}
	return 0
}

func number(raw []byte) float64 {
	f, _ := strconv.ParseFloat(string(raw), 64)
	return f
}

func floatToInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// parseInt reads an optionally negative run of digits, saturating.
func parseInt(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	overflow := false
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		next := n*10 + uint64(s[i]-'0')
		if next < n {
			overflow = true
		}
		if !overflow {
			n = next
		}
	}
	if overflow {
		n = math.MaxUint64
	}
	if neg {
		if n > 1<<63 {
			return math.MinInt64, true
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(n), true
}

// stringText is the text of the JSON string raw as the SDK's decoder
// reads it: bytes outside escapes are kept as they are (invalid UTF-8
// too), and a \u escape of a surrogate takes the next \u escape with it.
func stringText(raw []byte) string {
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 5
			if utf16.IsSurrogate(r) && len(s[i:]) >= 6 && s[i] == '\\' && s[i+1] == 'u' {
				r = utf16.DecodeRune(r, hex4(s[i+2:]))
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i--
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
	}
	return string(out)
}

func hex4(s []byte) rune {
	n, _ := strconv.ParseUint(string(s[:4]), 16, 64)
	return rune(n)
}

// lenientChunk reads a chunk the strict decoder refused for a field's
// type.
func lenientChunk(data []byte) (chunk, error) { return lenientChoices(data, "delta") }

// lenientChoices reads a chunk, or a whole completion, whose choices hold
// their content under body ("delta" in a chunk, "message" in a
// completion).
func lenientChoices(data []byte, body string) (chunk, error) {
	var c chunk
	if !lenientMembers(data, func(name string, v []byte) {
		switch name {
		case "model":
			c.Model = lenientString(v)
		case "service_tier":
			c.ServiceTier = lenientString(v)
		case "usage":
			c.Usage = lenientUsage(v)
		case "choices":
			lenientArray(v, func(e []byte) {
				var ch chunkChoice
				lenientMembers(e, func(name string, v []byte) {
					switch name {
					case "index":
						ch.Index = lenientInt(v)
					case "finish_reason":
						ch.FinishReason = lenientString(v)
					case body:
						lenientDelta(v, &ch.Delta)
					}
				})
				c.Choices = append(c.Choices, ch)
			})
		}
	}) {
		return chunk{}, errNotObject
	}
	return c, nil
}

// errNotObject refuses a body that is valid JSON but no object.
var errNotObject = errors.New("not a JSON object")

func lenientDelta(raw []byte, d *chunkDelta) {
	lenientObject(raw, func(name string, v []byte) {
		switch name {
		case "content":
			d.Content = lenientString(v)
		case "reasoning":
			d.Reasoning = json.RawMessage(v)
		case "reasoning_content":
			d.ReasoningContent = json.RawMessage(v)
		case "tool_calls":
			lenientArray(v, func(e []byte) {
				var tc chunkToolCall
				lenientMembers(e, func(name string, v []byte) {
					switch name {
					case "index":
						tc.Index = lenientInt(v)
					case "id":
						tc.ID = lenientString(v)
					case "function":
						tc.Function.Name, tc.Function.Arguments = lenientFunction(v)
					}
				})
				d.ToolCalls = append(d.ToolCalls, tc)
			})
		}
	})
}

func lenientFunction(raw []byte) (name, args string) {
	lenientObject(raw, func(key string, v []byte) {
		switch key {
		case "name":
			name = lenientString(v)
		case "arguments":
			args = lenientString(v)
		}
	})
	return name, args
}

// lenientUsage is nil unless raw is an object.
func lenientUsage(raw []byte) *chunkUsage {
	if kind(raw) != '{' {
		return nil
	}
	u := &chunkUsage{}
	lenientMembers(raw, func(name string, v []byte) {
		switch name {
		case "prompt_tokens":
			u.PromptTokens = lenientInt(v)
		case "completion_tokens":
			u.CompletionTokens = lenientInt(v)
		case "cost":
			u.Cost = json.RawMessage(v)
		case "prompt_tokens_details":
			lenientObject(v, func(name string, v []byte) {
				switch name {
				case "cached_tokens":
					u.PromptTokensDetails.CachedTokens = lenientInt(v)
				case "cache_write_tokens":
					u.PromptTokensDetails.CacheWriteTokens = lenientInt(v)
				}
			})
		}
	})
	return u
}

// decodeCompletion reads a whole chat.completion object, as leniently as
// the SDK did, into a chunk's shape: each choice's message is its Delta. A
// message's tool calls have no index of their own (their position is it),
// so Index stays 0 in them.
func decodeCompletion(data []byte) (chunk, error) {
	if !json.Valid(data) {
		var v any
		return chunk{}, json.Unmarshal(data, &v) // the syntax error
	}
	c, err := lenientChoices(bytes.TrimSpace(data), "message")
	for i := range c.Choices {
		for j := range c.Choices[i].Delta.ToolCalls {
			c.Choices[i].Delta.ToolCalls[j].Index = 0
		}
	}
	return c, err
}
