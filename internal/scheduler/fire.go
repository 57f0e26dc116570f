package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/store"
)

// Tick does the work due at Now: first the firings recorded but not yet
// acknowledged (a crash, or a daemon that was down), then every due
// schedule, each recorded before it is posted.
func (s *Scheduler) Tick(ctx context.Context) error {
	s.tick.Lock()
	defer s.tick.Unlock()
	now := s.o.Now()
	pending, err := s.st.PendingFirings(ctx, now)
	if err != nil {
		return err
	}
	byID := map[string]store.ScheduleRow{}
	for _, f := range pending {
		r, ok := byID[f.ScheduleID]
		if !ok {
			if r, err = s.st.ScheduleByID(ctx, f.ScheduleID); err != nil {
				return err
			}
			byID[f.ScheduleID] = r
		}
		s.post(ctx, r, f)
	}
	due, err := s.st.DueSchedules(ctx, now, dueBatch)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range due {
		if err := s.fireDue(ctx, r, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fireDue records the firing of one due schedule and posts it.
func (s *Scheduler) fireDue(ctx context.Context, r store.ScheduleRow, now time.Time) error {
	p, err := plan(r)
	if err != nil {
		// A stored schedule that no longer compiles (a timezone this
		// binary's database does not know, a row written by hand) would be
		// due on every tick; it is cancelled once, loudly, instead.
		s.o.Logger.Error("schedule no longer compiles; cancelled", "schedule", r.ID, "err", err)
		if _, cerr := s.st.CancelSchedule(ctx, r.ID, r.Owner, r.Agent, now); cerr != nil {
			return fmt.Errorf("cancel schedule %s that no longer compiles: %w", r.ID, cerr)
		}
		return nil
	}
	slot, skipped := p.Catchup(r.NextFireAt, now)
	next := p.Next(slot)
	f := store.FiringRow{ScheduleID: r.ID, Slot: slot, Key: schedule.FireKey(r.ID, slot), Skipped: skipped, IntendedAt: now}
	if err := s.st.IntendFiring(ctx, f, r.NextFireAt, next); err != nil {
		if errors.Is(err, store.ErrStale) {
			return nil // cancelled or advanced since it was read: nothing is owed
		}
		return err
	}
	if skipped > 0 {
		s.o.Logger.Info("schedule missed slots while down; firing once for the latest", "schedule", r.ID, "slot", slot, "skipped", skipped)
	}
	crashpoint.Hit(crashpoint.SchedulerAfterIntent)
	s.post(ctx, r, f)
	return nil
}

// taskRequest is the body of the daemon's POST /v1/tasks for one firing.
type taskRequest struct {
	Input               string         `json:"input"`
	PreviousResponseID  string         `json:"previous_response_id,omitempty"`
	IdempotencyKey      string         `json:"idempotency_key"`
	IdempotencyTerminal bool           `json:"idempotency_terminal"`
	Metadata            map[string]any `json:"metadata"`
}

// post sends one recorded firing to the daemon and records the outcome: the
// task on a 2xx; a retry later when the daemon is unreachable, overloaded
// or refuses the credentials (fixable without touching the firing); a
// failure for any other refusal.
func (s *Scheduler) post(ctx context.Context, r store.ScheduleRow, f store.FiringRow) {
	body, _ := json.Marshal(taskRequest{ // a struct of strings and a map of strings: Marshal cannot fail
		Input: r.Input, PreviousResponseID: r.PreviousResponseID, IdempotencyKey: f.Key, IdempotencyTerminal: true,
		Metadata: map[string]any{"task_id": f.Key, "task_type": "schedule", "schedule_id": r.ID, "scheduled_for": f.Slot.UTC().Format(time.RFC3339)},
	})
	taskID, retry, err := s.send(ctx, r.Owner, body)
	now := s.o.Now()
	if err == nil {
		crashpoint.Hit(crashpoint.SchedulerAfterPost)
		if err := s.st.FiringDone(context.WithoutCancel(ctx), f.Key, taskID, now); err != nil {
			s.o.Logger.Warn("firing acknowledged but not recorded; it is re-sent with the same key", "key", f.Key, "err", err)
			return
		}
		s.o.Logger.Info("schedule fired", "schedule", r.ID, "key", f.Key, "task", taskID)
		return
	}
	var retryAt time.Time
	if retry {
		delay := time.Second << min(f.Attempts, 9)
		retryAt = now.Add(min(delay, maxRetryDelay))
	}
	s.o.Logger.Warn("schedule firing not delivered", "schedule", r.ID, "key", f.Key, "retry", retry, "err", err)
	if rerr := s.st.FiringRetry(context.WithoutCancel(ctx), f.Key, err.Error(), retryAt, now); rerr != nil {
		s.o.Logger.Warn("firing attempt not recorded", "key", f.Key, "err", rerr)
	}
}

// send posts body to the daemon as owner and returns the task id, or an
// error and whether trying again later may succeed.
func (s *Scheduler) send(ctx context.Context, owner string, body []byte) (taskID string, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, fireTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(s.o.DaemonURL, "/")+"/v1/tasks", bytes.NewReader(body))
	if err != nil {
		return "", false, fmt.Errorf("build task request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.o.DaemonToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.o.DaemonToken)
	}
	if owner != "" {
		req.Header.Set(schedule.HeaderUser, owner)
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return "", true, fmt.Errorf("post task: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var eb schedule.ErrorBody
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &eb) == nil && eb.Error.Message != "" {
			msg = eb.Error.Message
		}
		switch resp.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusUnauthorized, http.StatusForbidden:
			retry = true
		default:
			retry = resp.StatusCode >= 500
		}
		return "", retry, fmt.Errorf("post task: daemon answered %d: %s", resp.StatusCode, msg)
	}
	var task struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &task); err != nil || task.ID == "" {
		return "", true, fmt.Errorf("post task: daemon answered %d without a task id", resp.StatusCode)
	}
	return task.ID, false, nil
}
