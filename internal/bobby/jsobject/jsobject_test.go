package jsobject

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/cdproto/runtime"
)

func TestExceptionText(t *testing.T) {
	for _, tt := range []struct {
		d    runtime.ExceptionDetails
		want string
	}{
		{runtime.ExceptionDetails{Text: "Uncaught", Exception: &runtime.RemoteObject{Description: "TypeError: x is null\n    at <anonymous>:1:1"}}, "TypeError: x is null"},
		{runtime.ExceptionDetails{Text: "Uncaught"}, "Uncaught"},
	} {
		if got := ExceptionText(&tt.d); got != tt.want {
			t.Errorf("ExceptionText = %q, want %q", got, tt.want)
		}
	}
}

func TestArgs(t *testing.T) {
	args, err := Args(runtime.RemoteObjectID("obj-1"), map[string]int{"n": 2}, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 3 || args[0].ObjectID != "obj-1" || string(args[1].Value) != `{"n":2}` || string(args[2].Value) != `"s"` {
		t.Errorf("Args = %+v", args)
	}
	if _, err := Args(func() {}); err == nil {
		t.Error("a function argument encoded")
	}
}

// TestDo checks what Do makes of the executor's answers: the call it
// sends, a thrown exception, a result, an undefined result.
func TestDo(t *testing.T) {
	var sent runtime.CallFunctionOnParams
	answer := func(res runtime.CallFunctionOnResult, err error) Exec {
		return func(_ context.Context, p runtime.CallFunctionOnParams) (runtime.CallFunctionOnResult, error) {
			sent = p
			return res, err
		}
	}
	ctx := context.Background()
	c := Call{Object: "o", Fn: "function() { return 1 }", Await: true, Group: "g"}

	var n int
	if err := c.Do(ctx, answer(runtime.CallFunctionOnResult{Result: &runtime.RemoteObject{Value: []byte("7")}}, nil), &n); err != nil || n != 7 {
		t.Fatalf("Do = %v, n = %d", err, n)
	}
	if sent.ObjectID != "o" || sent.ObjectGroup != "g" || sent.AwaitPromise == nil || !*sent.AwaitPromise || sent.ReturnByValue == nil || !*sent.ReturnByValue {
		t.Errorf("sent %+v", sent)
	}
	err := c.Do(ctx, answer(runtime.CallFunctionOnResult{ExceptionDetails: &runtime.ExceptionDetails{Text: "boom"}}, nil), &n)
	var exc *Exception
	if !errors.As(err, &exc) || exc.Text != "boom" {
		t.Errorf("exception: %v", err)
	}
	n = 3
	if err := c.Do(ctx, answer(runtime.CallFunctionOnResult{Result: &runtime.RemoteObject{}}, nil), &n); err != nil || n != 3 {
		t.Errorf("undefined result: %v, n = %d", err, n)
	}
	failure := errors.New("transport")
	if err := c.Do(ctx, answer(runtime.CallFunctionOnResult{}, failure), nil); !errors.Is(err, failure) {
		t.Errorf("executor error = %v", err)
	}
	if err := c.Do(ctx, answer(runtime.CallFunctionOnResult{Result: &runtime.RemoteObject{Value: []byte(`"x"`)}}, nil), &n); err == nil {
		t.Error("a string decoded into an int")
	}
}
