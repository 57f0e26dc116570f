package engine

import (
	"testing"
	"time"
)

// Waiters begun in one burst must not re-read the run table in step: each
// draws its own period, within a quarter of waitBackstop.
func TestWaitBackstopsAreSpread(t *testing.T) {
	lo, hi := waitBackstop*3/4, waitBackstop*5/4
	seen := map[time.Duration]bool{}
	for range 256 {
		d := backstopPeriod()
		if d < lo || d >= hi {
			t.Fatalf("backstop period %v outside [%v, %v)", d, lo, hi)
		}
		seen[d] = true
	}
	// 256 draws from a half-second range at nanosecond grain: nearly all
	// distinct. A fixed period gives one.
	if len(seen) < 200 {
		t.Fatalf("%d distinct backstop periods in 256 waits, want them spread", len(seen))
	}
}
