package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var created = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestCompileRefusesBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		words string // in the reason
	}{
		{"bad cron", Spec{Kind: Cron, Cron: "61 8 * * *"}, "cron", "not a valid cron expression"},
		{"cron with six fields", Spec{Kind: Cron, Cron: "0 0 8 * * *"}, "cron", "has 6 fields"},
		{"cron descriptor", Spec{Kind: Cron, Cron: "@daily"}, "cron", "has 1 fields"},
		{"cron with a timezone prefix", Spec{Kind: Cron, Cron: "CRON_TZ=Europe/Paris 0 8 * * *"}, "cron", "has 6 fields"},
		{"interval 59 s", Spec{Kind: Interval, EverySeconds: 59}, "every_seconds", "shorter than the 60-second minimum"},
		{"negative interval", Spec{Kind: Interval, EverySeconds: -60}, "every_seconds", "shorter"},
		{"huge interval", Spec{Kind: Interval, EverySeconds: 1 << 62}, "every_seconds", "too long"},
		{"past timestamp", Spec{Kind: Once, At: "2026-11-30T08:00:00Z"}, "at", "not in the future"},
		{"timestamp now", Spec{Kind: Once, At: "2026-12-01T10:00:00Z"}, "at", "not in the future"},
		{"timestamp without offset", Spec{Kind: Once, At: "2026-12-24T08:00:00"}, "at", "with an offset"},
		{"not a timestamp", Spec{Kind: Once, At: "tomorrow at 8"}, "at", "not an ISO 8601"},
		{"unknown tz", Spec{Kind: Cron, Cron: "0 8 * * *", Timezone: "Europe/Atlantis"}, "timezone", "unknown timezone"},
		{"Local tz", Spec{Kind: Cron, Cron: "0 8 * * *", Timezone: "Local"}, "timezone", "not a fixed timezone"},
		{"unknown kind", Spec{Kind: "daily"}, "kind", "unknown kind"},
		{"empty kind", Spec{}, "kind", "unknown kind"},
		{"mixed kinds", Spec{Kind: Interval, EverySeconds: 60, Cron: "0 8 * * *"}, "cron", "does not apply to kind interval"},
		{"timezone on interval", Spec{Kind: Interval, EverySeconds: 60, Timezone: "UTC"}, "timezone", "does not apply"},
		{"missing at", Spec{Kind: Once}, "at", "missing"},
		{"missing cron", Spec{Kind: Cron, Timezone: "UTC"}, "cron", "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.spec.Compile(created)
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("Compile(%+v) = %v, want a *Problem", tc.spec, err)
			}
			if p.Field != tc.field || !strings.Contains(p.Reason, tc.words) || p.Hint == "" {
				t.Fatalf("got field %q reason %q hint %q; want field %q, reason with %q, a hint", p.Field, p.Reason, p.Hint, tc.field, tc.words)
			}
		})
	}
}

func TestCompileAcceptsGoodSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		next string // first firing after creation, UTC
	}{
		{Spec{Kind: Once, At: "2026-12-24T08:00:00+01:00"}, "2026-12-24T07:00:00Z"},
		{Spec{Kind: Interval, EverySeconds: 60}, "2026-12-01T10:01:00Z"},
		{Spec{Kind: Interval, EverySeconds: 3600}, "2026-12-01T11:00:00Z"},
		{Spec{Kind: Cron, Cron: "0 8 * * *"}, "2026-12-02T08:00:00Z"},
		{Spec{Kind: Cron, Cron: "0 8 * * *", Timezone: "Europe/Paris"}, "2026-12-02T07:00:00Z"},
		{Spec{Kind: Cron, Cron: "*/15 9-17 * * 1-5", Timezone: "America/New_York"}, "2026-12-01T14:00:00Z"},
	} {
		p, err := tc.spec.Compile(created)
		if err != nil {
			t.Fatalf("Compile(%+v): %v", tc.spec, err)
		}
		if got := p.Next(created).Format(time.RFC3339); got != tc.next {
			t.Errorf("%+v: next %s, want %s", tc.spec, got, tc.next)
		}
	}
}

// TestCronAcrossDST is the documented behaviour of a cron schedule in a
// timezone with daylight saving time: the wall-clock time holds and the UTC
// instant moves by the hour; a time that does not exist on the spring day
// does not fire that day, one that happens twice on the autumn day fires
// once, at its first occurrence, and an every-hour expression keeps
// following real time through the repeated hour.
func TestCronAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		name, cron string
		from       string
		want       []string // successive firings, UTC
	}{
		{"08:00 Paris across the March change", "0 8 * * *", "2026-03-27T12:00:00Z", []string{
			"2026-03-28T07:00:00Z", // Saturday, CET (+01:00)
			"2026-03-29T06:00:00Z", // Sunday: clocks went forward at 02:00, CEST (+02:00)
			"2026-03-30T06:00:00Z",
		}},
		{"08:00 Paris across the October change", "0 8 * * *", "2026-10-23T12:00:00Z", []string{
			"2026-10-24T06:00:00Z", // Saturday, CEST
			"2026-10-25T07:00:00Z", // Sunday: clocks went back at 03:00, CET
			"2026-10-26T07:00:00Z",
		}},
		{"02:30 Paris on the day it does not exist", "30 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-30T00:30:00Z", // 02:30 CEST on Monday: Sunday has no 02:30
		}},
		{"02:30 Paris on the day it happens twice", "30 2 * * *", "2026-10-24T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST, the first of the two
			"2026-10-26T01:30:00Z", // 02:30 CET on Monday, not the second 02:30 on Sunday
		}},
		{"every hour at :30 through the repeated hour", "30 * * * *", "2026-10-25T00:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST
			"2026-10-25T01:30:00Z", // 02:30 CET: an hour later in real time
			"2026-10-25T02:30:00Z", // 03:30 CET
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Spec{Kind: Cron, Cron: tc.cron, Timezone: "Europe/Paris"}.Compile(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			at, _ := time.Parse(time.RFC3339, tc.from)
			for i, w := range tc.want {
				at = p.Next(at)
				if got := at.Format(time.RFC3339); got != w {
					t.Fatalf("firing %d: %s, want %s", i+1, got, w)
				}
			}
		})
	}
}

func TestCatchupFiresOnceForTheLatestSlot(t *testing.T) {
	iv, _ := Spec{Kind: Interval, EverySeconds: 60}.Compile(created)
	due := created.Add(time.Minute)
	for _, tc := range []struct {
		now     time.Duration // after due
		slot    time.Duration // after due
		skipped int
	}{
		{0, 0, 0},
		{59 * time.Second, 0, 0},
		{60 * time.Second, 60 * time.Second, 1},
		{10*time.Hour + 30*time.Second, 10 * time.Hour, 600},
	} {
		slot, skipped := iv.Catchup(due, due.Add(tc.now))
		if !slot.Equal(due.Add(tc.slot)) || skipped != tc.skipped {
			t.Errorf("interval woken %s late: slot +%s skipped %d, want +%s skipped %d", tc.now, slot.Sub(due), skipped, tc.slot, tc.skipped)
		}
	}
	cr, _ := Spec{Kind: Cron, Cron: "0 8 * * *", Timezone: "Europe/Paris"}.Compile(created)
	due = cr.Next(created) // 2026-12-02T07:00Z
	slot, skipped := cr.Catchup(due, due.Add(72*time.Hour+time.Hour))
	if want := due.Add(72 * time.Hour); !slot.Equal(want) || skipped != 3 {
		t.Errorf("cron down three days: slot %s skipped %d, want %s skipped 3", slot, skipped, want)
	}
	once, _ := Spec{Kind: Once, At: "2026-12-02T00:00:00Z"}.Compile(created)
	due = once.Next(created)
	if slot, skipped := once.Catchup(due, due.Add(48*time.Hour)); !slot.Equal(due) || skipped != 0 {
		t.Errorf("one-time woken late: slot %s skipped %d, want its own instant", slot, skipped)
	}
	if n := once.Next(due); !n.IsZero() {
		t.Errorf("one-time schedule fires again at %s", n)
	}
}

func TestFireKeyNamesScheduleAndSlot(t *testing.T) {
	slot := time.Date(2026, 12, 2, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	if got := FireKey("sch_1", slot); got != "sched-sch_1-20261202T070000Z" {
		t.Fatalf("FireKey = %q", got)
	}
	if FireKey("sch_1", slot) == FireKey("sch_1", slot.Add(time.Minute)) || FireKey("a", slot) == FireKey("b", slot) {
		t.Fatal("two firings share a key")
	}
}

func FuzzCompile(f *testing.F) {
	f.Add("cron", "", int64(0), "0 8 * * *", "Europe/Paris")
	f.Add("once", "2027-01-01T00:00:00Z", int64(0), "", "")
	f.Add("interval", "", int64(60), "", "")
	f.Add("cron", "", int64(0), "*/0 * * * *", "")
	f.Fuzz(func(t *testing.T, kind, at string, every int64, expr, tz string) {
		p, err := Spec{Kind: Kind(kind), At: at, EverySeconds: every, Cron: expr, Timezone: tz}.Compile(created)
		if err != nil {
			var pr *Problem
			if !errors.As(err, &pr) || pr.Reason == "" || pr.Hint == "" {
				t.Fatalf("error without reason and hint: %v", err)
			}
			return
		}
		if n := p.Next(created); !n.IsZero() && !n.After(created) {
			t.Fatalf("next firing %s is not after %s", n, created)
		}
	})
}
