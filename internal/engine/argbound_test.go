package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// stored is what the store writes for args: json.Marshal of a RawMessage.
func stored(t testing.TB, args []byte) []byte {
	t.Helper()
	b, err := json.Marshal(json.RawMessage(args))
	if err != nil {
		t.Fatalf("stored form of %q: %v", args, err)
	}
	return b
}

// topKeys returns the top-level keys of a JSON object in document order.
func topKeys(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q is not an object", b)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("keys of %q: %v", b, err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("keys of %q: %v", b, err)
		}
	}
	return keys
}

func TestBoundArgs(t *testing.T) {
	body := strings.Repeat("Dear team, the figures are attached. ", 280) // ~10 KB
	email := fmt.Sprintf(`{"to":"ops@example.com","subject":"Quarterly report","body":%q}`, body)
	pretty := "{\n  \"path\": \"notes.md\",\n  \"content\": \"short\"\n}"
	for _, tt := range []struct {
		name      string
		args      string
		max       int
		changed   bool
		keep      map[string]any // top-level (or dotted) fields that must survive as they were
		elided    []string       // fields that must now be a placeholder
		wantExact string         // when set, the exact output
		check     func(t *testing.T, got map[string]any)
	}{
		{name: "off", args: email, max: 0, changed: false, wantExact: email},
		{name: "already small is not even re-serialised", args: pretty, max: 4096, changed: false, wantExact: pretty},
		{name: "whitespace alone over the bound is compacted, nothing lost", args: pretty, max: 40, changed: true,
			wantExact: `{"path":"notes.md","content":"short"}`},
		{name: "send_email keeps to and subject, loses body", args: email, max: 256, changed: true,
			keep: map[string]any{"to": "ops@example.com", "subject": "Quarterly report"}, elided: []string{"body"}},
		{name: "nested string at depth", args: `{"doc":{"title":"Plan","content":"` + strings.Repeat("x", 5000) + `"},"tags":["a","b"]}`,
			max: 256, changed: true, keep: map[string]any{"doc.title": "Plan", "tags": []any{"a", "b"}}, elided: []string{"doc.content"}},
		{name: "largest first: a smaller large value survives when the largest is enough",
			args: `{"a":"` + strings.Repeat("a", 300) + `","b":"` + strings.Repeat("b", 600) + `","c":"small"}`,
			max:  500, changed: true, keep: map[string]any{"a": strings.Repeat("a", 300), "c": "small"}, elided: []string{"b"}},
		{name: "array of large strings: each string goes, the array stays",
			args: `{"n":3,"pages":["` + strings.Repeat("p", 2000) + `","` + strings.Repeat("q", 2000) + `","` + strings.Repeat("r", 2000) + `"]}`,
			max:  400, changed: true, keep: map[string]any{"n": float64(3)},
			check: func(t *testing.T, got map[string]any) {
				pages, _ := got["pages"].([]any)
				if len(pages) != 3 {
					t.Fatalf("pages = %v, want three placeholders", got["pages"])
				}
				for _, p := range pages {
					if s, _ := p.(string); !strings.HasPrefix(s, "[delta:elided 2002 bytes") {
						t.Fatalf("page = %q, want a placeholder for 2002 bytes", s)
					}
				}
			}},
		{name: "array of many small strings goes whole",
			args: `{"id":"job-7","rows":[` + strings.TrimSuffix(strings.Repeat(`"abcdefghij",`, 200), ",") + `]}`,
			max:  256, changed: true, keep: map[string]any{"id": "job-7"}, elided: []string{"rows"}},
		{name: "unicode survives whole or goes whole",
			args: `{"name":"Zoë Ångström","text":"` + strings.Repeat("日本語のテキスト", 500) + `"}`,
			max:  256, changed: true, keep: map[string]any{"name": "Zoë Ångström"}, elided: []string{"text"}},
		{name: "HTML escaping of the stored form counts",
			args: `{"path":"a.html","html":"` + strings.Repeat("<p>", 100) + `"}`,
			max:  400, changed: true, keep: map[string]any{"path": "a.html"}, elided: []string{"html"}},
		{name: "not an object becomes a placeholder object", args: `"` + strings.Repeat("s", 1000) + `"`, max: 256, changed: true,
			elided: []string{"_elided"}},
		{name: "an array becomes a placeholder object", args: `[` + strings.Repeat(`1,`, 500) + `1]`, max: 256, changed: true,
			elided: []string{"_elided"}},
		{name: "invalid JSON over the bound becomes a placeholder object", args: `{"text": ` + strings.Repeat("u", 1000), max: 256,
			changed: true, elided: []string{"_elided"}},
		{name: "invalid JSON within the bound is left alone", args: `{"text": unquoted`, max: 256, changed: false,
			wantExact: `{"text": unquoted`},
		{name: "keys alone too long: one placeholder object",
			args: `{` + strings.TrimSuffix(strings.Repeat(`"a_rather_long_key_name_here_0001":1,`, 40), ",") + `}`,
			max:  256, changed: true, elided: []string{"_elided"}},
		{name: "tiny bound: the empty object", args: email, max: 2, changed: true, wantExact: `{}`},
		{name: "a bound of one byte is taken as two", args: email, max: 1, changed: true, wantExact: `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, changed := boundArgs(json.RawMessage(tt.args), tt.max, "call_1")
			if changed != tt.changed {
				t.Fatalf("changed = %v, want %v (out %.200s)", changed, tt.changed, out)
			}
			if tt.wantExact != "" && string(out) != tt.wantExact {
				t.Fatalf("out = %q, want %q", out, tt.wantExact)
			}
			if !changed {
				return
			}
			if !json.Valid(out) || !utf8.Valid(out) {
				t.Fatalf("out is not valid JSON/UTF-8: %q", out)
			}
			if n := len(stored(t, out)); n > max(tt.max, 2) {
				t.Fatalf("stored arguments are %d bytes, bound %d: %s", n, tt.max, out)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("out %q: %v", out, err)
			}
			var in map[string]any
			if json.Unmarshal([]byte(tt.args), &in) == nil && len(tt.elided) > 0 && tt.elided[0] != "_elided" {
				if !slices.Equal(topKeys(t, out), topKeys(t, []byte(tt.args))) {
					t.Fatalf("keys or their order changed: %v → %v", topKeys(t, []byte(tt.args)), topKeys(t, out))
				}
			}
			for field, want := range tt.keep {
				if v := lookup(got, field); fmt.Sprint(v) != fmt.Sprint(want) {
					t.Fatalf("%s = %v, want %v (out %s)", field, v, want, out)
				}
			}
			if tt.check != nil {
				tt.check(t, got)
			}
			for _, field := range tt.elided {
				s, _ := lookup(got, field).(string)
				if !strings.HasPrefix(s, elidedPrefix) || !strings.Contains(s, "run journal") || !hasPlaceholder(out) {
					t.Fatalf("%s = %q, want a placeholder (out %s)", field, s, out)
				}
			}
		})
	}
}

func lookup(m map[string]any, dotted string) any {
	var v any = m
	for _, k := range strings.Split(dotted, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func TestBoundArgsPlaceholderSaysWhatWentAndWhere(t *testing.T) {
	body := strings.Repeat("b", 18000)
	out, _ := boundArgs(json.RawMessage(`{"to":"x@y.z","body":"`+body+`"}`), 256, "call_abc")
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := "[delta:elided 18002 bytes of call call_abc — full arguments kept in the run journal]"
	if got["body"] != want {
		t.Fatalf("body = %q, want %q", got["body"], want)
	}
}

func TestHasPlaceholder(t *testing.T) {
	for _, tt := range []struct {
		args string
		want bool
	}{
		{`{"body":"[delta:elided 18342 bytes — full arguments kept in the run journal]"}`, true},
		{`{"content":"intro\n[delta:elided 12 bytes of call c1 — full arguments kept in the run journal]\nrest"}`, true},
		{`{"content":"const p = \"[delta:elided %d bytes\""}`, false}, // the format string, not a placeholder
		{`{"content":"about delta:elided values"}`, false},
		{`{"content":"plain"}`, false},
	} {
		if got := hasPlaceholder([]byte(tt.args)); got != tt.want {
			t.Errorf("hasPlaceholder(%s) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// FuzzBoundArgs: for any input and bound, the stored arguments fit, are
// valid JSON, keep the object's keys in order unless the whole object had to
// go, and bounding them again changes nothing.
func FuzzBoundArgs(f *testing.F) {
	f.Add([]byte(`{"to":"a@b.c","subject":"hi","body":"`+strings.Repeat("x", 3000)+`"}`), 256, "call_1")
	f.Add([]byte(`{"a":{"b":[1,2,{"c":"`+strings.Repeat("y", 500)+`"}]},"d":null,"e":true}`), 100, "c")
	f.Add([]byte(`{"html":"<a href=\"x\">&amp;</a>\u2028"}`), 40, "")
	f.Add([]byte(`{"k\"ey":"v\\\"al\u00e9","n":-1.5e10}`), 20, "id")
	f.Add([]byte(`["not","an","object"]`), 10, "id")
	f.Add([]byte(`{"text": broken`), 5, "id")
	f.Add([]byte(`{"x":"日本語日本語日本語日本語日本語日本語日本語"}`), 30, "id")
	f.Add([]byte(`{}`), 1, "id")
	f.Add([]byte(" {\"a\" : \"b\"} "), 9, strings.Repeat("z", 100))
	f.Add([]byte(`"" `), 1, "0")
	f.Fuzz(func(t *testing.T, args []byte, max int, callID string) {
		max %= 1 << 16
		out, changed := boundArgs(args, max, callID)
		bound := max
		if max == 1 {
			bound = 2 // no JSON object is shorter than {}
		}
		if !changed {
			if !bytes.Equal(out, args) {
				t.Fatalf("unchanged but different: %q → %q", args, out)
			}
			if max > 0 && json.Valid(args) && len(stored(t, args)) > bound {
				t.Fatalf("left %d stored bytes over the bound %d: %q", len(stored(t, args)), bound, args)
			}
			return
		}
		if max <= 0 {
			t.Fatalf("bound %d changed %q", max, args)
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON: %q", out)
		}
		if c, _ := canonical(args); out[0] != '{' && !bytes.Equal(out, c) {
			t.Fatalf("neither an object nor the input compacted: %q → %q", args, out)
		}
		if n := len(stored(t, out)); n != len(out) || n > bound {
			t.Fatalf("stored %d bytes (out %d) for bound %d: %q", n, len(out), bound, out)
		}
		if again, ch := boundArgs(out, max, callID); ch || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q", out, again)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) == nil && args[bytes.IndexFunc(args, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' })] == '{' {
			keys := topKeys(t, out)
			if !slices.Equal(keys, []string{elidedKey}) && len(keys) > 0 && !slices.Equal(keys, topKeys(t, args)) {
				t.Fatalf("keys changed: %v → %v", topKeys(t, args), keys)
			}
		}
	})
}

func BenchmarkBoundArgs(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"to":"ops@example.com","subject":"report","parts":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"title":"part %d","text":%q}`, i, strings.Repeat("lorem ipsum ", 40+i))
	}
	sb.WriteString(`]}`)
	args := json.RawMessage(sb.String())
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		boundArgs(args, 4096, "call_1")
	}
}
