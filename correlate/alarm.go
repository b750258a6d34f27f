package correlate

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Sensitivity trades missed spikes for false alarms: how many alarms a
// day a series' ordinary noise may raise.
type Sensitivity string

const (
	SensitivityLow    Sensitivity = "low"
	SensitivityMedium Sensitivity = "medium"
	SensitivityHigh   Sensitivity = "high"
)

// ParseSensitivity reads low, medium or high ("" is medium).
func ParseSensitivity(s string) (Sensitivity, bool) {
	switch Sensitivity(s) {
	case "", SensitivityMedium:
		return SensitivityMedium, true
	case SensitivityLow, SensitivityHigh:
		return Sensitivity(s), true
	}
	return "", false
}

// alarmsPerDay is the false-alarm budget of one series: the rate at which
// Gaussian noise would cross the floor of the threshold.
func (s Sensitivity) alarmsPerDay() float64 {
	switch s {
	case SensitivityLow:
		return 0.02
	case SensitivityHigh:
		return 0.5
	}
	return 0.1
}

// Alarm-detector constants, chosen on the labelled real series of the
// development set (bench/realspikes_test.go) and the simulated fleets,
// never per series.
const (
	// heavyTail widens the Gaussian threshold: real residuals are far
	// heavier-tailed than normal, so z of the Gaussian budget ×2.
	heavyTail = 2.0
	// spreadShare floors the scale by this share of the window's 5–95 %
	// spread (in σ units), so a series that sits at zero and bursts, or
	// bursts often, has a scale that is its usual range, not a MAD of 0.
	spreadShare = 0.75
	// alarmRatio: an alarm also needs the value to be ×1.5 the baseline
	// (or 1/1.5 for a drop): z alone flags tiny moves on very calm series.
	alarmRatio = 1.5
	// tailRisk is the per-day exceedance the series' own tail sets the
	// threshold at (peaks over threshold, below).
	tailAlarmsPerDay = 1.0
	// dailyMargin and weeklyMargin: a seasonal profile is the series'
	// model when its 90th percentile of absolute residuals is this share
	// of the simpler model's (the trailing median; the daily profile).
	dailyMargin  = 0.9
	weeklyMargin = 0.75
	// weeklyMinStep is the finest step at which the detector looks for a
	// weekly cycle (fifteen days are 4,320 points at 5 min; at 15 s they
	// would be 86,400, and live curves at such steps are judged on 8 days
	// of history anyway).
	weeklyMinStep = 5 * time.Minute
	// tailMemory is how many past z the tail model keeps.
	tailMemory = 5000
	// sustainZ, sustainFor and sustainMinPoints: a latency quantile's
	// shift that holds is an alarm under the threshold — three in five
	// points of its last two minutes (at least 8 points) at sustainZ and
	// at alarmRatio. The threshold is set for one point; noise does not
	// hold most of many points at 3σ, while a slow dependency lifting a
	// small fleet's noisy P99 ×1.7 for good stays at 3–4σ for as long as
	// it lasts. (Half the points was too few at 15 s: four of eight, a
	// minute's burst that lingered at ×1.3, raised a spike on a quiet
	// simulated fleet.)
	sustainZ         = 3.0
	sustainFor       = 2 * time.Minute
	sustainMinPoints = 8
	// loadRise: a held shift while the curve's traffic (SpikeOptions.Load)
	// stands this much over its own trailing median is latency following
	// load — a traffic burst the fleet absorbs, as it does every day — and
	// is left to the one-point threshold, which judges capacity spikes.
	// Low, because near saturation a little more traffic is a lot more
	// latency; a slow dependency leaves traffic flat (the simulated ones
	// open alike at 1.1 and 1.2).
	loadRise = 1.1
	// refractory is how many points after an episode ends a new alarm in
	// the same direction must rise above that episode's peak z to be a new
	// episode: at coarse steps one point back under half the threshold
	// ends an episode (endPersist is a single point from 45 s up), and a
	// burst that dips for an hour and comes back no higher is the same
	// burst, not a second incident. Three points, as an episode's end
	// takes at 15 s. On the labelled real series a third of the false
	// alarms came within a day of another alarm; this cut them from 212 to
	// 193 for one window of 262 (score unchanged at 61.0).
	refractory = 3
)

// alarmParams are SpikeOptions turned into point counts for one series:
// every minimum duration is also a minimum number of points.
type alarmParams struct {
	stepMs      int64
	window      int // trailing baseline, points
	scaleWin    int // trailing scale window, points (≥ window)
	gap         int // most recent points left out of the baseline
	persist     int // consecutive points over the threshold
	persistWeak int // … or 80 % of this many
	endPersist  int // points back under the end level that end a spike
	sustain     int // window of the held-shift rule, points
	period      int // a day in points (0: steps too coarse for a daily cycle)
	perDay      float64
}

func newAlarmParams(opt SpikeOptions) alarmParams {
	stepMs := max(opt.Step.Milliseconds(), 1)
	pts := func(d time.Duration, floor int) int {
		return max(int((d.Milliseconds()+stepMs-1)/stepMs), floor)
	}
	// The level's window: at least 240 points for a stable median and
	// spread (an hour at 15 s, four at 1 min), but no longer than four
	// hours (or the baseline window) where that still holds 48 points, so
	// that at steps between a minute and an hour it spans the time it
	// spans on minute series: at 5 min, 240 points were 20 hours, over
	// which a daily cycle reads as noise (a minute series of the
	// development set averaged to 5 min had ×5 its own spread, and its
	// labelled midnight bursts came out at z 3, not 10–12). At most a day
	// (24 points at 1 h).
	window := min(pts(opt.BaselineWindow, 240), max(pts(max(opt.BaselineWindow, 4*time.Hour), 0), 48))
	// The scale needs many points, the level recent ones: where the
	// level's window is capped at a day (steps of 30 min and more), the
	// scale's is not (240 points: 10 days at 1 h). Elsewhere they are one.
	scaleWin := window
	if day := pts(24*time.Hour, 24); window >= day {
		window, scaleWin = day, pts(opt.BaselineWindow, 240)
	}
	p := alarmParams{
		stepMs:      stepMs,
		window:      window,
		scaleWin:    scaleWin,
		gap:         pts(opt.BaselineGap, 0),
		persist:     pts(time.Duration(opt.Persist)*15*time.Second, 1),
		persistWeak: pts(time.Duration(opt.PersistWeak)*15*time.Second, 1),
		endPersist:  pts(time.Duration(opt.EndPersist)*15*time.Second, 1),
		sustain:     pts(sustainFor, sustainMinPoints),
		perDay:      float64(24*time.Hour.Milliseconds()) / float64(stepMs),
	}
	if day := int(24 * time.Hour.Milliseconds() / stepMs); day >= 24 {
		p.period = day
	}
	return p
}

// minLevel is how many points the level needs before a point is judged:
// half its window, or an hour's worth (at least 30 points) when that is
// fewer. Half of 240 points is 30 minutes at 15 s but two hours at 60 s
// and four at 120 s: a fleet scraped every minute, pulled for the last
// three hours, would have its first two hours unjudged (a ×16 P99 spike
// 114 minutes in went unseen).
func (ap alarmParams) minLevel(opt SpikeOptions) int {
	hour := max(int(time.Hour.Milliseconds()/ap.stepMs), 30)
	return max(opt.MinBaseline, min(ap.window/2, hour))
}

// detectAlarms is DetectSpikes deciding whether to raise an alarm, on any
// resolution from seconds to hours:
//   - the baseline is the trailing median, or — when the series repeats
//     daily — the median of the same time on up to seven previous days,
//     moved to the recent level (the seasonal idea of Twitter's S-H-ESD and
//     of STL, kept robust and causal), smoothed over ±5 % of the day as
//     STL smooths its seasonal component, and the trailing median where
//     fewer than two earlier days are known; at coarse steps over 15 days,
//     the same time of the week on up to four previous weeks where the
//     week repeats (MSTL's second period); a series that is zero most
//     of the time is judged on its last window's worth of non-zero values
//     (Croston, 1972), and one that has none there rises from 0;
//   - the scale is the window's IQR, floored by its usual 5–95 % range;
//     where the level's window stops at a day (steps of 30 min and
//     more), the IQR
//     of the departures from the level over 240 points (10 days at 1 h),
//     floored by their 95 % range on the side judged; a spike's points
//     stay out of it, so a second spike soon after is not hidden;
//   - the threshold is the larger of a z floor set by a false-alarm budget
//     per series and day (so it rises with the number of points a day) and
//     the level the series' own past z exceed at a rate of one a day, from a
//     generalised Pareto fit of their upper tail (SPOT, Siffer et al., KDD
//     2017): a bursty series raises its own bar; the z of a departure
//     building up under the threshold join the tail only once it has had
//     the long persistence to become a spike;
//   - a latency quantile's shift that holds is an alarm under that
//     threshold: three in five points of its last two minutes at z 3 and
//     ×1.5 (a small fleet's noisy P99, lifted ×1.7 for good by a slow
//     dependency, never has one point at the threshold), unless its
//     traffic moved with it;
//   - one alarm per episode: a spike lasts until z falls back under half
//     the threshold that raised it, and a point over the threshold within
//     refractory points of its end raises no new spike unless its z goes
//     past the episode's peak z.
func detectAlarms(points []Point, opt SpikeOptions, m *alarmModel, dir Direction) []Spike {
	sign := 1.0
	if dir == Down {
		sign = -1
	}
	n := len(points)
	ap, vals, quantum, seas := m.ap, m.vals, m.quantum, m.seas
	// resid is what the baseline window holds: the value, or its
	// departure from the seasonal expectation.
	resid := func(i int) float64 {
		if seas != nil {
			return vals[i] - seas[i]
		}
		return vals[i]
	}
	usable := func(i int) bool {
		return !math.IsNaN(vals[i]) && (seas == nil || !math.IsNaN(seas[i])) && !(m.intermittent && vals[i] == 0)
	}
	// An intermittent series has few non-zero points a day: its level
	// needs the scale window's length to hold enough of them.
	levelWin, minLevel := ap.window, ap.minLevel(opt)
	if m.intermittent {
		levelWin, minLevel = ap.scaleWin, opt.MinBaseline
	}
	pAlarm := opt.Sensitivity.alarmsPerDay() / ap.perDay
	floor := heavyTail * math.Sqrt2 * math.Erfinv(1-2*pAlarm)
	var tail tailModel
	tail.init(math.Min(0.05, tailAlarmsPerDay/ap.perDay), floor)

	var (
		spikes []Spike
		win    floatWindow
		lo, hi int
		skip   = make([]bool, n) // the points that raised a spike stay out of baselines
		// dev are the departures from the level of the points judged
		// (NaN: not judged, or inside an episode); the scale window
		// holds the last ap.scaleWin of them. Only where the level's
		// window is the shorter (steps of 30 min and more): elsewhere
		// the level window is as long and its own spread is the scale.
		sepScale  = ap.scaleWin > ap.window
		dev       []float64
		swin      floatWindow
		slo, shi  int
		strongRun int
		runStart  int
		recent    []int
		active    *Spike
		activeThr float64
		// lastEnd and lastZ: where the last episode ended and its peak z.
		lastEnd = math.MinInt / 2
		lastZ   float64
		below   int
		base    robustStats
		spread  float64
		statsAt = -1
	)
	if sepScale {
		dev = make([]float64, n)
		for k := range dev {
			dev[k] = math.NaN()
		}
	}
	statsEvery := max(1, ap.window/40)
	type pendingZ struct {
		i int
		z float64
	}
	var pending []pendingZ
	tailDelay := max(1, ap.persistWeak)
	// held are the last ap.sustain points judged outside an episode, for
	// the held-shift rule (latency quantiles only).
	var held []heldPoint
	sustainRule := opt.Quantile
	// zeroCount is how many points in [a, b) are exactly 0.
	var zeroCount func(a, b int) int
	if m.intermittent && dir == Up {
		zeros := make([]int, n+1)
		for k, v := range vals {
			zeros[k+1] = zeros[k]
			if v == 0 {
				zeros[k+1]++
			}
		}
		zeroCount = func(a, b int) int { return zeros[b] - zeros[max(a, 0)] }
	}
	for i, p := range points {
		for hi < i-ap.gap {
			if usable(hi) && !skip[hi] {
				win.add(resid(hi))
			}
			hi++
		}
		// An intermittent series' level is that of its last window's
		// worth of non-zero values (looked for over the scale window), so
		// that it follows a lasting change as fast as a dense series does.
		for lo < hi && (lo < hi-levelWin || m.intermittent && win.len() > ap.window) {
			if usable(lo) && !skip[lo] {
				win.remove(resid(lo))
			}
			lo++
		}
		for sepScale && shi < i-ap.gap {
			if !math.IsNaN(dev[shi]) && !skip[shi] {
				swin.add(dev[shi])
			}
			shi++
		}
		for sepScale && slo < shi && slo < shi-ap.scaleWin {
			if !math.IsNaN(dev[slo]) && !skip[slo] {
				swin.remove(dev[slo])
			}
			slo++
		}
		if !usable(i) {
			continue
		}
		// An intermittent series judges its non-zero values by earlier
		// ones, and has none to judge by when it sat at exactly zero for
		// its whole level window: a count that had been zero for days and
		// starts (traffic arriving where none came, errors where there
		// were none) rises from a level of 0.
		fromZero := false
		if win.len() < minLevel {
			if !m.intermittent || dir != Up || win.len() > 0 || zeroCount(i-levelWin, i) < minLevel {
				continue
			}
			fromZero = true
		}
		// The window's statistics move little from one point to the next:
		// they are recomputed every 1/40 of the window (every 90 s at
		// 15 s), which keeps 150 series × 2 days under a second.
		if fromZero {
			// no statistics: the level is 0, the scale the value quantum
		} else if statsAt < 0 || i-statsAt >= statsEvery {
			// Location: the median; scale: the IQR in σ units (O(1) on the
			// sorted window, as robust as the MAD for the shapes seen here).
			// With a scale window, the scale is that of the departures
			// from the level (once there are enough of them).
			w, c := win.vals, quantileSorted(win.vals, 0.5)
			base.Median = c
			departures := sepScale && swin.len() >= minLevel
			if departures {
				w, c = swin.vals, 0
			}
			base.Scale = math.Max((quantileSorted(w, 0.75)-quantileSorted(w, 0.25))/1.349, quantum/2)
			if departures {
				// The departures' spread on the side being judged: the
				// drop back after an episode the level had caught up
				// with is no upward noise.
				spread = math.Max(sign*(quantileSorted(w, 0.5+sign*0.45)), 0)
			} else {
				spread = math.Max(quantileSorted(w, 0.95)-c, c-quantileSorted(w, 0.05))
			}
			statsAt = i
		}
		if sepScale && !fromZero {
			dev[i] = resid(i) - base.Median
		}
		off := 0.0
		if seas != nil {
			off = seas[i]
		}
		level := base.Median + off
		scale := math.Max(base.Scale, math.Max(opt.ScaleFloor*math.Abs(level), spreadShare*spread/1.645))
		if fromZero {
			level, scale = 0, math.Max(quantum/2, math.SmallestNonzeroFloat64)
		}
		z := sign * (p.V - level) / scale

		if active != nil {
			// An episode's points stay out of the scale (a second spike
			// soon after a first is judged by the usual noise), not out
			// of the level (a lasting shift becomes the new level).
			if sepScale {
				dev[i] = math.NaN()
			}
			if z < activeThr/2 {
				below++
				if below >= ap.endPersist {
					active.End = points[max(i-ap.endPersist, 0)].Time()
					if active.End.Before(active.Start) {
						active.End = active.Start
					}
					active.Score = alarmScore(active.Z, activeThr)
					spikes = append(spikes, *active)
					lastEnd, lastZ = i, active.Z
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
		thr := tail.threshold()
		if z < thr && !fromZero {
			// The tail learns the series' ordinary z: a point joins it once
			// the long persistence has passed without it becoming part of
			// a spike (a departure building up under the threshold would
			// otherwise raise its own bar, as SPOT keeps alarms out of its
			// model).
			pending = append(pending, pendingZ{i, z})
		}
		for len(pending) > 0 && pending[0].i <= i-tailDelay {
			if !skip[pending[0].i] {
				tail.add(pending[0].z)
			}
			pending = pending[1:]
		}
		ratio := safeRatio(p.V, level)
		if dir == Down {
			ratio = safeRatio(level, p.V)
		}
		ratioOK := math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio >= alarmRatio
		over := z >= thr && ratioOK && math.Abs(p.V-level) >= opt.MinDelta
		if over && i-lastEnd <= refractory && z <= lastZ {
			over = false // the last episode coming back, no higher
		}
		for len(recent) > 0 && recent[0] <= i-ap.persistWeak {
			recent = recent[1:]
		}
		sustained := false
		if sustainRule {
			for len(held) > 0 && held[0].i <= i-ap.sustain {
				held = held[1:]
			}
			if !fromZero {
				held = append(held, heldPoint{i, z, ratio})
			}
			sustained = z >= sustainZ && ratioOK && math.Abs(p.V-level) >= opt.MinDelta &&
				heldShift(held, ap.sustain) && !followsLoad(points, opt.Load, held, ap, dir)
		}
		if !over && !sustained {
			strongRun = 0
			continue
		}
		thrHit := thr
		if over {
			recent = append(recent, i)
			if strongRun == 0 {
				runStart = i
			}
			strongRun++
		}
		switch {
		case over && strongRun >= ap.persist:
		case over && ap.persistWeak > 1 && 5*len(recent) >= 4*ap.persistWeak:
			runStart = recent[0]
		case sustained:
			runStart, thrHit = held[0].i, sustainZ
			for _, h := range held {
				if h.z >= sustainZ {
					runStart = h.i
					break
				}
			}
		default:
			continue
		}
		held = held[:0]
		active = &Spike{
			Start:        points[runStart].Time(),
			Onset:        points[runStart].Time(),
			DetectedAt:   p.Time(),
			Baseline:     level,
			Direction:    dir,
			SLOMs:        opt.SLO,
			PeakValue:    p.V,
			PeakTime:     p.Time(),
			Z:            z,
			BaselineKind: m.baselineKind(i),
		}
		activeThr = thrHit
		// The peak that raised the alarm does count: a series that bursts
		// often raises its own bar (on the labelled real series this
		// keeps fewer false alarms than SPOT's leaving alarms out). A rise
		// from zero has no z of the series' own noise to add.
		if !fromZero {
			tail.add(z)
		}
		for j := runStart; j <= i; j++ {
			skip[j] = true
			if usable(j) && sign*(vals[j]-active.PeakValue) > 0 {
				active.PeakValue, active.PeakTime = vals[j], points[j].Time()
			}
		}
		below = 0
	}
	if active != nil {
		active.End = points[n-1].Time()
		active.Ongoing = true
		active.Score = alarmScore(active.Z, activeThr)
		spikes = append(spikes, *active)
	}
	rise := locateOnsets(spikes, points, opt, sign)
	o := opt
	o.MaxCreep = max(opt.MaxCreep, 3*time.Duration(ap.stepMs)*time.Millisecond)
	step := time.Duration(ap.stepMs) * time.Millisecond
	// Where a point is over 45 s, a spike is too coarse to time by its
	// length and is judged without MinDuration — except a latency
	// quantile's (SpikeOptions.Quantile) at steps up to MinDuration, which
	// keeps the rule it has at 15 s: over within MinDuration, it is a blip
	// unless it tripled, here on any one point (a point is a minute or
	// more of requests). One slow minute at 60 s scrapes (P99 ×2.3 once),
	// or a bump to ×1.6 over three points, is the 15 s blip seen coarser.
	coarse := opt.MinDuration < 4*step
	coarseQuantile := coarse && opt.Quantile && step <= opt.MinDuration
	if coarse && !coarseQuantile {
		o.MinDuration = 0
	}
	kept := spikes[:0]
	for i, sp := range spikes {
		held := peakRatio(sp)
		if !coarseQuantile {
			held = heldRatio(sp, points, step)
		}
		if incidentLike(sp, rise[i], o, held) {
			sp.Severity = severity(sp, points, opt)
			kept = append(kept, sp)
		}
	}
	return kept
}

// alarmModel is what both directions of one series share: its point
// counts, values, value quantum and, when it repeats daily, its seasonal
// expectation (nil otherwise).
type alarmModel struct {
	ap      alarmParams
	vals    []float64
	quantum float64
	seas    []float64
	// intermittent: most values are 0 (a latency with no calls, a count
	// with no events); its level and scale are those of the non-zero
	// values, as Croston's method (1972) models intermittent demand
	// sizes apart from the gaps between them.
	intermittent bool
	// daily and weekly are the seasonal profiles the series follows (nil:
	// it does not), NaN where too few earlier periods are known; seas is
	// the expectation they give, trailing median filled in.
	daily, weekly []float64
}

func newAlarmModel(points []Point, opt SpikeOptions) *alarmModel {
	m := &alarmModel{ap: newAlarmParams(opt), vals: make([]float64, len(points))}
	for i, p := range points {
		m.vals[i] = p.V
	}
	m.quantum = valueQuantum(m.vals)
	zeros, nn := 0, 0
	for _, v := range m.vals {
		if !math.IsNaN(v) {
			nn++
			if v == 0 {
				zeros++
			}
		}
	}
	// Like the quantum and whether the seasonal profile helps, this is read
	// off the whole fetched series, history and judged range together: the
	// history (up to 8 days) outweighs the judged minutes in live use, but a
	// series that turns mostly zero within the lookback changes mode.
	m.intermittent = 2*zeros > nn
	if m.ap.period > 0 {
		daily := seasonalExpectation(points, m.ap, m.ap.period, 7)
		if !seasonalHelps(m.vals, daily, nil, m.ap, dailyMargin) {
			daily = nil
		}
		m.daily, m.weekly = daily, weeklyExpectation(points, m.vals, daily, m.ap)
		// The expectation a point is judged by: the weekly profile where
		// two earlier weeks are known, else the daily one where two earlier
		// days are, else the trailing median.
		for _, prof := range [][]float64{m.weekly, m.daily} {
			if prof == nil {
				continue
			}
			if m.seas == nil {
				m.seas = slices.Clone(prof)
				continue
			}
			for i, v := range m.seas {
				if math.IsNaN(v) {
					m.seas[i] = prof[i]
				}
			}
		}
		if m.seas != nil {
			fillTrailing(m.seas, m.vals, m.ap, m.ap.minLevel(opt))
		}
	}
	return m
}

// baselineKind names what point i is judged against, for its spike's
// evidence.
func (m *alarmModel) baselineKind(i int) string {
	switch {
	case m.weekly != nil && !math.IsNaN(m.weekly[i]):
		return "weekly"
	case m.daily != nil && !math.IsNaN(m.daily[i]):
		return "seasonal"
	}
	return "trailing"
}

// weeklyExpectation is the profile of a series that repeats weekly
// (weekdays unlike weekends, say): the median of the same time of the
// week on up to four previous weeks (NaN with fewer than two). It is nil
// unless the series spans fifteen days and the weekly profile explains its
// large moves better than the daily one (daily; nil: the trailing median)
// does on the points where it is known, by a wider margin than the daily
// profile needs: it has seven times the values, each from fewer periods.
func weeklyExpectation(points []Point, vals, daily []float64, ap alarmParams) []float64 {
	week := 7 * ap.period
	if ap.stepMs < weeklyMinStep.Milliseconds() || len(points) < 2*week+ap.period ||
		points[len(points)-1].T-points[0].T < int64(2*week+ap.period)*ap.stepMs {
		return nil
	}
	seas := seasonalExpectation(points, ap, week, 4)
	if !seasonalHelps(vals, seas, daily, ap, weeklyMargin) {
		return nil
	}
	return seas
}

// heldPoint is a judged point's z and ratio to its level.
type heldPoint struct {
	i        int
	z, ratio float64
}

// heldShift reports whether the points held make a sustained shift: they
// cover 80 % of the window (gaps and episodes aside), and three in five
// of them stand at sustainZ and at alarmRatio — most of the window, so
// a minute's burst that lingers lower is not one.
func heldShift(held []heldPoint, window int) bool {
	if 5*len(held) < 4*window {
		return false
	}
	var high, far int
	for _, h := range held {
		if h.z >= sustainZ {
			high++
		}
		if math.IsNaN(h.ratio) || h.ratio >= alarmRatio {
			far++
		}
	}
	return 5*high >= 3*len(held) && 5*far >= 3*len(held)
}

// followsLoad reports whether the traffic moved loadRise or more from its
// own trailing median, the way the latency did (up for a rise, down for a
// drop), while the held points were held: the median of its values then
// against that of the level's window before them (its gap left out).
// Unknown traffic (no Load, or too little of it before) follows nothing.
// Called only once a held shift is found: it sorts.
func followsLoad(points, load []Point, held []heldPoint, ap alarmParams, dir Direction) bool {
	if len(load) == 0 || len(held) == 0 {
		return false
	}
	from, to := points[held[0].i].T, points[held[len(held)-1].i].T
	at := func(t int64) int { return sort.Search(len(load), func(k int) bool { return load[k].T >= t }) }
	median := func(ps []Point) (float64, int) {
		v := make([]float64, 0, len(ps))
		for _, p := range ps {
			if !math.IsNaN(p.V) {
				v = append(v, p.V)
			}
		}
		if len(v) == 0 {
			return math.NaN(), 0
		}
		slices.Sort(v)
		return v[len(v)/2], len(v)
	}
	before, n := median(load[at(from-int64(ap.window+ap.gap)*ap.stepMs):at(from-int64(ap.gap)*ap.stepMs)])
	during, m := median(load[at(from):at(to+1)])
	if n < ap.window/4 || m == 0 || !(before > 0) {
		return false
	}
	if dir == Down {
		return during*loadRise <= before
	}
	return during >= loadRise*before
}

// alarmScore maps a spike's peak z against the threshold it crossed to
// [0,1]: 0.5 at the threshold, 0.75 at twice it, towards 1 beyond.
func alarmScore(z, thr float64) float64 {
	if thr <= 0 || z <= 0 {
		return 0
	}
	return clamp01(1 - 0.5*thr/math.Max(z, thr/2))
}

// valueQuantum is the smallest step between distinct values (1 for
// counts), so that a series that sits still is not judged by a zero spread.
func valueQuantum(vals []float64) float64 {
	// The last 2,000 values say it as well as all of them.
	vals = vals[max(0, len(vals)-2000):]
	c := make([]float64, 0, len(vals))
	for _, v := range vals {
		if !math.IsNaN(v) {
			c = append(c, v)
		}
	}
	return math.Max(resolution(c), 1e-9)
}

// seasonalExpectation is, for each point, the median of the values at the
// same time of the period (a day, a week: period points) on up to back
// previous periods (NaN with fewer than two).
func seasonalExpectation(points []Point, ap alarmParams, period, back int) []float64 {
	out := make([]float64, len(points))
	periodMs := int64(period) * ap.stepMs
	var buf []float64
	for i, p := range points {
		buf = buf[:0]
		j := i
		for k := int64(1); k <= int64(back); k++ {
			t := p.T - k*periodMs
			// On a regular grid the point a day back is a period back;
			// otherwise (gaps) search the sorted points before it.
			if t < points[0].T {
				break
			}
			if g := j - period; g >= 0 && points[g].T == t {
				j = g
			} else {
				j = sort.Search(j, func(x int) bool { return points[x].T >= t })
			}
			if j < len(points) && points[j].T == t && !math.IsNaN(points[j].V) {
				buf = append(buf, points[j].V)
			}
			if j == 0 {
				break
			}
		}
		if len(buf) < 2 {
			out[i] = math.NaN()
			continue
		}
		sort.Float64s(buf)
		out[i] = quantileSorted(buf, 0.5)
	}
	// The profile is smoothed over ±5 % of a day (±72 min, a weekly
	// profile too), as STL smooths its seasonal component: a spike that
	// recurs at one minute of the day stays a spike, the daily shape stays
	// the baseline.
	if h := ap.period / 20; h > 0 {
		out = runningMedian(out, h)
	}
	return out
}

// fillTrailing gives the points whose seasonal expectation is not known
// (fewer than two earlier days: the first days of a series, or after a
// long gap) the trailing median instead, so they are judged as a series
// without a daily cycle would be, rather than not at all.
func fillTrailing(seas, vals []float64, ap alarmParams, minPts int) {
	var win floatWindow
	lo, hi := 0, 0
	for i := range seas {
		for hi < i-ap.gap {
			if !math.IsNaN(vals[hi]) {
				win.add(vals[hi])
			}
			hi++
		}
		for lo < hi && lo < hi-ap.window {
			if !math.IsNaN(vals[lo]) {
				win.remove(vals[lo])
			}
			lo++
		}
		if math.IsNaN(seas[i]) && win.len() >= minPts {
			seas[i] = quantileSorted(win.vals, 0.5)
		}
	}
}

// runningMedian is the centred running median of x over ±h points (NaN
// left out), read on every (h/8)-th point: 17 values a median, and the
// median held in between, so a day's profile at 15 s costs little.
func runningMedian(x []float64, h int) []float64 {
	stride := max(1, h/8)
	out := make([]float64, len(x))
	buf := make([]float64, 0, 2*h/stride+2)
	for i := 0; i < len(x); i += stride {
		buf = buf[:0]
		for j := i - (h/stride)*stride; j <= i+h; j += stride {
			if j >= 0 && j < len(x) && !math.IsNaN(x[j]) {
				buf = append(buf, x[j])
			}
		}
		m := math.NaN()
		if len(buf) > 0 {
			sort.Float64s(buf)
			m = quantileSorted(buf, 0.5)
		}
		for k := i; k < min(i+stride, len(x)); k++ {
			out[k] = m
			if math.IsNaN(x[k]) {
				out[k] = math.NaN()
			}
		}
	}
	return out
}

// floatWindow is a sorted window of values with an inlined binary search
// (sort.Search's closure is most of the detector's time at 15 s).
type floatWindow struct{ vals []float64 }

func (w *floatWindow) search(v float64) int {
	lo, hi := 0, len(w.vals)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.vals[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (w *floatWindow) add(v float64) {
	i := w.search(v)
	w.vals = append(w.vals, 0)
	copy(w.vals[i+1:], w.vals[i:])
	w.vals[i] = v
}

func (w *floatWindow) remove(v float64) {
	if i := w.search(v); i < len(w.vals) && w.vals[i] == v {
		w.vals = append(w.vals[:i], w.vals[i+1:]...)
	}
}

func (w *floatWindow) len() int { return len(w.vals) }

// seasonalHelps says whether the series follows the seasonal expectation
// seas better than the model than (another expectation, or nil: the
// recent median): seas, moved to the recent level, explains the series'
// large moves better (a 90th percentile of absolute residuals at least
// 10 % smaller) on the points where both are known. The levels are the
// medians of the previous block of a window's length (cheap, and plenty
// to choose a model). The choice is the series' model, made on all the
// data the detector was given (history included); each point's verdict
// stays causal.
func seasonalHelps(vals, seas, than []float64, ap alarmParams, margin float64) bool {
	w := ap.window
	var rs, rt []float64
	var prevT, prevR float64 = math.NaN(), math.NaN()
	blockT := make([]float64, 0, w)
	blockR := make([]float64, 0, w)
	known := func(x []float64, i int) bool { return x == nil || !math.IsNaN(x[i]) }
	resid := func(x []float64, i int) float64 {
		if x == nil {
			return vals[i]
		}
		return vals[i] - x[i]
	}
	for start := 0; start < len(vals); start += w {
		end := min(start+w, len(vals))
		blockT, blockR = blockT[:0], blockR[:0]
		for i := start; i < end; i++ {
			if math.IsNaN(vals[i]) {
				continue
			}
			if known(than, i) {
				blockT = append(blockT, resid(than, i))
			}
			if known(seas, i) {
				blockR = append(blockR, resid(seas, i))
				if known(than, i) && !math.IsNaN(prevT) && !math.IsNaN(prevR) && i%4 == 0 { // every 4th point is plenty
					rt = append(rt, math.Abs(resid(than, i)-prevT))
					rs = append(rs, math.Abs(resid(seas, i)-prevR))
				}
			}
		}
		prevT, prevR = math.NaN(), math.NaN()
		if len(blockT) > w/2 {
			prevT = median(blockT)
		}
		if len(blockR) > w/2 {
			prevR = median(blockR)
		}
	}
	if 4*len(rs) < ap.period {
		return false
	}
	return quantile(rs, 0.9) < margin*quantile(rt, 0.9)
}

// tailModel keeps the recent z of a series and the threshold its upper
// tail implies: peaks over the 98th percentile fitted with a generalised
// Pareto distribution (method of moments), extrapolated to the risk —
// SPOT's "peaks over threshold" (Siffer et al., KDD 2017), refitted every
// 10 % of its memory.
type tailModel struct {
	risk, floor float64
	zs          []float64 // ring of recent z
	next        int
	thr         float64
	sinceFit    int
	heap        []float64
}

func (t *tailModel) init(risk, floor float64) {
	t.risk, t.floor, t.thr = risk, floor, floor
	t.zs = make([]float64, 0, 256)
}

func (t *tailModel) add(z float64) {
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return
	}
	if len(t.zs) < tailMemory {
		t.zs = append(t.zs, z)
	} else {
		t.zs[t.next] = z
		t.next = (t.next + 1) % tailMemory
	}
	t.sinceFit++
	if t.sinceFit >= max(20, len(t.zs)/10) {
		t.fit()
		t.sinceFit = 0
	}
}

func (t *tailModel) threshold() float64 { return t.thr }

func (t *tailModel) fit() {
	if len(t.zs) < 200 {
		t.thr = t.floor
		return
	}
	// The top 2 % and the value just under them (the 98th percentile),
	// by a min-heap of k+1: O(n log k), not a sort.
	k := int(math.Ceil(0.02 * float64(len(t.zs))))
	h := t.heap[:0]
	for _, z := range t.zs {
		if len(h) <= k {
			h = append(h, z)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
			continue
		}
		if z <= h[0] {
			continue
		}
		h[0] = z
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && h[l] < h[m] {
				m = l
			}
			if r < len(h) && h[r] < h[m] {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	t.heap = h
	u := h[0]
	var ex []float64
	for _, z := range h[1:] {
		if z > u {
			ex = append(ex, z-u)
		}
	}
	if len(ex) < 5 {
		t.thr = math.Max(t.floor, u+1)
		return
	}
	var m, v float64
	for _, e := range ex {
		m += e
	}
	m /= float64(len(ex))
	for _, e := range ex {
		v += (e - m) * (e - m)
	}
	v /= float64(len(ex) - 1)
	r := t.risk * float64(len(t.zs)) / float64(len(ex))
	var q float64
	if v <= 0 {
		q = u + m
	} else {
		xi := 0.5 * (1 - m*m/v)
		sigma := 0.5 * m * (m*m/v + 1)
		xi = math.Max(-0.5, math.Min(xi, 0.5))
		if math.Abs(xi) < 1e-6 {
			q = u - sigma*math.Log(r)
		} else {
			q = u + sigma/xi*(math.Pow(r, -xi)-1)
		}
	}
	t.thr = math.Max(t.floor, q)
}
