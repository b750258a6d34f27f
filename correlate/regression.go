package correlate

import (
	"math"
	"sort"
	"time"
)

// RegressionOptions tune ChangeRegression; zero fields take defaults.
type RegressionOptions struct {
	Step   time.Duration // spacing of points; default 15s
	Before time.Duration // the stretch before the change that is its baseline; default 30m
	Hold   time.Duration // how long the new level must hold; default 10m
	Watch  time.Duration // how long after the change a regression is looked for; default 2h
	// Load is the curve's traffic (requests/s, same scope and step): a
	// level that rose with traffic is load, not the change (the capacity
	// rules judge it).
	Load []Point
	// Previous is the same curve a day earlier (its points' own times,
	// covering the day before's Before stretch and watch): a rise it
	// made then too, at the same time of day, is the day's pattern
	// (larger requests in business hours, a nightly batch), not the
	// change's, and the level the change is held to is moved by it.
	Previous    []Point
	SLO         float64 // for Severity, in the series' unit (0 = none)
	Sensitivity Sensitivity
}

// regressionRatio is how much higher than before the change a latency
// must hold: the alarm detector's strong ratio at medium sensitivity.
func (s Sensitivity) regressionRatio() float64 {
	switch s {
	case SensitivityLow:
		return 1.8
	case SensitivityHigh:
		return 1.3
	}
	return 1.5
}

// Below this many baseline points, the level before the change is not
// known well enough to compare with.
const minRegressionBaseline = 10

// regressionLoadRise is how much traffic may have grown since the change
// before a rise is taken for load rather than the change.
const regressionLoadRise = 1.2

// ChangeRegression compares a latency curve after a change with its level
// in the Before stretch before the change, and returns the regression the
// change brought in when, within Watch of it, the curve held at least the
// sensitivity's ratio (×1.5 at medium) and 4 robust deviations over that
// level for Hold (80 % of the points, and their median).
//
// It finds what DetectSpikes, by design, leaves alone: a rise so gradual
// that it is drift to a trailing baseline — a regression shipped by
// progressive delivery at 10, 25, 50 and 100 % of the traffic, a step
// every 10 to 15 minutes (Argo Rollouts, Flagger), moves the quantiles
// ×1.1–1.25 per step, and each step becomes the next one's baseline. The
// change gives what a trailing baseline cannot: the level before it, and
// so a comparison over the whole rollout. Google's canary analysis and
// Datadog's faulty-deployment detection compare before and after a
// deploy the same way; the hold and the load check keep a cold-start bump
// and the day's traffic climb out.
//
// The spike starts at the first point of the climb that held up to the
// verdict (its trailing four-point median over a third of the way to the
// ratio), ends when the curve has stayed under that for half of Hold, and
// is detected when the hold is complete: DetectedAt is causal. Its
// BaselineKind is "before_change".
func ChangeRegression(points []Point, change time.Time, opt RegressionOptions) (Spike, bool) {
	if opt.Step <= 0 {
		opt.Step = 15 * time.Second
	}
	if opt.Before <= 0 {
		opt.Before = 30 * time.Minute
	}
	if opt.Hold <= 0 {
		opt.Hold = 10 * time.Minute
	}
	if opt.Watch <= 0 {
		opt.Watch = 2 * time.Hour
	}
	ratio := opt.Sensitivity.regressionRatio()
	c := change.UnixMilli()
	var before []float64
	var after []Point
	for _, p := range points {
		switch {
		case math.IsNaN(p.V) || math.IsInf(p.V, 0):
		case p.T >= c-opt.Before.Milliseconds() && p.T < c:
			before = append(before, p.V)
		case p.T >= c:
			after = append(after, p)
		}
	}
	if len(before) < max(minRegressionBaseline, int(opt.Before/opt.Step)/2) {
		return Spike{}, false
	}
	base := robust(before, 0.05, 0)
	if !(base.Median > 0) {
		return Spike{}, false
	}
	high := math.Max(ratio*base.Median, base.Median+4*base.Scale)
	low := base.Median * (1 + (ratio-1)/3)
	loadBefore, loadOK := levelBefore(opt.Load, c, opt.Before)
	const day = int64(24 * time.Hour / time.Millisecond)
	prevBefore, prevOK := levelBefore(opt.Previous, c-day, opt.Before)

	hold := max(4, int(opt.Hold/opt.Step))
	watchEnd := c + opt.Watch.Milliseconds()
	win := make([]float64, 0, hold)
	for i := hold - 1; i < len(after) && after[i].T <= watchEnd; i++ {
		w := after[i-hold+1 : i+1]
		// The window must span most of Hold: points missing in a gap do
		// not make a short rise look held.
		if time.Duration(w[len(w)-1].T-w[0].T)*time.Millisecond < opt.Hold*8/10-opt.Step {
			continue
		}
		win, over := win[:0], 0
		for _, p := range w {
			win = append(win, p.V)
			if p.V >= high {
				over++
			}
		}
		lvl := median(win)
		if lvl < high || over < len(w)*8/10 {
			continue
		}
		if loadOK {
			if now, ok := levelBetween(opt.Load, w[0].T, w[len(w)-1].T); ok && now >= regressionLoadRise*loadBefore {
				continue
			}
		}
		if prevOK {
			// The day before, from the same stretch to the same window:
			// what the time of day alone did to the curve.
			if then, ok := levelBetween(opt.Previous, w[0].T-day, w[len(w)-1].T-day); ok && then > prevBefore && lvl < high*then/prevBefore {
				continue
			}
		}
		return regressionSpike(after, i, lvl, base, low, high, hold, opt), true
	}
	return Spike{}, false
}

// regressionSpike builds the spike ChangeRegression found at after[at],
// whose hold window's median is lvl.
func regressionSpike(after []Point, at int, lvl float64, base robustStats, low, high float64, hold int, opt RegressionOptions) Spike {
	trailing := func(i int) float64 {
		lo := max(0, i-3)
		xs := make([]float64, 0, 4)
		for _, p := range after[lo : i+1] {
			xs = append(xs, p.V)
		}
		return median(xs)
	}
	start := at
	for start > 0 && trailing(start-1) >= low {
		start--
	}
	// The first point of that run that is itself up (the trailing median
	// lags the climb by a point or two).
	for start < at && after[start].V < low {
		start++
	}
	end, ongoing, below := at, true, 0
	for j := at + 1; j < len(after); j++ {
		if after[j].V < low {
			if below++; below >= max(2, hold/2) {
				ongoing = false
				break
			}
			continue
		}
		below, end = 0, j
	}
	if ongoing {
		end = len(after) - 1
	}
	peak := start
	for j := start; j <= end; j++ {
		if after[j].V > after[peak].V {
			peak = j
		}
	}
	z := (lvl - base.Median) / base.Scale
	thrZ := (high - base.Median) / base.Scale
	sp := Spike{
		Start: after[start].Time(), End: after[end].Time(), Ongoing: ongoing, Onset: after[start].Time(),
		PeakTime: after[peak].Time(), PeakValue: after[peak].V, Baseline: base.Median, Direction: Up,
		DetectedAt: after[at].Time(), Score: alarmScore(z, thrZ), Z: z, BaselineKind: "before_change",
	}
	sp.Severity, sp.SLOMs = severity(sp, after, SpikeOptions{SLO: opt.SLO}.withDefaults()), opt.SLO
	return sp
}

// levelBefore is the median of the points in [t−span, t).
func levelBefore(points []Point, t int64, span time.Duration) (float64, bool) {
	return levelBetween(points, t-span.Milliseconds(), t-1)
}

// levelBetween is the median of the finite points in [from, to].
func levelBetween(points []Point, from, to int64) (float64, bool) {
	i := sort.Search(len(points), func(i int) bool { return points[i].T >= from })
	var xs []float64
	for ; i < len(points) && points[i].T <= to; i++ {
		if v := points[i].V; !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	if len(xs) < 3 {
		return 0, false
	}
	return median(xs), true
}
