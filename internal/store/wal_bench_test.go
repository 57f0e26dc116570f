package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/model"
)

// BenchmarkStepWAL measures what one engine step's checkpoint writes to the
// WAL on a SQLite file: the step of a tool turn as the engine commits it
// (the previous turn's held read-only result and its tool.result event,
// then turn.started, the assistant message with one tool intent, the usage
// row, model.call, tool.call and checkpoint), one transaction each, with
// checkpoints off so the WAL only grows. It reports WAL pages
// (frames) and bytes per step, alone and with 32 runs' steps sharing each
// group commit, and the process CPU time per step.
//
//	go test -run '^$' -bench StepWAL ./internal/store/
func BenchmarkStepWAL(b *testing.B) {
	for _, runs := range []int{1, 32} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) { benchStepWAL(b, runs) })
	}
}

func benchStepWAL(b *testing.B, runs int) {
	if testPG != nil {
		b.Skip("the WAL is SQLite's")
	}
	ctx := context.Background()
	path := TestingDSN(b)
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// No checkpoints at all, the checkpointer's included: a checkpoint
	// caught up lets the next write start the WAL over.
	s.stopCheckpointer()
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_autocheckpoint=0"); err != nil {
		b.Fatal(err)
	}
	var pageSize int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, runs)
	for r := range runs {
		ids[r] = fmt.Sprintf("resp_wal%03d", r)
		if _, _, _, err := s.CreateRun(ctx, NewRun{ID: ids[r], SessionID: "sess_" + ids[r], Request: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Start(ctx, ids[r], []model.Message{{Role: model.RoleUser, Content: "Write the otter survey brief."}}); err != nil {
			b.Fatal(err)
		}
	}
	args := json.RawMessage(`{"path":"notes/otter-survey-2026.md"}`)
	step := func(runID string, i int) Step {
		sessionID := "sess_" + runID
		callID := fmt.Sprintf("call_%d", i)
		ev := func(name string, data any) event.Event {
			e := event.New(runID, sessionID, name, data)
			e.Turn = i + 1
			return e
		}
		st := Step{RunID: runID, SessionID: sessionID, Model: "m",
			Message: model.Message{Role: model.RoleAssistant, Content: "Reading the notes.",
				ToolCalls: []model.ToolCall{{ID: callID, Name: "read_file", Arguments: args}}},
			Intents: []Intent{{CallID: callID, Name: "read_file", Args: args, ReadOnly: true}},
			Usage:   model.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 1000},
			Events: []event.Event{
				ev(event.TurnStarted, map[string]any{"turn": i + 1, "model": "m", "tools": 1}),
				ev(event.ModelCall, map[string]any{"model": "m", "step": i + 1, "usage": map[string]int64{"input_tokens": 1200, "output_tokens": 40}}),
				ev(event.ToolCall, map[string]any{"call_id": callID, "name": "read_file", "arguments": args}),
				ev(event.Checkpoint, map[string]any{"turn": i + 1, "steps": i + 1, "intents": 1}),
			}}
		if i > 0 {
			prev := fmt.Sprintf("call_%d", i-1)
			st.Results = []ToolResult{{RunID: runID, SessionID: sessionID, CallID: prev, Name: "read_file",
				Text:   "Otters counted: 14 adults, 3 pups, on the north bank of the estuary.",
				Events: []event.Event{ev(event.ToolResult, map[string]any{"call_id": prev, "preview": "Otters counted"})}}}
		}
		return st
	}
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	// Warm: a few hundred steps so the tables and indexes have depth.
	const warm = 200
	commitRound := func(i int) {
		errs := make(chan error, runs)
		for _, id := range ids {
			go func() {
				_, err := s.CommitStep(ctx, step(id, i))
				errs <- err
			}()
		}
		for range ids {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range warm / runs {
		commitRound(i)
	}
	before := walSize()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range b.N {
		commitRound(warm/runs + i)
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	grown := walSize() - before
	steps := float64(b.N * runs)
	b.ReportMetric(float64(grown)/steps, "wal-B/step")
	b.ReportMetric(float64(grown)/float64(pageSize+24)/steps, "wal-pages/step")
	b.ReportMetric(float64(cpu.Microseconds())/steps, "cpu-µs/step")
}

// processCPU is the user and system CPU time this process has used: a busy
// machine disturbs it far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
