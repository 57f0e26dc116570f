package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Name string `json:"name" jsonschema:"a name"`
}

type testParams struct {
	Path  string   `json:"path" jsonschema:"file path"`
	Count int      `json:"count,omitempty" jsonschema:"how many"`
	Tags  []string `json:"tags,omitempty"`
	Force bool     `json:"force,omitempty"`
	Inner *inner   `json:"inner,omitempty"`
}

// recorder builds a Func tool that records what reached fn.
func recorder() (Tool, *[]testParams) {
	var got []testParams
	tl := Func("probe", "a probe", false, func(_ context.Context, _ Call, p testParams) (Result, error) {
		got = append(got, p)
		return Text("ok"), nil
	})
	return tl, &got
}

func TestFuncSchema(t *testing.T) {
	a, _ := recorder()
	b, _ := recorder()
	const want = `{"type":"object","properties":{"path":{"type":"string","description":"file path"},` +
		`"count":{"type":"integer","description":"how many"},"tags":{"type":["null","array"],"items":{"type":"string"}},` +
		`"force":{"type":"boolean"},"inner":{"type":["null","object"],"properties":{"name":{"type":"string","description":"a name"}},` +
		`"required":["name"],"additionalProperties":false}},"required":["path"],"additionalProperties":false}`
	if got := string(a.Spec().Parameters); got != want {
		t.Fatalf("schema =\n%s\nwant\n%s", got, want)
	}
	if string(a.Spec().Parameters) != string(b.Spec().Parameters) {
		t.Fatal("two constructions gave different schema bytes")
	}
	s := a.Spec()
	s.Parameters[0] = 'X'
	if a.Spec().Parameters[0] != '{' {
		t.Fatal("Spec exposed its cached schema bytes")
	}
	if a.Spec().Name != "probe" || a.Spec().Description != "a probe" || a.ReadOnly() {
		t.Fatalf("spec = %+v, readOnly %v", a.Spec(), a.ReadOnly())
	}
}

func TestFuncGoodArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want testParams
	}{
		{"required only", `{"path":"a.txt"}`, testParams{Path: "a.txt"}},
		{"all fields", `{"path":"a","count":3,"tags":["x","y"],"force":true,"inner":{"name":"n"}}`,
			testParams{Path: "a", Count: 3, Tags: []string{"x", "y"}, Force: true, Inner: &inner{Name: "n"}}},
		{"null optional is absent", `{"path":"a","count":null,"tags":null,"inner":null}`, testParams{Path: "a"}},
		{"whole float is an integer", `{"path":"a","count":3.0}`, testParams{Path: "a", Count: 3}},
		{"object sent as a JSON string", `"{\"path\":\"a\",\"count\":2}"`, testParams{Path: "a", Count: 2}},
		{"surrounding space", " \n{\"path\":\"a\"}\n ", testParams{Path: "a"}},
		{"empty string path is a string", `{"path":""}`, testParams{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, got := recorder()
			res, err := tl.Run(context.Background(), Call{Args: json.RawMessage(tt.args)})
			if err != nil || res.IsError {
				t.Fatalf("Run(%s) = %+v, %v", tt.args, res, err)
			}
			if len(*got) != 1 || !reflect.DeepEqual((*got)[0], tt.want) {
				t.Fatalf("fn got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestFuncBadArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string // substrings of the error text
	}{
		{"not json", `not json`, []string{"not valid JSON"}},
		{"truncated json", `{"path":"a"`, []string{"not valid JSON"}},
		{"trailing garbage", `{"path":"a"} x`, []string{"not valid JSON"}},
		{"array", `[1,2]`, []string{"must be a JSON object, got array"}},
		{"plain string", `"hello"`, []string{"must be a JSON object, got string"}},
		{"number", `42`, []string{"must be a JSON object, got integer"}},
		{"empty", ``, []string{`missing required field "path" (string: file path)`}},
		{"empty object", `{}`, []string{`missing required field "path"`}},
		{"wrong type", `{"path":3}`, []string{`field "path": expected string, got integer 3`}},
		{"string for integer", `{"path":"a","count":"5"}`, []string{`field "count": expected integer, got string "5"`}},
		{"fraction for integer", `{"path":"a","count":1.5}`, []string{`field "count": expected integer, got number 1.5`}},
		{"too big for int", `{"path":"a","count":1e30}`, []string{`field "count": cannot use number`}},
		{"unknown field", `{"path":"a","extra":1}`, []string{`unknown field "extra"`}},
		{"wrong case", `{"Path":"a"}`, []string{`unknown field "Path" (did you mean "path"?)`, `missing required field "path"`}},
		{"null required", `{"path":null}`, []string{`field "path" is null; expected string`}},
		{"string for array", `{"path":"a","tags":"x"}`, []string{`field "tags": expected array of string, got string "x"`}},
		{"wrong item type", `{"path":"a","tags":[1]}`, []string{`field "tags"`, `want "string"`}},
		{"nested missing", `{"path":"a","inner":{}}`, []string{`field "inner"`, "name"}},
		{"nested unknown", `{"path":"a","inner":{"name":"x","zz":1}}`, []string{`field "inner"`, "zz"}},
		{"bool as string", `{"path":"a","force":"true"}`, []string{`field "force": expected boolean, got string "true"`}},
		{"several at once", `{"count":"x","extra":1}`, []string{`field "count"`, `unknown field "extra"`, `missing required field "path"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, got := recorder()
			res, err := tl.Run(context.Background(), Call{Args: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatalf("Run returned a Go error for a model mistake: %v", err)
			}
			if !res.IsError {
				t.Fatalf("Run(%s) = %+v, want an error result", tt.args, res)
			}
			if len(*got) != 0 {
				t.Fatalf("fn ran with bad arguments: %+v", *got)
			}
			t.Log(res.Text)
			for _, w := range append(tt.want, "invalid arguments for probe", "Fields: path (string, required)") {
				if !strings.Contains(res.Text, w) {
					t.Errorf("error text %q\nlacks %q", res.Text, w)
				}
			}
		})
	}
}

func TestFuncNoParams(t *testing.T) {
	calls := 0
	tl := Func("ping", "ping", true, func(context.Context, Call, struct{}) (Result, error) {
		calls++
		return Text("pong"), nil
	})
	if got := string(tl.Spec().Parameters); got != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Fatalf("schema = %s", got)
	}
	for _, args := range []string{``, `null`, `{}`} {
		if res, err := tl.Run(context.Background(), Call{Args: json.RawMessage(args)}); err != nil || res.IsError {
			t.Fatalf("Run(%q) = %+v, %v", args, res, err)
		}
	}
	res, _ := tl.Run(context.Background(), Call{Args: json.RawMessage(`{"x":1}`)})
	if !res.IsError || !strings.Contains(res.Text, "takes no arguments") {
		t.Fatalf("Run({x:1}) = %+v", res)
	}
	if calls != 3 {
		t.Fatalf("fn ran %d times, want 3", calls)
	}
}

func TestFuncPassesCallAndErrors(t *testing.T) {
	tl := Func("echo", "", false, func(_ context.Context, c Call, p struct {
		S string `json:"s"`
	}) (Result, error) {
		return Text(c.RunID + "/" + c.CallID + "/" + p.S), nil
	})
	res, err := tl.Run(context.Background(), Call{RunID: "r", CallID: "c", Args: json.RawMessage(`{"s":"x"}`)})
	if err != nil || res.Text != "r/c/x" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestFuncPanicsOnBadParams(t *testing.T) {
	tests := []struct {
		name  string
		build func()
	}{
		{"not a struct", func() { Func("x", "", true, func(context.Context, Call, int) (Result, error) { return Result{}, nil }) }},
		{"unsupported field", func() {
			Func("x", "", true, func(context.Context, Call, struct{ F func() }) (Result, error) { return Result{}, nil })
		}},
		{"empty name", func() {
			Func("", "", true, func(context.Context, Call, struct{}) (Result, error) { return Result{}, nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Func did not panic")
				}
			}()
			tt.build()
		})
	}
}

// FuzzFuncArgs feeds arbitrary argument bytes: the adapter must never panic,
// must run fn only for arguments it accepted, and must explain every refusal.
func FuzzFuncArgs(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"path":"a"}`, `{"path":3}`, `[`, `{"path":"a","count":1e400}`, `"{\"path\":1}"`,
		`{"path":"a","tags":[null]}`, `{"path":"a","inner":{"name":null}}`, `{"path":"\u0000"}`, `{"path":"a","count":-0}`,
		`{"path":"a","count":9223372036854775808}`, `"\"\""`, `{"":1}`, `{"path":"a","inner":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		tl, got := recorder()
		res, err := tl.Run(context.Background(), Call{Args: args})
		if err != nil {
			t.Fatalf("Go error for model input: %v", err)
		}
		if res.IsError {
			if len(*got) != 0 {
				t.Fatal("fn ran but the result is an error")
			}
			if !strings.HasPrefix(res.Text, "error: invalid arguments for probe: ") {
				t.Fatalf("refusal does not say what failed: %q", res.Text)
			}
			return
		}
		if len(*got) != 1 {
			t.Fatalf("accepted but fn ran %d times", len(*got))
		}
	})
}

func BenchmarkFuncDecode(b *testing.B) {
	tl, _ := recorder()
	args := json.RawMessage(`{"path":"notes/a.md","count":3,"tags":["x","y"],"inner":{"name":"n"}}`)
	for b.Loop() {
		if res, err := tl.Run(context.Background(), Call{Args: args}); err != nil || res.IsError {
			b.Fatal(res.Text, err)
		}
	}
}
