package sim

import "math"

// effect is a cause's level over time: 0 before from, ramping linearly to 1
// over ramp seconds, 1 until to, then back to 0 over ramp. Times are seconds
// from the window start; to is +Inf for a cause that never recovers.
type effect struct {
	from, to, ramp float64
}

// active reports whether the effect was set up at all.
func (e effect) active() bool { return e.ramp > 0 || e.to > e.from }

// level returns the effect's strength in [0, 1] at t.
func (e effect) level(t float64) float64 {
	if !e.active() || t < e.from {
		return 0
	}
	up := 1.0
	if e.ramp > 0 {
		up = math.Min(1, (t-e.from)/e.ramp)
	}
	if t < e.to {
		return up
	}
	if e.ramp <= 0 {
		return 0
	}
	return math.Max(0, math.Min(up, 1-(t-e.to)/e.ramp))
}

// stepValue is a piecewise-constant value: v from time t on.
type stepValue struct {
	t float64
	v float64
}

// valueAt returns the value in force at t: the last change at or before t,
// or def before the first change. Changes are sorted by time.
func valueAt(changes []stepValue, t, def float64) float64 {
	v := def
	for _, c := range changes {
		if c.t > t {
			break
		}
		v = c.v
	}
	return v
}

// inf is +Inf, the end of causes that do not recover.
var inf = math.Inf(1)
