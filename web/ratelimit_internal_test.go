package web

import (
	"net/netip"
	"testing"
	"time"
)

// A limiter full of failing clients keeps their counts: new clients share
// one bucket instead of wiping everyone's (which let 50,000 addresses
// reset the limit, their own included).
func TestFailLimiterFullKeepsCounts(t *testing.T) {
	var l failLimiter
	now := time.Unix(1_800_000_000, 0)
	victim := netip.MustParsePrefix("192.0.2.1/32")
	for range failBurst {
		l.fail(victim, now)
	}
	if l.wait(victim, now) == 0 {
		t.Fatal("a client that used its burst may go on")
	}
	base := netip.MustParseAddr("2001:db8::")
	for i := range maxLimitKeys {
		a := base.As16()
		a[4], a[5], a[6], a[7] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		p, _ := netip.AddrFrom16(a).Prefix(64)
		l.fail(p, now)
	}
	if l.wait(victim, now) == 0 {
		t.Error("50,000 other addresses reset a limited client's count")
	}
	if len(l.m) > maxLimitKeys+1 {
		t.Errorf("%d keys held", len(l.m))
	}
	// New clients past the bound share one bucket: it runs out too.
	fresh := netip.MustParsePrefix("198.51.100.7/32")
	for range failBurst {
		l.fail(fresh, now)
	}
	if l.wait(fresh, now) == 0 {
		t.Error("new clients past the bound are not limited")
	}
}
