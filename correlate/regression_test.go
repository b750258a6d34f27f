package correlate

import (
	"testing"
	"time"
)

// A regression shipped in four 12-minute steps (P99 ×1.25, ×1.4, ×1.6,
// ×1.8 as the new version takes 10, 25, 50, 100 % of the traffic) is
// drift to the spike detector and a regression against the level before
// the deploy: found once it has held ×1.5 for Hold, dated from the first
// step, and not a point sooner than a live run could have said it.
func TestChangeRegressionFindsAStepwiseRollout(t *testing.T) {
	step := 15 * time.Second
	change := 120 // the deploy, as a point index
	steps := []float64{1.25, 1.4, 1.6, 1.8}
	level := func(i int) float64 {
		if i < change {
			return 450
		}
		k := min(len(steps)-1, (i-change)/48) // 12 min of 15 s points
		return 450 * steps[k]
	}
	pts := gen(600, step, 3, 0.06, level)
	at := t0.Add(time.Duration(change) * step)
	if got := DetectSpikes(pts, SpikeOptions{Step: step, Quantile: true}); len(got) > 0 {
		t.Logf("the spike detector found %d spike(s) (first onset %v after the deploy): the fixture is not the drift this rule is for", len(got), got[0].Onset.Sub(at))
	}
	sp, ok := ChangeRegression(pts, at, RegressionOptions{Step: step, SLO: 700})
	if !ok {
		t.Fatal("a ×1.8 regression rolled out in four 12-minute steps was not found")
	}
	if d := sp.Onset.Sub(at); d < 0 || d > 2*time.Minute {
		t.Errorf("onset %v after the deploy, want within 2 min of it (the first step moved P99 ×1.25)", d)
	}
	if d := sp.DetectedAt.Sub(at); d < 24*time.Minute || d > 48*time.Minute {
		t.Errorf("detected %v after the deploy, want once ×1.5 held 10 min (the third step is at 24 min)", d)
	}
	if !sp.Ongoing || sp.Severity != "page" || sp.BaselineKind != "before_change" || sp.Baseline < 420 || sp.Baseline > 480 {
		t.Errorf("spike %+v: want ongoing, a page (P99 over its 700 ms SLO), baseline ≈450 before the change", sp)
	}
	// Causal: the data up to a step before the verdict does not give it.
	var early []Point
	for _, p := range pts {
		if p.T < sp.DetectedAt.UnixMilli() {
			early = append(early, p)
		}
	}
	if _, ok := ChangeRegression(early, at, RegressionOptions{Step: step, SLO: 700}); ok {
		t.Errorf("found with the data up to %v only: DetectedAt is not when a live run would have said it", sp.DetectedAt.Sub(at))
	}
	// A rollback ends it.
	back := gen(600, step, 3, 0.06, func(i int) float64 {
		if i >= change+200 {
			return 450
		}
		return level(i)
	})
	sp, ok = ChangeRegression(back, at, RegressionOptions{Step: step})
	if !ok || sp.Ongoing || sp.End.Sub(at) < 45*time.Minute || sp.End.Sub(at) > 52*time.Minute {
		t.Errorf("rolled back 50 min after the deploy: got %+v (found %t), want it found, over, ending about 50 min after the deploy", sp, ok)
	}
}

// What the rule must leave alone after a change: a cold-start bump
// (×3 for five minutes), a rise under the ratio (×1.35), latency that
// climbs with the day's traffic, a rise that comes after Watch, and a
// change with too little data before it to know the level.
func TestChangeRegressionLeavesRoutineRisesAlone(t *testing.T) {
	step := 15 * time.Second
	change := 120
	at := t0.Add(time.Duration(change) * step)
	ramp := func(i int) float64 { return min(1, max(0, float64(i-change)/240)) } // an hour's climb
	for _, tc := range []struct {
		name   string
		level  func(i int) float64
		load   func(i int) float64
		points int
		from   int // first point index
	}{
		{name: "cold-start bump", level: func(i int) float64 {
			if i >= change && i < change+20 {
				return 1350
			}
			return 450
		}},
		{name: "under the ratio", level: func(i int) float64 {
			if i >= change {
				return 450 * 1.35
			}
			return 450
		}},
		{name: "traffic climb", level: func(i int) float64 { return 450 * (1 + 0.8*ramp(i)) },
			load: func(i int) float64 { return 40 * (1 + 0.7*ramp(i)) }},
		{name: "after the watch", points: 900, level: func(i int) float64 {
			if i >= change+500 { // two hours and five minutes on
				return 900
			}
			return 450
		}},
		{name: "no level before", from: change - 8, level: func(i int) float64 {
			if i >= change {
				return 900
			}
			return 450
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.points
			if n == 0 {
				n = 600
			}
			pts := gen(n, step, 5, 0.06, tc.level)[tc.from:]
			opt := RegressionOptions{Step: step}
			if tc.load != nil {
				opt.Load = gen(n, step, 6, 0.03, tc.load)
			}
			if sp, ok := ChangeRegression(pts, at, opt); ok {
				t.Errorf("found a regression: %+v", sp)
			}
		})
	}
}
