package correlate

import (
	"math"
	"sort"
	"time"
)

// curveSet indexes curves by role and level for the analysis.
type curveSet struct {
	all    []Curve
	byRole map[Role]map[Level][]int
}

func newCurveSet(curves []Curve) *curveSet {
	cs := &curveSet{all: curves, byRole: map[Role]map[Level][]int{}}
	for i, c := range curves {
		m := cs.byRole[c.Role]
		if m == nil {
			m = map[Level][]int{}
			cs.byRole[c.Role] = m
		}
		m[c.Level] = append(m[c.Level], i)
	}
	return cs
}

// firstPoint is the time of the earliest point of any curve (zero when
// there is none): where the data actually begins, which may be later
// than the window asked for.
func (cs *curveSet) firstPoint() time.Time {
	first := int64(math.MaxInt64)
	for i := range cs.all {
		if p := cs.all[i].Points; len(p) > 0 && p[0].T < first {
			first = p[0].T
		}
	}
	if first == math.MaxInt64 {
		return time.Time{}
	}
	return time.UnixMilli(first).UTC()
}

// get returns the curves of role at level, optionally only those whose scope
// is covered by scope and whose stage matches (stage "" matches any).
func (cs *curveSet) get(role Role, level Level, scope Scope, stage string) []*Curve {
	var out []*Curve
	for _, i := range cs.byRole[role][level] {
		c := &cs.all[i]
		if scope.Covers(c.Scope) && (stage == "" || c.Stage == stage) {
			out = append(out, c)
		}
	}
	return out
}

// fleet returns the fleet-level curve of role (and stage), or nil.
func (cs *curveSet) fleet(role Role, stage string) *Curve {
	for _, c := range cs.get(role, LevelFleet, Scope{}, stage) {
		if c.Scope.Model == "" && c.Scope.Node == "" {
			return c
		}
	}
	return nil
}

// model returns the model-level curve of role for exactly this model
// (and stage), or nil.
func (cs *curveSet) model(role Role, model, stage string) *Curve {
	for _, c := range cs.get(role, LevelModel, Scope{Model: model}, stage) {
		if c.Scope.Model == model {
			return c
		}
	}
	return nil
}

// values returns the non-NaN values of points in [from, to).
func values(points []Point, from, to time.Time) []float64 {
	lo, hi := from.UnixMilli(), to.UnixMilli()
	i := sort.Search(len(points), func(i int) bool { return points[i].T >= lo })
	var out []float64
	for ; i < len(points) && points[i].T < hi; i++ {
		if v := points[i].V; !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// pointsIn is the part of points (sorted by time) in [from, to).
func pointsIn(points []Point, from, to time.Time) []Point {
	lo, hi := from.UnixMilli(), to.UnixMilli()
	i := sort.Search(len(points), func(i int) bool { return points[i].T >= lo })
	j := sort.Search(len(points), func(j int) bool { return points[j].T >= hi })
	return points[i:max(i, j)]
}

// periodMedian is the median of a curve over [from, to) (NaN if empty).
func periodMedian(c *Curve, from, to time.Time) float64 {
	if c == nil {
		return math.NaN()
	}
	return median(values(c.Points, from, to))
}

// deviation scores how far a curve moved after the onset, BARO-style:
// the signed largest |x − median_before| / IQR_before over the during
// period, with the before and during medians. The IQR is floored (see
// deviationFloor) so that a flat line does not make every wiggle
// enormous. Score puts curves of any kind on one scale: the excursion
// against the largest the curve made in its own baseline (its 95th
// percentile), mapped to 0..1.
func deviation(c *Curve, ph phases) CurveDeviation {
	before := values(c.Points, ph.BeforeFrom, ph.BeforeTo)
	during := values(c.Points, ph.Onset, ph.DuringTo)
	d := CurveDeviation{Key: c.Key(), Role: c.Role, Level: c.Level, Scope: c.Scope, Stage: c.Stage,
		Before: math.NaN(), During: math.NaN(), Deviation: math.NaN()}
	if len(before) < 3 || len(during) < 2 {
		return d
	}
	st := robust(before, 0.05, deviationFloor(c.Role, before, during))
	d.Before, d.During = st.Median, median(during)
	// The largest excursion is taken over a lightly smoothed during series
	// (median of 3) so one bad scrape does not decide the score.
	best := 0.0
	d.Extreme = d.During
	for _, v := range smooth3(during) {
		a := (v - st.Median) / st.IQR
		if math.Abs(a) > math.Abs(best) {
			best, d.Extreme = a, v
		}
	}
	d.Deviation = best
	var base []float64
	for _, v := range smooth3(before) {
		base = append(base, math.Abs(v-st.Median)/st.IQR)
	}
	if rel := math.Abs(best) / math.Max(quantile(base, 0.95), 1); rel > 1 {
		d.Score = (rel - 1) / (rel + 1)
	}
	if r := safeRatio(d.During, d.Before); !math.IsNaN(r) {
		d.Ratio = r
	}
	return d
}

// smooth3 is the running median of three (the ends use two values).
func smooth3(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i := range xs {
		lo, hi := max(0, i-1), min(len(xs), i+2)
		out[i] = median(xs[lo:hi])
	}
	return out
}

// deviationFloor is the least spread a deviation is measured in, beyond 5 %
// of the level: the curve's resolution (the smallest step between its
// distinct values: one request in a rate, one error in an error rate) and
// a floor per role below which a change means nothing to an operator (a
// tenth of a millisecond, a fifth of a percentage point of errors, half a
// queued request). Without it, a flat error rate that blips once scores
// thousands and outranks the latency that actually moved.
func deviationFloor(role Role, before, during []float64) float64 {
	floor := 1e-9
	switch role {
	case RoleLatencyP50, RoleLatencyP95, RoleLatencyP99, RoleLatencyMean, RoleStageTime, RoleTPOT, RoleTTFT:
		floor = 0.1 // ms
	case RoleErrorRate:
		floor = 0.002
	case RoleQueue:
		floor = 0.5
	case RoleBatchSize:
		floor = 0.1
	case RolePromptTokens, RoleOutputTokens:
		floor = 1 // token
	case RoleGPUUtil:
		floor = 1 // percentage point
	case RoleGPUMemUsed, RoleGPUMemFree:
		floor = 64 // MiB
	case RoleNodeCPU, RoleNodeMemory, RoleKVCache:
		floor = 0.005
	case RoleNodeNetwork:
		floor = 1024 // bytes/s
	case RoleQPS:
		floor = 0.01
	}
	return math.Max(floor, resolution(append(append([]float64(nil), before...), during...)))
}

// resolution is the smallest positive difference between distinct values.
func resolution(xs []float64) float64 {
	sort.Float64s(xs)
	res := math.Inf(1)
	for i := 1; i < len(xs); i++ {
		if d := xs[i] - xs[i-1]; d > 0 && d < res {
			res = d
		}
	}
	if math.IsInf(res, 1) {
		return 0
	}
	return res
}
