package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool/subagent"
)

// RunOnce executes one request without HTTP, MCP or crash recovery: the
// conversation lives in an in-memory database, while workspace writes and
// DELTA.md changes persist. It prints the final text and returns an error
// when the run did not complete. Its last stdout line is always the usage
// marker (subagent.FormatUsage), so a parent that spawned it can charge what
// it spent, even when it failed.
func RunOnce(ctx context.Context, cfg config.Config, input string, stdout io.Writer, logger *slog.Logger) (err error) {
	p, err := build(ctx, cfg, ":memory:", false, logger)
	if err != nil {
		return err
	}
	if err := p.queue.Open(); err != nil {
		return errors.Join(err, p.close(context.WithoutCancel(ctx)))
	}
	p.closers.add("queue", p.queue.Close)
	defer func() { err = errors.Join(err, p.close(context.WithoutCancel(ctx))) }()
	run, err := p.service.Submit(ctx, engine.Submission{Request: engine.Request{
		Input: []model.Message{{Role: model.RoleUser, Content: input}}, Profile: cfg.Placement(""), Store: true,
	}})
	if err != nil {
		return err
	}
	run, err = p.service.Wait(ctx, "", run.ID)
	if err != nil {
		return err
	}
	var resp engine.Response
	if err := json.Unmarshal(run.Result, &resp); err != nil {
		fmt.Fprintln(stdout, subagent.FormatUsage(run.Usage))
		return fmt.Errorf("read result: %w", err)
	}
	fmt.Fprintln(stdout, resp.OutputText)
	// The run row, not the response, holds usage charged by its own children.
	fmt.Fprintln(stdout, subagent.FormatUsage(run.Usage))
	if run.Status != store.StatusDone {
		return fmt.Errorf("run %s %s: %s", run.ID, run.Status, run.Error)
	}
	return nil
}
