package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// benchEvent is an event the size of a typical tool.call row (~150 bytes
// of data).
func benchEvent(runID, sessionID string, i int) event.Event {
	return event.New(runID, sessionID, event.ToolCall, map[string]any{
		"call_id": fmt.Sprintf("call_%06d", i), "name": "read_file",
		"args": `{"path":"notes/otter-survey-2026.md","offset":0,"limit":400}`,
	})
}

func benchStore(b *testing.B) *store.Store {
	b.Helper()
	s, err := store.Open(context.Background(), store.TestingDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkEventAppend measures durable event appends on a file database
// (WAL, synchronous=NORMAL): one event per transaction (AddEvents with one
// event, as a retry or warning is stored), 8 per transaction, and the
// engine's shape — a step checkpoint (assistant message, tool intent, usage
// row, model.call and tool.call events) followed by the tool result
// checkpoint (journal row, tool message, tool.result event).
//
//	go test -run '^$' -bench EventAppend ./internal/store/
func BenchmarkEventAppend(b *testing.B) {
	ctx := context.Background()
	for _, batch := range []int{1, 8} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := benchStore(b)
			evs := make([]event.Event, batch)
			b.ResetTimer()
			for i := range b.N {
				for j := range evs {
					evs[j] = benchEvent("resp_bench", "sess_bench", i*batch+j)
				}
				if err := s.AddEvents(ctx, evs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
	b.Run("engine-step", func(b *testing.B) {
		s := benchStore(b)
		const runID, sessionID = "resp_bench", "sess_bench"
		if _, _, _, err := s.CreateRun(ctx, store.NewRun{ID: runID, SessionID: sessionID, Request: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Start(ctx, runID, []model.Message{{Role: model.RoleUser, Content: "Write the otter survey brief."}}); err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"path":"notes/otter-survey-2026.md"}`)
		b.ResetTimer()
		for i := range b.N {
			callID := fmt.Sprintf("call_%d", i)
			_, err := s.CommitStep(ctx, store.Step{RunID: runID, SessionID: sessionID, Model: "m",
				Message: model.Message{Role: model.RoleAssistant, Content: "Reading the notes.",
					ToolCalls: []model.ToolCall{{ID: callID, Name: "read_file", Arguments: args}}},
				Intents: []store.Intent{{CallID: callID, Name: "read_file", Args: args, ReadOnly: true}},
				Usage:   model.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 1000},
				Events: []event.Event{
					event.New(runID, sessionID, event.ModelCall, map[string]any{"model": "m", "input_tokens": 1200}),
					benchEvent(runID, sessionID, i),
				}})
			if err != nil {
				b.Fatal(err)
			}
			_, err = s.CommitToolResult(ctx, store.ToolResult{RunID: runID, SessionID: sessionID, CallID: callID,
				Name: "read_file", Text: "Otters counted: 14 adults, 3 pups.",
				Events: []event.Event{event.New(runID, sessionID, event.ToolResult, map[string]any{"call_id": callID, "preview": "Otters counted"})}})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*3)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
}

// BenchmarkEventPage measures reading one ?since= page from a table of
// 100,000 events: 100 runs whose events interleave (1,000 each), as
// GET /v1/tasks/{id}/events pages one run, and the unfiltered page the dev
// stream replays. Each op reads one full page from a cursor spread over the
// run's history.
//
//	go test -run '^$' -bench EventPage ./internal/store/
func BenchmarkEventPage(b *testing.B) {
	const runs, perRun = 100, 1000
	ctx := context.Background()
	s := benchStore(b)
	evs := make([]event.Event, 0, runs)
	for i := range perRun {
		evs = evs[:0]
		for r := range runs {
			evs = append(evs, benchEvent(fmt.Sprintf("resp_%03d", r), fmt.Sprintf("sess_%03d", r), i))
		}
		if err := s.AddEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	// The cursors: ids of run resp_042 from its start to where a full page
	// still fits.
	all, err := s.Events(ctx, store.EventFilter{RunID: "resp_042", Limit: 500})
	if err != nil || len(all) != 500 {
		b.Fatalf("read run events: %d, %v", len(all), err)
	}
	firstID, stride := all[0].ID, all[1].ID-all[0].ID
	for _, tt := range []struct {
		name  string
		run   string
		limit int
	}{
		{"run/limit=200", "resp_042", 200},
		{"run/limit=500", "resp_042", 500},
		{"all/limit=500", "", 500},
	} {
		b.Run(tt.name, func(b *testing.B) {
			span := int64(perRun - tt.limit)
			for i := range b.N {
				since := firstID + (int64(i)*37%span)*stride - 1
				page, err := s.Events(ctx, store.EventFilter{RunID: tt.run, Since: since, Limit: tt.limit})
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != tt.limit {
					b.Fatalf("page from %d has %d events, want %d", since, len(page), tt.limit)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(b.N*tt.limit)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
