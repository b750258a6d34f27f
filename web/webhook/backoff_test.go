package webhook

import (
	"testing"
	"time"
)

// A receiver down for a working day's maintenance window still gets its
// deliveries: with the defaults, the waits between attempts add up to at
// least 8 hours at their shortest draw (12 attempts gave up after 1.2 h).
func TestDefaultRetriesOutlastEightHours(t *testing.T) {
	o := NewDispatcher(nil, Options{}).opt
	var least time.Duration
	for n := 1; n < o.MaxAttempts; n++ {
		least += shortestBackoff(n, o.BaseBackoff, o.MaxBackoff)
	}
	if least < 8*time.Hour {
		t.Errorf("%d attempts give up after %v at the shortest, want ≥ 8h", o.MaxAttempts, least)
	}
	for range 1000 {
		for n := 1; n < 30; n++ {
			if b, lo := backoff(n, o.BaseBackoff, o.MaxBackoff), shortestBackoff(n, o.BaseBackoff, o.MaxBackoff); b < lo || b > 2*lo {
				t.Fatalf("backoff(%d) = %v, outside [%v, %v]", n, b, lo, 2*lo)
			}
		}
	}
}

// shortestBackoff is backoff's least draw: half the doubled, capped wait.
func shortestBackoff(n int, base, most time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most) / 2
}
