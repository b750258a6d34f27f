// Package testclock is the clock tests hand to the code under test.
//
// A test that fixes a date for the server while something else reads the
// real clock (a cookie jar, Chromium, Prometheus, Postgres' now(), a
// time.Now() left in production code) passes until the calendar moves past
// the fixture, then fails for everyone. Tests therefore derive their
// fixtures from Now, which is the real time moved by
// WATERLINE_TEST_CLOCK_SHIFT ("400d", "-400d" or any Go duration; unset =
// no shift). Running the suites shifted (make test does, by ±400 days)
// makes any consumer that still reads the real clock disagree with the
// fixtures at once, instead of on some future date.
package testclock

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvShift names the variable that moves the test clock.
const EnvShift = "WATERLINE_TEST_CLOCK_SHIFT"

var shift = sync.OnceValues(func() (time.Duration, error) { return ParseShift(os.Getenv(EnvShift)) })

// ParseShift reads a shift: a whole number of days ("400d", "-400d") or a
// Go duration ("-36h"); "" is no shift.
func ParseShift(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(v, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%s: want days such as 400d or -400d, or a Go duration, got %q", EnvShift, v)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: want days such as 400d or -400d, or a Go duration, got %q", EnvShift, v)
	}
	return d, nil
}

// Shift is how far the test clock is moved from the real one. A bad value
// panics: a suite that silently ran unshifted would prove nothing.
func Shift() time.Duration {
	d, err := shift()
	if err != nil {
		panic(err)
	}
	return d
}

// Now is the test clock: the real time, in UTC, moved by Shift.
func Now() time.Time { return time.Now().UTC().Add(Shift()) }
