// Package schedule is the model's scheduling tools — schedule_create,
// schedule_list and schedule_cancel — over a control plane's REST surface
// (package internal/schedule documents it; `delta scheduler` is one). Delta
// keeps no alarm of its own: a suspended machine would miss it, so the
// control plane owns time and wakes the agent with a task.
//
// Arguments are validated here before any network call (kind, timestamp in
// the future, interval of at least 60 s, five-field cron, IANA timezone), so
// a malformed request costs no round trip and the model gets the reason and
// a repair hint. Every call has its own 15-second ceiling, carries the
// control token as a bearer (never logged) and the run's owner and the
// agent's identity, and sees only that owner's schedules.
package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	sched "github.com/deltaharness/delta/internal/schedule"
	"github.com/deltaharness/delta/internal/tool"
)

// The tool names.
const (
	CreateName = "schedule_create"
	ListName   = "schedule_list"
	CancelName = "schedule_cancel"
)

// Timeout bounds one call to the control plane.
const Timeout = 15 * time.Second

// Options configures the tools.
type Options struct {
	URL    string // the control plane's base URL (DELTA_CONTROL_URL)
	Token  string // its bearer (DELTA_CONTROL_TOKEN)
	Agent  string // this agent's identity (DELTA_AGENT_ID), sent as X-Delta-Agent
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
}

// Client calls one control plane.
type Client struct{ o Options }

// New fills defaults.
func New(o Options) *Client {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.URL = strings.TrimRight(o.URL, "/")
	return &Client{o: o}
}

// Tools is the three tools. None is untimed: each also bounds itself at
// Timeout, and the ordinary tool timeout still applies.
func (c *Client) Tools() []tool.Tool {
	return []tool.Tool{c.create(), c.list(), c.cancel()}
}

type createParams struct {
	Kind         string `json:"kind" jsonschema:"once, interval or cron"`
	At           string `json:"at,omitempty" jsonschema:"kind once: when, ISO 8601 with an offset, in the future (e.g. 2026-12-24T08:00:00+01:00)"`
	EverySeconds int64  `json:"every_seconds,omitempty" jsonschema:"kind interval: seconds between firings, at least 60; the first is one interval from now"`
	Cron         string `json:"cron,omitempty" jsonschema:"kind cron: five fields minute hour day-of-month month day-of-week (e.g. 0 8 * * * is 08:00 daily)"`
	Timezone     string `json:"timezone,omitempty" jsonschema:"kind cron: IANA timezone the cron fields are read in (e.g. Europe/Paris); default UTC"`
	Input        string `json:"input" jsonschema:"the task delivered to you at each firing, written as the instruction you will then receive"`
	Session      string `json:"session,omitempty" jsonschema:"same (default): each firing continues this conversation; new: each firing starts a fresh one"`
}

const createDescription = "Schedule a task for yourself: at each firing the control plane sends you input as a new task. " +
	"Kinds: once (at: an ISO 8601 time with offset, in the future), interval (every_seconds ≥ 60) or cron " +
	"(five fields, with an optional IANA timezone, e.g. cron \"0 8 * * *\" timezone \"Europe/Paris\" for 08:00 Paris time daily). " +
	"Returns the schedule id, which schedule_cancel takes."

func (c *Client) create() tool.Tool {
	return tool.Func(CreateName, createDescription, false, func(ctx context.Context, call tool.Call, p createParams) (tool.Result, error) {
		body, bad := c.check(call, p)
		if bad != nil {
			return *bad, nil
		}
		var s sched.Schedule
		if res := c.do(ctx, call, http.MethodPost, sched.Path, body, http.StatusCreated, &s); res != nil {
			return *res, nil
		}
		return tool.Text("scheduled " + line(s)), nil
	})
}

// check validates a schedule_create call as the control plane would and
// builds its body, or returns the error result the model sees.
func (c *Client) check(call tool.Call, p createParams) (sched.Create, *tool.Result) {
	body := sched.Create{
		Spec:  sched.Spec{Kind: sched.Kind(strings.TrimSpace(p.Kind)), At: p.At, EverySeconds: p.EverySeconds, Cron: p.Cron, Timezone: p.Timezone},
		Input: p.Input, SessionID: call.SessionID,
	}
	switch strings.TrimSpace(p.Session) {
	case "", "same":
		body.PreviousResponseID = call.RunID
	case "new":
	default:
		r := tool.Errorf("%s: session %q is not same or new. Send same (continue this conversation) or new (a fresh one each time).", CreateName, p.Session)
		return body, &r
	}
	if _, err := body.Compile(c.o.Now()); err != nil {
		return body, problemResult(err)
	}
	if err := body.CheckInput(); err != nil {
		return body, problemResult(err)
	}
	return body, nil
}

func problemResult(err error) *tool.Result {
	var p *sched.Problem
	if errors.As(err, &p) {
		r := tool.Errorf("%s: %s. Fix: %s.", CreateName, p.Reason, p.Hint)
		return &r
	}
	r := tool.Errorf("%s: %v", CreateName, err)
	return &r
}

type noArgs struct{}

func (c *Client) list() tool.Tool {
	return tool.Func(ListName, "List the schedules you created (for this owner): id, status, when it fires next, and its task.", true,
		func(ctx context.Context, call tool.Call, _ noArgs) (tool.Result, error) {
			var l sched.List
			if res := c.do(ctx, call, http.MethodGet, sched.Path, nil, http.StatusOK, &l); res != nil {
				return *res, nil
			}
			if len(l.Data) == 0 {
				return tool.Text("no schedules"), nil
			}
			var b strings.Builder
			for _, s := range l.Data {
				b.WriteString(line(s) + "\n")
			}
			return tool.Text(b.String()), nil
		})
}

type cancelParams struct {
	ID string `json:"id" jsonschema:"the schedule id (sch_…) from schedule_create or schedule_list"`
}

func (c *Client) cancel() tool.Tool {
	// Not read-only: it changes what will happen, so the safe tier does
	// not get it (cancelling twice would be harmless, but the tier rule is
	// about side effects, not replays).
	return tool.Func(CancelName, "Cancel one of your schedules by id; it fires no more.", false,
		func(ctx context.Context, call tool.Call, p cancelParams) (tool.Result, error) {
			id := strings.TrimSpace(p.ID)
			if id == "" || strings.ContainsAny(id, "/?#") {
				return tool.Errorf("%s: %q is not a schedule id. Fix: send an id such as sch_… from schedule_list.", CancelName, p.ID), nil
			}
			var s sched.Schedule
			if res := c.do(ctx, call, http.MethodDelete, sched.Path+"/"+url.PathEscape(id), nil, http.StatusOK, &s); res != nil {
				return *res, nil
			}
			return tool.Text("cancelled " + line(s)), nil
		})
}

// line is one schedule as a terse log line.
func line(s sched.Schedule) string {
	var when string
	switch s.Kind {
	case sched.Once:
		when = "once at " + s.At
	case sched.Interval:
		when = fmt.Sprintf("every %ds", s.EverySeconds)
	case sched.Cron:
		tz := s.Timezone
		if tz == "" {
			tz = "UTC"
		}
		when = fmt.Sprintf("cron %q %s", s.Cron, tz)
	default:
		when = string(s.Kind)
	}
	out := fmt.Sprintf("%s %s %s", s.ID, s.Status, when)
	if s.NextFireAt != nil {
		out += "; next " + s.NextFireAt.UTC().Format(time.RFC3339)
	}
	out += fmt.Sprintf("; fired %d", s.Firings)
	input := s.Input
	if r := []rune(input); len(r) > 100 {
		input = string(r[:100]) + "…"
	}
	return out + "; task: " + strings.Join(strings.Fields(input), " ")
}

// do calls the control plane and decodes a want-status answer into out; any
// other outcome is the error result the model sees.
func (c *Client) do(ctx context.Context, call tool.Call, method, path string, body any, want int, out any) *tool.Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			r := tool.Errorf("encode the request: %v", err)
			return &r
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.o.URL+path, rd)
	if err != nil {
		r := tool.Errorf("the control plane URL is unusable: %v", err)
		return &r
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.o.Token)
	if call.Owner != "" {
		req.Header.Set(sched.HeaderUser, call.Owner)
	}
	if c.o.Agent != "" {
		req.Header.Set(sched.HeaderAgent, c.o.Agent)
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		c.o.Logger.Warn("control plane unreachable", "method", method, "path", path, "err", err)
		msg := "did not answer"
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("did not answer within %s", Timeout)
		}
		r := tool.Errorf("the scheduling control plane %s. Nothing was changed by this call as far as Delta knows; try again later, and check with %s before creating the same schedule twice.", msg, ListName)
		return &r
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		var eb sched.ErrorBody
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &eb) == nil && eb.Error.Message != "" {
			msg = eb.Error.Message
		}
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		c.o.Logger.Warn("control plane refused", "method", method, "path", path, "status", resp.StatusCode)
		r := tool.Errorf("the scheduling control plane refused (HTTP %d): %s", resp.StatusCode, msg)
		return &r
	}
	if err := json.Unmarshal(raw, out); err != nil {
		r := tool.Errorf("the scheduling control plane answered %d with a body that is not the expected JSON", resp.StatusCode)
		return &r
	}
	return nil
}
