// Package tooltest is what the tool packages' tests share: running a tool
// with the test failing on a Go error, checking a result's text, and
// telling whether a child process a tool started still lives.
//
// It is imported by tests only.
package tooltest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/deltaharness/delta/internal/tool"
)

// Run runs tl on c and returns its result; a Go error (a tool reports bad
// input as an error result, never as one) fails the test.
func Run(t testing.TB, tl tool.Tool, c tool.Call) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("%s(%s) returned a Go error: %v", tl.Spec().Name, c.Args, err)
	}
	return res
}

// CheckText fails t for each of want that text lacks and each of notWant
// that it holds.
func CheckText(t testing.TB, text string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("result lacks %q:\n%s", w, text)
		}
	}
	for _, nw := range notWant {
		if strings.Contains(text, nw) {
			t.Errorf("result holds %q:\n%s", nw, text)
		}
	}
}

// Alive reports whether pid is a live process, not a zombie (read from
// Linux's /proc; the state follows the last ")", since the command name
// in parentheses may hold one itself).
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
