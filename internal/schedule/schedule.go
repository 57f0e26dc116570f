// Package schedule is what a schedule is, independent of who keeps it: the
// three kinds (a one-time instant, a fixed interval of at least a minute, a
// five-field cron expression in an IANA timezone), their validation with a
// reason and a repair hint, the times each fires, the catch-up rule after
// downtime, and the JSON documents of the control plane's REST surface
// (/v1/schedules), which the schedule tools speak and `delta scheduler`
// serves.
//
// The timezone database is embedded (time/tzdata), so a container image
// without /usr/share/zoneinfo still resolves Europe/Paris.
package schedule

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a static image may have no zoneinfo; cron timezones must still resolve

	"github.com/robfig/cron/v3"
)

// Kind is one of the three schedule kinds.
type Kind string

// The kinds.
const (
	Once     Kind = "once"     // fires once at At
	Interval Kind = "interval" // fires every EverySeconds after its creation
	Cron     Kind = "cron"     // fires at each match of Cron in Timezone
)

// MinInterval is the shortest interval a schedule may have.
const MinInterval = 60 * time.Second

// maxInterval keeps interval arithmetic far from overflow.
const maxInterval = 10 * 366 * 24 * time.Hour

// MaxInputBytes bounds the task input a schedule carries.
const MaxInputBytes = 16 << 10

// Spec is when a schedule fires: Kind and the one field that kind reads.
type Spec struct {
	Kind         Kind   `json:"kind"`
	At           string `json:"at,omitempty"`            // once: an RFC 3339 instant with an offset
	EverySeconds int64  `json:"every_seconds,omitempty"` // interval: ≥ 60
	Cron         string `json:"cron,omitempty"`          // cron: minute hour day-of-month month day-of-week
	Timezone     string `json:"timezone,omitempty"`      // cron: an IANA name; empty = UTC
}

// Problem is a spec (or request) that cannot be accepted: the field, why,
// and what to send instead.
type Problem struct {
	Field  string
	Reason string
	Hint   string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%s: %s (%s)", p.Field, p.Reason, p.Hint)
}

func problem(field, hint, format string, a ...any) *Problem {
	return &Problem{Field: field, Reason: fmt.Sprintf(format, a...), Hint: hint}
}

// cronParser reads exactly five fields: no seconds, no descriptors such as
// @daily, no CRON_TZ= prefix (the timezone has its own field).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Plan is a validated spec: the times it fires.
type Plan struct {
	kind   Kind
	at     time.Time     // once
	anchor time.Time     // interval: the creation instant; slots are anchor + k·every, k ≥ 1
	every  time.Duration // interval
	cron   cron.Schedule // cron, with its location set
	loc    *time.Location
	// everyHour is a cron whose hour field is *: it follows real time
	// through a daylight-saving change instead of once per wall-clock time.
	everyHour bool
}

// allHours is the hour field of a cron expression whose hour is *.
const allHours = 1<<24 - 1

// Compile validates s as created at created (a one-time instant must be
// after it) and returns its plan. A returned error is a *Problem.
func (s Spec) Compile(created time.Time) (*Plan, error) {
	if err := s.fieldsFor(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case Once:
		at, err := ParseInstant(s.At)
		if err != nil {
			return nil, err
		}
		if !at.After(created) {
			return nil, problem("at", "send a time after "+created.UTC().Format(time.RFC3339)+
				", or use kind interval or cron for something that repeats",
				"%s is not in the future", s.At)
		}
		return &Plan{kind: Once, at: at}, nil
	case Interval:
		d := time.Duration(s.EverySeconds) * time.Second
		if s.EverySeconds < int64(MinInterval/time.Second) {
			return nil, problem("every_seconds", "send 60 or more; for a single reminder use kind once",
				"%d seconds is shorter than the 60-second minimum", s.EverySeconds)
		}
		if d > maxInterval || s.EverySeconds > int64(maxInterval/time.Second) {
			return nil, problem("every_seconds", "send at most ten years in seconds, or use kind cron",
				"%d seconds is too long", s.EverySeconds)
		}
		return &Plan{kind: Interval, anchor: created, every: d}, nil
	case Cron:
		loc, err := Location(s.Timezone)
		if err != nil {
			return nil, err
		}
		expr := strings.TrimSpace(s.Cron)
		if n := len(strings.Fields(expr)); n != 5 {
			return nil, problem("cron", `send five fields "minute hour day-of-month month day-of-week", e.g. "0 8 * * *" for 08:00 every day; put the timezone in the timezone field`,
				"%q has %d fields, want 5", s.Cron, n)
		}
		sched, err := cronParser.Parse(expr)
		if err != nil {
			return nil, problem("cron", `check each field's range (minute 0-59, hour 0-23, day 1-31, month 1-12, weekday 0-6), e.g. "*/15 9-17 * * 1-5"`,
				"%q is not a valid cron expression: %v", s.Cron, err)
		}
		everyHour := true
		if ss, ok := sched.(*cron.SpecSchedule); ok {
			ss.Location = loc
			everyHour = ss.Hour&allHours == allHours
		}
		return &Plan{kind: Cron, cron: sched, loc: loc, everyHour: everyHour}, nil
	}
	return nil, problem("kind", "send once (with at), interval (with every_seconds) or cron (with cron and an optional timezone)",
		"unknown kind %q", s.Kind)
}

// fieldsFor refuses fields the kind does not read, so a model that mixed
// two kinds is told instead of silently getting one of them.
func (s Spec) fieldsFor() *Problem {
	set := map[string]bool{"at": s.At != "", "every_seconds": s.EverySeconds != 0, "cron": s.Cron != "", "timezone": s.Timezone != ""}
	want := map[Kind][]string{Once: {"at"}, Interval: {"every_seconds"}, Cron: {"cron", "timezone"}}[s.Kind]
	if want == nil {
		return nil // Compile names the unknown kind
	}
	for _, f := range []string{"at", "every_seconds", "cron", "timezone"} {
		if set[f] && !contains(want, f) {
			return problem(f, "send only "+strings.Join(want, " and ")+" with kind "+string(s.Kind),
				"%s does not apply to kind %s", f, s.Kind)
		}
	}
	if !set[want[0]] {
		return problem(want[0], "kind "+string(s.Kind)+" needs "+want[0], "%s is missing", want[0])
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ParseInstant reads an ISO 8601 / RFC 3339 instant. The offset is
// required: a bare local time is ambiguous on a server whose zone nobody
// chose.
func ParseInstant(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, problem("at", `send an ISO 8601 time with its offset, e.g. "2026-12-24T08:00:00+01:00" or "2026-12-24T07:00:00Z"`,
			"%q is not an ISO 8601 timestamp with an offset", v)
	}
	return t, nil
}

// Location resolves an IANA timezone name; empty is UTC. "Local" is
// refused: it would mean whatever zone the control plane's host has.
func Location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, problem("timezone", `name the zone, e.g. "Europe/Paris" or "America/New_York"`, `"Local" is not a fixed timezone`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, problem("timezone", `send an IANA name such as "Europe/Paris", "America/New_York" or "UTC"`,
			"unknown timezone %q", name)
	}
	return loc, nil
}

// Kind is the plan's kind.
func (p *Plan) Kind() Kind { return p.kind }

// Next is the first firing strictly after t; zero when there is none (a
// one-time schedule at or past its instant).
func (p *Plan) Next(t time.Time) time.Time {
	switch p.kind {
	case Once:
		if p.at.After(t) {
			return p.at.UTC()
		}
		return time.Time{}
	case Interval:
		if t.Before(p.anchor) {
			return p.anchor.Add(p.every)
		}
		k := t.Sub(p.anchor)/p.every + 1
		return p.anchor.Add(k * p.every)
	case Cron:
		for {
			n := p.cron.Next(t.In(p.loc))
			if n.IsZero() || p.everyHour || !p.repeated(n) {
				return n.UTC()
			}
			t = n
		}
	}
	return time.Time{}
}

// repeated reports that n's wall-clock time already happened earlier the
// same night, because the clocks went back in between: a daily 02:30 fires
// at the first 02:30 only. (A wall-clock time the clocks jump over in spring
// does not happen that day, so it does not fire that day.)
func (p *Plan) repeated(n time.Time) bool {
	_, before := n.Add(-3 * time.Hour).In(p.loc).Zone()
	_, at := n.In(p.loc).Zone()
	if before <= at {
		return false
	}
	e := n.Add(-time.Duration(before-at) * time.Second).In(p.loc)
	w := n.In(p.loc)
	return e.Hour() == w.Hour() && e.Minute() == w.Minute() && e.Day() == w.Day()
}

// Catchup is the firing a scheduler makes when it wakes at now and the
// schedule was due at due (due ≤ now): the most recent slot in [due, now],
// and how many earlier slots in that window it skips. A one-time schedule
// fires late, once; an interval or cron schedule that missed several slots
// during downtime fires once, for the latest, rather than in a burst.
func (p *Plan) Catchup(due, now time.Time) (slot time.Time, skipped int) {
	slot = due
	if p.kind == Interval && !now.Before(due) {
		n := int(now.Sub(due) / p.every)
		return due.Add(time.Duration(n) * p.every), n
	}
	if p.kind != Cron {
		return slot, 0
	}
	for {
		n := p.Next(slot)
		if n.IsZero() || n.After(now) {
			return slot, skipped
		}
		slot = n
		skipped++
	}
}
