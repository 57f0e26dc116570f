package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	// Held schedules stay due, so the due ones are read page by page: a
	// hundred held schedules never hide the ones behind them.
	var errs []error
	var after store.DueCursor
	for {
		due, err := s.st.DueSchedules(ctx, now, after, dueBatch)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, r := range due {
			if err := s.fireDue(ctx, r, now); err != nil {
				errs = append(errs, err)
			}
		}
		if len(due) < dueBatch {
			return errors.Join(errs...)
		}
		last := due[len(due)-1]
		after = store.DueCursor{NextFireAt: last.NextFireAt, ID: last.ID}
	}
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
	if held, err := s.held(ctx, r); err != nil || held {
		return err
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
		s.o.Logger.Info("schedule missed slots (the scheduler was down, or its previous firing was still in progress); firing once for the latest",
			"schedule", r.ID, "slot", slot, "skipped", skipped)
	}
	crashpoint.Hit(crashpoint.SchedulerAfterIntent)
	s.post(ctx, r, f)
	return nil
}

// held reports whether schedule r's previous firing is still in progress,
// so r must not fire now: the firing is recorded but not yet acknowledged
// (the daemon is down or refuses the credentials; it is re-sent on its
// own), or the daemon still has its task queued or running. Firing anyway
// would make a daemon that was down for an hour receive one run per missed
// slot when it comes back, and a schedule every minute whose runs take
// three queue a run a minute for ever. A held schedule stays due; once the
// previous firing is over, the next tick fires it once for its latest slot
// (Plan.Catchup), the firing counting the slots it skipped. When the
// daemon cannot say (unreachable, a refusal, a task it does not know), r
// is not held: its post then fails and is owed like any other, or goes
// through.
func (s *Scheduler) held(ctx context.Context, r store.ScheduleRow) (bool, error) {
	last, err := s.st.LastFiring(ctx, r.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case last.State == store.FiringIntended:
		return true, nil
	case last.State != store.FiringDone || last.TaskID == "":
		return false, nil
	}
	status, err := s.taskStatus(ctx, r.Owner, last.TaskID)
	if err != nil {
		s.o.Logger.Debug("previous firing's task status unknown; firing", "schedule", r.ID, "task", last.TaskID, "err", err)
		return false, nil
	}
	return status == "queued" || status == "running", nil
}

// taskStatus asks the daemon, as owner, for the status of task id.
func (s *Scheduler) taskStatus(ctx context.Context, owner, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := s.daemonRequest(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), owner, nil)
	if err != nil {
		return "", fmt.Errorf("build task status request: %w", err)
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("task status: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("task status: daemon answered %d", resp.StatusCode)
	}
	var task struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &task); err != nil {
		return "", fmt.Errorf("task status: %w", err)
	}
	return task.Status, nil
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

// daemonRequest is a request to the daemon's path as owner, with the
// daemon token when one is set.
func (s *Scheduler) daemonRequest(ctx context.Context, method, path, owner string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.o.DaemonURL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	if s.o.DaemonToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.o.DaemonToken)
	}
	if owner != "" {
		req.Header.Set(schedule.HeaderUser, owner)
	}
	return req, nil
}

// send posts body to the daemon as owner and returns the task id, or an
// error and whether trying again later may succeed.
func (s *Scheduler) send(ctx context.Context, owner string, body []byte) (taskID string, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, fireTimeout)
	defer cancel()
	req, err := s.daemonRequest(ctx, http.MethodPost, "/v1/tasks", owner, bytes.NewReader(body))
	if err != nil {
		return "", false, fmt.Errorf("build task request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
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
