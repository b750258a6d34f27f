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

// periodMedian is the median of a curve over [from, to) (NaN if empty).
func periodMedian(c *Curve, from, to time.Time) float64 {
	if c == nil {
		return math.NaN()
	}
	return median(values(c.Points, from, to))
}

// deviation scores how far a curve moved after the onset, BARO-style:
// the signed largest |x − median_before| / IQR_before over the during
// period, with the before and during medians. The IQR is floored at 5 % of
// the median so that a flat line does not make every wiggle infinite.
func deviation(c *Curve, ph phases) CurveDeviation {
	before := values(c.Points, ph.BeforeFrom, ph.BeforeTo)
	during := values(c.Points, ph.Onset, ph.DuringTo)
	d := CurveDeviation{Key: c.Key(), Role: c.Role, Level: c.Level, Scope: c.Scope, Stage: c.Stage,
		Before: math.NaN(), During: math.NaN(), Deviation: math.NaN()}
	if len(before) < 3 || len(during) < 2 {
		return d
	}
	st := robust(before, 0.05, 1e-6)
	d.Before, d.During = st.Median, median(during)
	// The largest excursion is taken over a lightly smoothed during series
	// (median of 3) so one bad scrape does not decide the score.
	var best float64
	for i := range during {
		lo, hi := max(0, i-1), min(len(during), i+2)
		v := median(during[lo:hi])
		a := (v - st.Median) / st.IQR
		if math.Abs(a) > math.Abs(best) {
			best = a
		}
	}
	d.Deviation = best
	return d
}
