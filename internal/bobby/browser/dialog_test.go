package browser

import (
	"context"
	"errors"
	"testing"
)

func TestDialogsNeverHang(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		button     string
		wantType   string
		wantMsg    string
		accept     bool
		promptText string
		want       any // window.result after the answer
	}{
		{"#alert", "alert", "hello alert", true, "", "after-alert"},
		{"#confirm", "confirm", "sure?", false, "", false},
		{"#confirm", "confirm", "sure?", true, "", true},
		{"#prompt", "prompt", "name?", true, "Ada", "Ada"},
		{"#prompt", "prompt", "name?", false, "", nil},
	}
	s := newSession(t)
	p := pageOf(t, s)
	open(t, p, "/dialogs.html")
	for _, tt := range tests {
		t.Run(tt.wantType, func(t *testing.T) {
			res, err := p.Click(ctx, NodeRef{Selector: tt.button}, ClickOptions{})
			if err != nil {
				t.Fatalf("Click: %v", err)
			}
			if res.Dialog == nil || res.Dialog.Type != tt.wantType || res.Dialog.Message != tt.wantMsg {
				t.Fatalf("click result dialog = %+v, want %s %q", res.Dialog, tt.wantType, tt.wantMsg)
			}
			d := p.PendingDialog()
			if d == nil || d.Type != tt.wantType {
				t.Fatalf("PendingDialog = %+v", d)
			}
			if tt.wantType == "prompt" && d.DefaultPrompt != "anon" {
				t.Errorf("defaultPrompt = %q, want anon", d.DefaultPrompt)
			}

			// Work that needs the renderer is refused at once …
			_, err = p.Evaluate(ctx, "1+1")
			var de *DialogError
			if !errors.As(err, &de) || !errors.Is(err, ErrDialogOpen) || de.Dialog.Message != tt.wantMsg {
				t.Errorf("Evaluate under a dialog = %v, want *DialogError", err)
			}
			if _, err := p.Click(ctx, NodeRef{Selector: "#status"}, ClickOptions{}); !errors.Is(err, ErrDialogOpen) {
				t.Errorf("Click under a dialog = %v, want ErrDialogOpen", err)
			}
			if _, err := p.WaitFor(ctx, Condition{Kind: WaitText, Matcher: &TextMatch{Kind: "contains", Value: "x"}}); !errors.Is(err, ErrDialogOpen) {
				t.Errorf("WaitFor under a dialog = %v, want ErrDialogOpen", err)
			}
			if _, err := p.Screenshot(ctx, ScreenshotOptions{}); !errors.Is(err, ErrDialogOpen) {
				t.Errorf("Screenshot under a dialog = %v, want ErrDialogOpen", err)
			}
			if err := p.Do(ctx, func(context.Context) error { return errors.New("must not run") }); !errors.Is(err, ErrDialogOpen) {
				t.Errorf("Do under a dialog = %v, want ErrDialogOpen", err)
			}
			if out := p.Navigate(ctx, srv.URL+"/home.html"); out.OK() || out.Error.Code != NavCodeDialogOpen || out.Error.Dialog == nil {
				t.Errorf("Navigate under a dialog = %+v, want dialogOpen", out)
			}
			// … while state and lists keep answering.
			if st := p.State(); st.ReadyState != "complete" || st.URL == nil {
				t.Errorf("State under a dialog = %+v", st)
			}
			if st := s.State(); len(st.PageIDs) != 1 {
				t.Errorf("session State under a dialog = %+v", st)
			}
			if len(shared.Sessions()) == 0 {
				t.Error("Sessions() empty under a dialog")
			}

			if err := p.HandleDialog(ctx, tt.accept, tt.promptText); err != nil {
				t.Fatalf("HandleDialog: %v", err)
			}
			if p.PendingDialog() != nil {
				t.Error("dialog still pending after HandleDialog")
			}
			if got := eval[any](t, p, `window.result`); got != tt.want {
				t.Errorf("window.result = %#v, want %#v", got, tt.want)
			}
			eval[any](t, p, `window.result = undefined; null`)
		})
	}
	if err := p.HandleDialog(ctx, true, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("HandleDialog with no dialog = %v, want ErrNotFound", err)
	}
}

func TestDialogOpenedDuringCallAbortsIt(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/dialogs.html")
	// The alert blocks Runtime.evaluate itself; the call must come back
	// with the dialog instead of waiting for its timeout.
	_, err := p.Evaluate(ctx, `alert("from script"); 42`)
	var de *DialogError
	if !errors.As(err, &de) || de.Dialog.Message != "from script" {
		t.Fatalf("Evaluate(alert) = %v, want *DialogError", err)
	}
	if errors.Is(err, ErrTimeout) {
		t.Fatalf("Evaluate(alert) waited for its timeout: %v", err)
	}
	if err := p.HandleDialog(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if got := eval[int](t, p, `40 + 2`); got != 42 {
		t.Errorf("page after the dialog evaluates to %d", got)
	}

	// A page with an open dialog can still be closed.
	if _, err := p.Evaluate(ctx, `setTimeout(() => alert("again"), 0); 1`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second dialog opens", func() bool { return p.PendingDialog() != nil })
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close under a dialog: %v", err)
	}
	if _, err := p.Session().Page(p.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("closed page still listed: %v", err)
	}
}

func TestBeforeUnloadDialog(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/leave.html")
	// beforeunload only asks after the user interacted with the page.
	if _, err := p.Click(ctx, NodeRef{Selector: "#touch"}, ClickOptions{}); err != nil {
		t.Fatal(err)
	}
	out := p.Navigate(ctx, srv.URL+"/home.html")
	if out.OK() || out.Error.Code != NavCodeDialogOpen || out.Error.Dialog == nil || out.Error.Dialog.Type != "beforeunload" {
		t.Fatalf("Navigate away = %+v (error %+v), want a beforeunload dialogOpen", out, out.Error)
	}
	if d := p.PendingDialog(); d == nil || d.Type != "beforeunload" {
		t.Fatalf("PendingDialog = %+v", d)
	}
	if err := p.HandleDialog(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	// Accepting lets the navigation that asked go on.
	res, err := p.WaitFor(ctx, Condition{Kind: WaitURL, Matcher: &TextMatch{Kind: "contains", Value: "/home.html"}})
	if err != nil || !res.Matched {
		t.Fatalf("after accepting beforeunload: %+v, %v (url %s)", res, err, p.URL())
	}
}
