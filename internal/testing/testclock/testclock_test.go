package testclock

import (
	"testing"
	"time"
)

func TestParseShift(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"400d", 400 * 24 * time.Hour, false},
		{"-400d", -400 * 24 * time.Hour, false},
		{" -36h ", -36 * time.Hour, false},
		{"1.5d", 0, true},
		{"soon", 0, true},
	} {
		got, err := ParseShift(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseShift(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestNowFollowsShift(t *testing.T) {
	if d := Now().Sub(time.Now()) - Shift(); d.Abs() > time.Second {
		t.Fatalf("Now is %v off the real clock plus its shift", d)
	}
}
