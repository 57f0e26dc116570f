package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// idleService is a Service whose queue never runs anything: submitted runs
// stay queued.
func idleService(t *testing.T) (*engine.Service, *event.Broker) {
	t.Helper()
	_, st, b := openEnv(t)
	broker := event.NewBroker()
	eng := engine.New(engine.Options{Store: st, Broker: broker, Provider: answer("unused"), Models: []string{"m"}, Prompt: b,
		Tools: tool.NewRegistry(), ToolNames: func(string) []string { return nil }, Budget: func(string) engine.Budget { return big }})
	return engine.NewService(st, queue.New(st, eng.ExecuteHead, 1, nil), eng), broker
}

func answer(text string) model.ProviderFunc {
	return func(context.Context, model.Request, model.Stream) (model.Response, error) {
		return model.Response{Model: "m", Text: text}, nil
	}
}

func submitAs(t *testing.T, svc *engine.Service, owner string) store.Run {
	t.Helper()
	r, err := svc.Submit(context.Background(), engine.Submission{Owner: owner, Request: engine.Request{
		Input: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Profile: "trusted", Store: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every owner-scoped read of another owner's run is ErrNotFound, exactly
// like an unknown id; the inspection read is not scoped.
func TestServiceReadsAreOwnerScoped(t *testing.T) {
	h := newHarness(t, answer("done"), big)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := submitAs(t, h.svc, "alice")
	if _, err := h.svc.Wait(ctx, "alice", r.ID); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"mallory", ""} {
		reads := map[string]func() error{
			"Get":    func() error { _, err := h.svc.Get(ctx, who, r.ID); return err },
			"Cancel": func() error { _, err := h.svc.Cancel(ctx, who, r.ID); return err },
			"Wait":   func() error { _, err := h.svc.Wait(ctx, who, r.ID); return err },
			"Events": func() error { _, err := h.svc.Events(ctx, who, r.ID, 0, 10); return err },
			"Follow": func() error {
				_, live, err := h.svc.Follow(ctx, who, r.ID, 1, nil)
				if live != nil {
					t.Errorf("Follow by %q returned a subscription", who)
				}
				return err
			},
		}
		for name, read := range reads {
			if err := read(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s by %q: %v, want ErrNotFound", name, who, err)
			}
		}
	}
	page, err := h.svc.Events(ctx, "alice", r.ID, 0, 500)
	if err != nil || !page.Done || len(page.Events) == 0 || page.Cursor != page.Events[len(page.Events)-1].ID {
		t.Fatalf("owner's page %+v, %v", page, err)
	}
	if got, err := h.svc.InspectRun(ctx, r.ID); err != nil || got.Owner != "alice" {
		t.Fatalf("inspection read: %+v, %v", got, err)
	}
}

func TestServiceQueueShowsIDsOnlyToTheirOwner(t *testing.T) {
	svc, _ := idleService(t)
	ctx := context.Background()
	a := submitAs(t, svc, "alice")
	submitAs(t, svc, "bob")
	u := submitAs(t, svc, "")
	for _, tt := range []struct {
		owner  string
		strict bool
		want   []string // per row: the id shown ("-" for none)
	}{
		{"alice", false, []string{a.ID, "-", "-"}},
		{"alice", true, []string{a.ID}},
		{"", false, []string{"-", "-", u.ID}},
		{"", true, nil},
	} {
		rows, err := svc.Queue(ctx, tt.owner, tt.strict)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, e := range rows {
			id := e.ID
			if id == "" {
				id = "-"
			}
			if e.Position != i+1 || e.Mine != (e.ID != "") || e.Status != store.StatusQueued {
				t.Errorf("owner %q strict %v: row %d %+v", tt.owner, tt.strict, i, e)
			}
			got = append(got, id)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("owner %q strict %v: rows %v, want %v", tt.owner, tt.strict, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("owner %q strict %v: rows %v, want %v", tt.owner, tt.strict, got, tt.want)
			}
		}
	}
}

// SubmitFollow's subscription carries the new run's events only, from its
// first one.
func TestSubmitFollowCarriesOnlyItsRun(t *testing.T) {
	svc, broker := idleService(t)
	other := submitAs(t, svc, "bob")
	r, live, err := svc.SubmitFollow(context.Background(), engine.Submission{Owner: "alice", Request: engine.Request{
		Input: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Profile: "trusted"}}, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	broker.Publish(event.Event{RunID: other.ID, Name: event.TextDelta})
	broker.Publish(event.Event{RunID: r.ID, Name: event.TextDelta})
	first := <-live.C
	if first.RunID != r.ID || first.Name != event.RunQueued {
		t.Fatalf("first event %+v, want the new run's run.queued", first)
	}
	if e := <-live.C; e.RunID != r.ID || e.Name != event.TextDelta {
		t.Fatalf("second event %+v, want the new run's delta", e)
	}
}
