package correlate

import (
	"math"
	"sort"
	"time"
)

// SpikeOptions tune DetectSpikes. The zero value of a field means its
// default (see DefaultSpikeOptions), so callers set only what they change.
type SpikeOptions struct {
	Direction      Direction     // Up (default), Down or Both
	Step           time.Duration // expected spacing of points; default 15s
	BaselineWindow time.Duration // trailing baseline length; default 60m
	BaselineGap    time.Duration // most recent stretch left out of the baseline; default 5m
	MinBaseline    int           // fewest baseline points for a causal verdict; default 20
	Z              float64       // robust z a point must reach; default 4
	MinRatio       float64       // x/baseline must reach this (Up) or 1/this (Down); default 1.3
	MinDelta       float64       // |x − baseline| must reach this, in the series' unit; default 0
	ScaleFloor     float64       // scale floor as a fraction of |baseline|; default 0.05
	Persist        int           // consecutive points a strong departure needs; default 2
	StrongZ        float64       // a departure is strong at this z …; default 8
	StrongRatio    float64       // … and this ratio; default 1.5
	PersistWeak    int           // a weaker one needs 80 % of this many recent points; default 12
	EndZ           float64       // a spike ends when z falls below this …; default 2
	EndPersist     int           // … for this many consecutive points; default 3
	OnsetLookback  time.Duration // how far before Start the onset may lie; default 20m
	MinDuration    time.Duration // a spike that ended sooner is a blip, unless it tripled; default 3m
	MaxCreep       time.Duration // a rise under ×2 that took longer than this to climb is drift; default 10m
	SLO            float64       // SLO in the series' unit (0 = none), for Severity
	// Quantile says the curve is a latency quantile, whose high point is
	// a handful of slow requests in one scrape interval: at steps too
	// coarse to time a blip by its length (45 s to MinDuration), a spike
	// over within MinDuration is still a blip unless one of its points
	// tripled, as at 15 s. Other curves (counts, rates: what ad-hoc PromQL
	// brings) keep their short spikes at those steps: on real per-minute
	// series such bursts are what experts label. A quantile's shift that
	// holds two minutes is also an alarm under the one-point threshold
	// (a latency that stays ×1.5 up is the incident, however noisy);
	// on the labelled real series, counts and rates of unknown meaning
	// shift and stay for reasons experts do not label: there the rule
	// raised false alarms from 1.01 to 1.32 per 1,000 points for 10 more
	// of 262 windows.
	Quantile bool
	// Load is the curve's traffic (requests/s of the same scope, at the
	// same step), when known: a quantile's held shift while traffic is up
	// ×1.1 on its own trailing median is latency following load, and is
	// an alarm only at the one-point threshold (a capacity spike).
	Load []Point
	// Sensitivity sets the alarm detector's false-alarm budget; default medium.
	Sensitivity Sensitivity
	// Locate finds the onset of what a known incident window holds (the
	// analysis) rather than deciding whether to raise an alarm: the fixed
	// trailing-baseline rules, without the series' own tail threshold.
	Locate bool
}

// DefaultSpikeOptions returns the defaults: a trailing 60-minute median/MAD
// baseline (the last 5 minutes left out so a slow ramp does not hide
// itself); a point departs at z ≥ 4 and ×1.3; a strong departure (z ≥ 8,
// ×1.5) is a spike after two consecutive points (30 s at a 15 s step), a
// weaker one only when it holds for 80 % of three minutes — the short
// window for fast burns, the long one so that P99 noise from a bursty
// minute stays quiet (the multi-window idea of SLO burn-rate alerts). A
// spike ends after three points back under z = 2; its onset is a two-level
// least-squares change point searched up to 20 minutes before its start.
func DefaultSpikeOptions() SpikeOptions {
	return SpikeOptions{
		Direction:      Up,
		Step:           15 * time.Second,
		BaselineWindow: 60 * time.Minute,
		BaselineGap:    5 * time.Minute,
		MinBaseline:    20,
		Z:              4,
		MinRatio:       1.3,
		ScaleFloor:     0.05,
		Persist:        2,
		StrongZ:        8,
		StrongRatio:    1.5,
		PersistWeak:    12,
		EndZ:           2,
		EndPersist:     3,
		OnsetLookback:  20 * time.Minute,
		MinDuration:    3 * time.Minute,
		MaxCreep:       10 * time.Minute,
	}
}

func (o SpikeOptions) withDefaults() SpikeOptions {
	d := DefaultSpikeOptions()
	if o.Direction == "" {
		o.Direction = d.Direction
	}
	if o.Step <= 0 {
		o.Step = d.Step
	}
	if o.BaselineWindow <= 0 {
		o.BaselineWindow = d.BaselineWindow
	}
	if o.BaselineGap <= 0 {
		o.BaselineGap = d.BaselineGap
	}
	if o.MinBaseline <= 0 {
		o.MinBaseline = d.MinBaseline
	}
	if o.Z <= 0 {
		o.Z = d.Z
	}
	if o.MinRatio <= 0 {
		o.MinRatio = d.MinRatio
	}
	if o.ScaleFloor <= 0 {
		o.ScaleFloor = d.ScaleFloor
	}
	if o.Persist <= 0 {
		o.Persist = d.Persist
	}
	if o.StrongZ <= 0 {
		o.StrongZ = d.StrongZ
	}
	if o.StrongRatio <= 0 {
		o.StrongRatio = d.StrongRatio
	}
	if o.PersistWeak <= 0 {
		o.PersistWeak = d.PersistWeak
	}
	if o.EndZ <= 0 {
		o.EndZ = d.EndZ
	}
	if o.EndPersist <= 0 {
		o.EndPersist = d.EndPersist
	}
	if o.OnsetLookback <= 0 {
		o.OnsetLookback = d.OnsetLookback
	}
	if o.MinDuration <= 0 {
		o.MinDuration = d.MinDuration
	}
	if o.MaxCreep <= 0 {
		o.MaxCreep = d.MaxCreep
	}
	if o.Sensitivity == "" {
		o.Sensitivity = SensitivityMedium
	}
	return o
}

// DetectSpikes finds sustained departures of points (sorted by time) from a
// trailing robust baseline. The verdict at each point uses only earlier
// points, so DetectedAt is when a live run would have raised the spike.
// While a spike lasts, its pre-spike baseline is frozen so the spike cannot
// become its own baseline. Points too early to have MinBaseline history are
// judged against the whole series' robust statistics instead (an offline
// fallback that finds spikes at the very start of a window); such spikes
// are marked detected no earlier than the first causal point.
//
// Adding a constant to every point, or scaling every point by a positive
// factor, leaves Start, End and Onset unchanged.
func DetectSpikes(points []Point, opt SpikeOptions) []Spike {
	opt = opt.withDefaults()
	if len(points) == 0 {
		return nil
	}
	var spikes []Spike
	dirs := []Direction{opt.Direction}
	if opt.Direction == Both {
		dirs = []Direction{Up, Down}
	}
	var model *alarmModel
	if !opt.Locate {
		model = newAlarmModel(points, opt)
	}
	for _, dir := range dirs {
		if opt.Locate {
			spikes = append(spikes, detectDirection(points, opt, dir)...)
		} else {
			spikes = append(spikes, detectAlarms(points, opt, model, dir)...)
		}
	}
	if opt.Direction == Both {
		sortSpikes(spikes)
	}
	return spikes
}

// detectDirection runs the detector for one direction.
func detectDirection(points []Point, opt SpikeOptions, dir Direction) []Spike {
	sign := 1.0
	if dir == Down {
		sign = -1
	}
	n := len(points)
	windowMs := opt.BaselineWindow.Milliseconds()
	gapMs := opt.BaselineGap.Milliseconds()
	maxGapMs := 4 * opt.Step.Milliseconds()

	values := make([]float64, n)
	for i, p := range points {
		values[i] = p.V
	}
	global := robust(values, opt.ScaleFloor, 1e-9)

	var (
		spikes      []Spike
		win         sortedWindow
		lo, hi      int   // window holds eligible points with index in [lo, hi)
		skipBelow   int   // points before this index never enter the window (they were a spike)
		firstCausal = -1  // first index judged against a full trailing window
		strongRun   int   // consecutive strong departures
		runStart    int   // first point of the current strong run
		recent      []int // indexes of departing points among the last PersistWeak points
		active      *Spike
		frozen      robustStats
		below       int
		lastT       int64
	)
	inWindow := func(j int) bool { return j >= skipBelow && !math.IsNaN(points[j].V) }
	for i, p := range points {
		if i > 0 && p.T-lastT > maxGapMs && active == nil {
			strongRun, recent = 0, recent[:0] // a gap breaks persistence
		}
		lastT = p.T
		// Slide the trailing window: admit points at least BaselineGap old,
		// drop those older than BaselineWindow. It keeps sliding during a
		// spike so it is current when the spike ends.
		for hi < i && points[hi].T <= p.T-gapMs {
			if inWindow(hi) {
				win.add(points[hi].V)
			}
			hi++
		}
		for lo < hi && points[lo].T < p.T-windowMs {
			if inWindow(lo) {
				win.remove(points[lo].V)
			}
			lo++
		}
		if math.IsNaN(p.V) {
			continue
		}
		var base robustStats
		switch {
		case active != nil:
			base = frozen
		case win.len() >= opt.MinBaseline:
			base = win.stats(opt.ScaleFloor, 1e-9)
			if firstCausal < 0 {
				firstCausal = i
			}
		default:
			base = global
		}
		z := sign * (p.V - base.Median) / base.Scale

		if active != nil {
			if z < opt.EndZ {
				below++
				if below >= opt.EndPersist {
					last := i - opt.EndPersist
					active.End = points[last].Time()
					spikes = append(spikes, *active)
					// The spike's points must not become the next baseline.
					for j := max(lo, skipBelow); j < hi && j <= last; j++ {
						if inWindow(j) && j >= activeOnsetIdx(active, points) {
							win.remove(points[j].V)
						}
					}
					skipBelow = last + 1
					active, below, strongRun, recent = nil, 0, 0, recent[:0]
				}
				continue
			}
			below = 0
			if sign*(p.V-active.PeakValue) > 0 {
				active.PeakValue, active.PeakTime = p.V, p.Time()
			}
			active.Z = math.Max(active.Z, z)
			continue
		}

		ratio := safeRatio(p.V, base.Median)
		if dir == Down {
			ratio = safeRatio(base.Median, p.V)
		}
		candidate := z >= opt.Z && (math.IsNaN(ratio) || ratio >= opt.MinRatio) &&
			math.Abs(p.V-base.Median) >= opt.MinDelta
		strong := candidate && z >= opt.StrongZ && (math.IsNaN(ratio) || ratio >= opt.StrongRatio)
		for len(recent) > 0 && recent[0] <= i-opt.PersistWeak {
			recent = recent[1:]
		}
		if !candidate {
			strongRun = 0
			continue
		}
		recent = append(recent, i)
		if !strong {
			strongRun = 0
		} else {
			if strongRun == 0 {
				runStart = i
			}
			strongRun++
		}
		switch {
		case strongRun >= opt.Persist:
		case 5*len(recent) >= 4*opt.PersistWeak:
			runStart = recent[0]
		default:
			continue
		}
		detected := p.Time()
		if firstCausal < 0 || i < firstCausal {
			// Judged against the whole series: a live run could not have
			// known before it had a full baseline.
			detected = points[n-1].Time()
			if fc := firstIndexWithHistory(points, windowMs, gapMs, opt.MinBaseline); fc < n && points[fc].T > p.T {
				detected = points[fc].Time()
			}
		}
		active = &Spike{
			Start:        points[runStart].Time(),
			Onset:        points[runStart].Time(), // refined by locateOnsets
			DetectedAt:   detected,
			Baseline:     base.Median,
			Direction:    dir,
			SLOMs:        opt.SLO,
			PeakValue:    p.V,
			PeakTime:     p.Time(),
			Z:            z,
			BaselineKind: "window",
		}
		for j := runStart; j < i; j++ {
			if !math.IsNaN(points[j].V) && sign*(points[j].V-active.PeakValue) > 0 {
				active.PeakValue, active.PeakTime = points[j].V, points[j].Time()
			}
		}
		frozen = base
		below = 0
	}
	if active != nil {
		active.End = points[n-1].Time()
		active.Ongoing = true
		spikes = append(spikes, *active)
	}
	rise := locateOnsets(spikes, points, opt, sign)
	kept := spikes[:0]
	for i, sp := range spikes {
		sp.Score = alarmScore(sp.Z, opt.StrongZ)
		if incidentLike(sp, rise[i], opt, peakRatio(sp)) {
			sp.Severity = severity(sp, points, opt)
			kept = append(kept, sp)
		}
	}
	return kept
}

// incidentLike drops the two shapes that are not incidents: a blip that
// was over in less than MinDuration without tripling (one slow scrape, a
// burst of a bad minute), and a rise of less than ×2 at its peak that took
// longer than MaxCreep to climb (drift: traffic growing through the day).
// held is how far the spike tripled-or-not: its peak ratio for the window
// detector, and for the alarm the ratio it held for a minute (heldRatio),
// because a rate window smears one slow scrape over several points
// (×2.9, ×3.5, ×2.9 at 30 s scrapes) and one of them may pass ×3.
// An ongoing blip is kept: nobody knows yet how it ends.
func incidentLike(sp Spike, rise time.Duration, opt SpikeOptions, held float64) bool {
	if rise > opt.MaxCreep && !(peakRatio(sp) >= 2) {
		return false
	}
	return sp.Ongoing || sp.End.Sub(sp.Start) >= opt.MinDuration || held >= 3
}

// peakRatio is the spike's peak over its baseline, or the baseline over
// the trough for a drop.
func peakRatio(sp Spike) float64 {
	if sp.Direction == Down {
		return safeRatio(sp.Baseline, sp.PeakValue)
	}
	return safeRatio(sp.PeakValue, sp.Baseline)
}

// heldSpan is how long a short spike must hold its ratio for the ratio to
// count as held: a minute of requests, the span of the usual rate()
// window, so that one slow scrape interval smeared over that window's
// evaluations (three points at a 15 s pull step over 30 s scrapes: ×3.1,
// ×3.3, ×3.1 for a stalled batch) is not taken for a tripled minute.
const heldSpan = time.Minute

// heldRatio is the largest ratio to the baseline that the spike held over
// consecutive points within [Start, End] covering heldSpan (each point
// counting for one step; at least two points): the smallest ratio of the
// best such stretch. A spike of one point has no stretch and holds
// nothing.
func heldRatio(sp Spike, points []Point, step time.Duration) float64 {
	startMs, endMs := sp.Start.UnixMilli(), sp.End.UnixMilli()
	ratio := func(v float64) float64 {
		if math.IsNaN(v) {
			return math.NaN()
		}
		if sp.Direction == Down {
			return safeRatio(sp.Baseline, v)
		}
		return safeRatio(v, sp.Baseline)
	}
	var ts []int64
	var rs []float64
	for _, p := range points {
		if p.T < startMs {
			continue
		}
		if p.T > endMs {
			break
		}
		ts, rs = append(ts, p.T), append(rs, ratio(p.V))
	}
	spanMs, stepMs := heldSpan.Milliseconds(), step.Milliseconds()
	best := 0.0
	for i := range rs {
		// The shortest stretch from i that covers the span.
		j := i + 1
		for j < len(rs) && ts[j]-ts[i]+stepMs < spanMs {
			j++
		}
		if j >= len(rs) {
			break
		}
		h := math.Inf(1)
		for _, r := range rs[i : j+1] {
			h = min(h, r) // NaN (a gap) propagates: the stretch holds nothing
		}
		if h > best {
			best = h
		}
	}
	return best
}

// locateOnsets refines each spike's onset with a two-level least-squares
// change point: with lo the baseline and hi the spike's typical level, the
// step time τ minimising Σ_{t<τ}(x−lo)² + Σ_{t≥τ}(x−hi)² is the argmin of
// the running sum of (x − (lo+hi)/2). For a step that is the step; for a
// ramp it is where the ramp crosses half-way, which is what "when did it
// start" means to someone aligning events with a gradual rise. The search
// runs from OnsetLookback before Start (not past the previous spike) to the
// end of the spike's first stretch.
func locateOnsets(spikes []Spike, points []Point, opt SpikeOptions, sign float64) (rise []time.Duration) {
	lookMs := opt.OnsetLookback.Milliseconds()
	var prevEnd int64 = math.MinInt64
	rise = make([]time.Duration, len(spikes))
	for k := range spikes {
		sp := &spikes[k]
		startMs, endMs := sp.Start.UnixMilli(), sp.End.UnixMilli()
		hiEnd := min(endMs, startMs+lookMs)
		var hiVals []float64
		for _, p := range points {
			if p.T >= startMs && p.T <= hiEnd && !math.IsNaN(p.V) {
				hiVals = append(hiVals, p.V)
			}
		}
		hi := median(hiVals)
		mid := (sp.Baseline + hi) / 2
		from := max(startMs-lookMs, prevEnd+1)
		var sum, best float64
		bestT := startMs
		first := true
		for _, p := range points {
			if p.T < from || p.T > hiEnd || math.IsNaN(p.V) {
				continue
			}
			if first {
				// τ at the first point: everything belongs to the high level.
				best, bestT, first = 0, p.T, false
			}
			sum += sign * (p.V - mid)
			if -sum > best {
				// The running sum dips lowest just before the level turns high.
				best = -sum
				bestT = nextT(points, p.T)
			}
		}
		sp.Onset = time.UnixMilli(bestT).UTC()
		rise[k] = riseTime(points, from, hiEnd, sp.Baseline, hi, sign)
		prevEnd = endMs
	}
	return rise
}

// riseTime is how long the curve took to climb from 10 % to 90 % of the
// way from its baseline to its spike level, on a median-of-3 smoothing,
// within [from, to]: seconds for a step, minutes for a ramp, tens of
// minutes for a drift.
func riseTime(points []Point, from, to int64, base, hi, sign float64) time.Duration {
	var ts []int64
	var vs []float64
	for _, p := range points {
		if p.T >= from && p.T <= to && !math.IsNaN(p.V) {
			ts = append(ts, p.T)
			vs = append(vs, sign*p.V)
		}
	}
	lo10, hi90 := sign*base+0.1*sign*(hi-base), sign*base+0.9*sign*(hi-base)
	sm := func(i int) float64 { return median(vs[max(0, i-1):min(len(vs), i+2)]) }
	first90 := -1
	for i := range vs {
		if sm(i) >= hi90 {
			first90 = i
			break
		}
	}
	if first90 < 0 {
		return 0
	}
	last10 := -1
	for i := first90; i >= 0; i-- {
		if sm(i) <= lo10 {
			last10 = i
			break
		}
	}
	if last10 < 0 {
		// Never calm in the whole look-back: it has been rising for at
		// least that long.
		return time.Duration(ts[first90]-ts[0]) * time.Millisecond
	}
	return time.Duration(ts[first90]-ts[last10]) * time.Millisecond
}

// nextT returns the time of the point after the one at t.
func nextT(points []Point, t int64) int64 {
	i := sort.Search(len(points), func(i int) bool { return points[i].T > t })
	if i < len(points) {
		return points[i].T
	}
	return t
}

// activeOnsetIdx finds the index of a spike's onset in points.
func activeOnsetIdx(s *Spike, points []Point) int {
	t := s.Onset.UnixMilli()
	i := sort.Search(len(points), func(i int) bool { return points[i].T >= t })
	return i
}

// firstIndexWithHistory returns the first index whose trailing window
// (BaselineWindow, minus BaselineGap) holds at least min points.
func firstIndexWithHistory(points []Point, windowMs, gapMs int64, min int) int {
	lo, hi := 0, 0
	for i, p := range points {
		for hi < i && points[hi].T <= p.T-gapMs {
			hi++
		}
		for lo < hi && points[lo].T < p.T-windowMs {
			lo++
		}
		if hi-lo >= min {
			return i
		}
	}
	return len(points)
}

// severity grades a spike: "page" when it breached the SLO (or, without an
// SLO, doubled the baseline) for at least five minutes or is still going,
// "ticket" when it breached at all, "info" otherwise.
func severity(s Spike, points []Point, opt SpikeOptions) string {
	threshold := opt.SLO
	if threshold <= 0 {
		threshold = 2 * s.Baseline
	}
	if s.Direction == Down {
		// A drop (of QPS, say) has no SLO: grade it by how far it fell.
		if s.PeakValue <= s.Baseline/2 {
			return "page"
		}
		return "ticket"
	}
	var over time.Duration
	var prev int64 = -1
	for _, p := range points {
		t := p.Time()
		if t.Before(s.Start) || t.After(s.End) {
			continue
		}
		if p.V >= threshold && prev >= 0 {
			over += time.Duration(p.T-prev) * time.Millisecond
		}
		prev = p.T
	}
	switch {
	case s.PeakValue >= threshold && (over >= 5*time.Minute || s.Ongoing):
		return "page"
	case s.PeakValue >= threshold || s.PeakValue >= s.Baseline*opt.MinRatio:
		return "ticket"
	}
	return "info"
}

func sortSpikes(s []Spike) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Onset.Before(s[j-1].Onset); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// History is how much data before a window the detector needs to judge
// the window's first point as well as its last.
func (o SpikeOptions) History() time.Duration {
	o = o.withDefaults()
	if o.Locate {
		return o.BaselineWindow
	}
	return max(o.BaselineWindow, min(8*24*time.Hour, 12000*o.Step))
}
