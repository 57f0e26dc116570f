package firefox

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/bidi"
	"github.com/deltaharness/delta/internal/bobby/bidi/biditest"
)

// TestRuntimeSessionsArePrivateUserContexts drives a Runtime of its own:
// sessions keep their cookies apart, pages are listed and found by id,
// closing a session forgets its pages, and a Firefox that died is
// relaunched by the next session.
func TestRuntimeSessionsArePrivateUserContexts(t *testing.T) {
	biditest.Require(t)
	ctx := testCtx(t)
	rt := New(Options{DataDir: t.TempDir(), LaunchTimeout: biditest.LaunchTimeout})
	if _, err := rt.NewSession(ctx); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("a session before Open: %v, want ErrNotOpen", err)
	}
	if err := rt.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if v, err := rt.Version(); err != nil || !strings.HasPrefix(v, "firefox/") {
		t.Errorf("version %q, %v", v, err)
	}
	s1, err := rt.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := rt.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := s1.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Navigate(ctx, fixtures.URL+"/signup.html"); err != nil {
		t.Fatal(err)
	}
	st, err := p1.State(ctx)
	if err != nil || !strings.HasSuffix(st.URL, "/signup.html") || st.ReadyState != "complete" || st.Status != 200 {
		t.Errorf("state %+v, %v", st, err)
	}
	if err := s1.SetCookie(ctx, bidi.Cookie{Name: "theme", Value: "dark", Domain: "127.0.0.1", Path: "/"}); err != nil {
		t.Fatal(err)
	}
	if cs, err := s1.Cookies(ctx); err != nil || len(cs) != 1 || cs[0].Value != "dark" {
		t.Errorf("session 1 cookies %+v, %v", cs, err)
	}
	if cs, err := s2.Cookies(ctx); err != nil || len(cs) != 0 {
		t.Errorf("session 2 sees %+v, %v", cs, err)
	}
	if got := eval(t, p1, `document.cookie`); got != "theme=dark" {
		t.Errorf("the page sends %q", got)
	}
	if ps := s1.Pages(); len(ps) != 1 || ps[0] != p1 || s1.ActivePageID() != p1.ID() || p1.SessionID() != s1.ID {
		t.Errorf("pages %v active %s", ps, s1.ActivePageID())
	}
	if p, err := rt.Page(p1.ID()); err != nil || p != p1 {
		t.Errorf("runtime page lookup: %v", err)
	}
	if err := rt.CloseSession(ctx, s1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Page(p1.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("a page of a closed session: %v", err)
	}
	if _, err := s1.NewPage(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("a page in a closed session: %v", err)
	}
	if ss := rt.Sessions(); len(ss) != 1 || ss[0] != s2 {
		t.Errorf("sessions %v", ss)
	}

	// Firefox dies: the runtime says so, and the next session relaunches it.
	rt.mu.Lock()
	pid, _ := rt.b.Pid()
	exited := rt.b.Exited()
	rt.mu.Unlock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("firefox did not exit after SIGKILL")
	}
	if rt.Healthy() {
		t.Error("healthy after the browser died")
	}
	s3, err := rt.NewSession(ctx)
	if err != nil {
		t.Fatalf("a session after the crash: %v", err)
	}
	if !rt.Healthy() || len(rt.Sessions()) != 1 || rt.Sessions()[0] != s3 || s2.Alive() {
		t.Errorf("after the relaunch: healthy %v sessions %v, old session alive %v", rt.Healthy(), rt.Sessions(), s2.Alive())
	}
}
