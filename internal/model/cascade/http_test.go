package cascade

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/modeltest"
	"github.com/deltaharness/delta/internal/model/openai"
)

// TestFailoverOverHTTP drives the real Chat Completions client against two
// fake endpoints: the primary answers 503 to everything, so each of its two
// models gets three wire attempts before the backup endpoint serves.
func TestFailoverOverHTTP(t *testing.T) {
	primary := modeltest.Serve(t, modeltest.Sequence(modeltest.ErrorReply(503, "overloaded")))
	backup := modeltest.Serve(t, modeltest.Sequence(modeltest.TextReply("served by the backup")))
	backup.RequireKey("backup-key")

	c, err := New(Options{
		Endpoints: []Endpoint{
			{Label: "primary", Kind: KindChat, Provider: openai.New(openai.Options{BaseURL: primary.URL(), APIKey: "primary-key"}), Models: []string{"m1", "m2"}},
			{Label: "backup", Kind: KindChat, Provider: openai.New(openai.Options{BaseURL: backup.URL(), APIKey: "backup-key"}), Models: []string{"b1"}},
		},
		Backoff: func(int) time.Duration { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	var text string
	resp, served, err := c.CompleteServed(context.Background(), model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}},
	}, model.Stream{
		OnText:  func(d string) { text += d },
		OnRetry: func(r model.Retry) { reports = append(reports, fmtRetry(r)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "served by the backup" || text != resp.Text || served.Label != "backup" || resp.Model != "b1" {
		t.Errorf("resp %+v streamed %q served %+v", resp, text, served)
	}
	var models []string
	for _, r := range primary.Requests() {
		models = append(models, r.Model)
	}
	if !equal(models, []string{"m1", "m1", "m1", "m2", "m2", "m2"}) {
		t.Errorf("primary saw models %q, want three attempts each of m1 and m2", models)
	}
	if got := backup.Requests(); len(got) != 1 || got[0].Model != "b1" || got[0].Header.Get("Authorization") != "Bearer backup-key" {
		t.Errorf("backup saw %d requests (%+v), want one for b1 with its own key", len(got), got)
	}
	want := []string{
		"retry primary/m1>primary/m1 #1 503", "retry primary/m1>primary/m1 #2 503", "model_switch primary/m1>primary/m2 #3 503",
		"retry primary/m2>primary/m2 #1 503", "retry primary/m2>primary/m2 #2 503", "provider_failover primary/m2>backup/b1 #3 503",
	}
	if !equal(reports, want) {
		t.Errorf("reports:\n got %q\nwant %q", reports, want)
	}
}

// TestClientErrorStaysOverHTTP: a 400 from the primary's only model is the
// request's fault; the backup must not be asked.
func TestClientErrorStaysOverHTTP(t *testing.T) {
	primary := modeltest.Serve(t, modeltest.Sequence(modeltest.ErrorReply(400, "messages: invalid")))
	backup := modeltest.Serve(t, nil)
	c, _ := New(Options{Endpoints: []Endpoint{
		{Label: "primary", Kind: KindChat, Provider: openai.New(openai.Options{BaseURL: primary.URL()}), Models: []string{"m1"}},
		{Label: "backup", Kind: KindChat, Provider: openai.New(openai.Options{BaseURL: backup.URL()}), Models: []string{"b1"}},
	}})
	_, err := c.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, model.Stream{})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 400 || primary.Calls() != 1 || backup.Calls() != 0 {
		t.Fatalf("err %v, primary %d calls, backup %d; want the 400 after one call and no backup call", err, primary.Calls(), backup.Calls())
	}
}
