package correlate

import (
	"cmp"
	"fmt"
	"math"
)

// A latency quantile of a classic Prometheus histogram cannot go past the
// histogram's highest finite bucket bound. Prometheus documents
// histogram_quantile() so: "The highest bucket must have an upper bound
// of +Inf. […] If a quantile is located in the highest bucket, the upper
// bound of the second highest bucket is returned." During a bad incident
// (requests timing out at 30 s, buckets up to 10 s) the P99 curve
// therefore sits flat at exactly 10000 ms, and "P99 10 s (×25)" would say
// more than the data does: the P99 was at least 10 s, the rise at least
// ×25.
//
// The signature this reads is the curve's highest value repeated exactly.
// Inside a bucket histogram_quantile interpolates linearly between the
// bucket's bounds by the rank it needs among the bucket's rate: every
// change of any bucket's rate moves it, so a real, uncapped quantile does
// not come back to one exact value, least of all to its maximum, scrape
// after scrape. Capped, it is one constant (the bound, times the same
// unit factor) at every evaluation that lands in +Inf. So a curve is read
// as pinned at a ceiling when:
//
//   - its highest value over the span is taken by at least
//     ceilingMinPoints points, or by two consecutive points at least
//     ceilingCoarseStep apart (at 1 min steps or coarser two points are
//     already two minutes at one exact value), equal to within
//     ceilingTol relative (bit-equal in practice; the tolerance is for a
//     recording rule or a gateway that converts units in another order);
//   - and that value stands at least ceilingMinRise times over the
//     curve's baseline (the caller's, else the curve's own median): the
//     cap is reached during a rise. A constant curve (a synthetic one, an
//     idle exporter's, a flat recording rule) repeats its maximum too, and
//     says nothing about a cap.
//
// A summary's quantile (computed by the client over a sliding window)
// can repeat one raw observation for minutes as well; the presets read
// histograms, and a curve that stood ×1.5 over its baseline at one exact
// value for three scrapes is then still a lower bound more often than not.
const (
	ceilingMinPoints  = 3
	ceilingCoarseStep = 60_000 // ms
	ceilingTol        = 1e-9
	ceilingMinRise    = 1.5
)

// QuantileCeiling reports whether a latency quantile curve's points are
// pinned at a ceiling (the histogram's highest finite bucket bound, see
// above) and at which value. baseline is the level the curve rose from;
// NaN or not positive, the points' own median stands in. Values that are
// NaN, infinite or not positive (no request, no measurement) are skipped.
func QuantileCeiling(points []Point, baseline float64) (float64, bool) {
	top := math.Inf(-1)
	vals := make([]float64, 0, len(points))
	for _, p := range points {
		if usableLatency(p.V) {
			vals = append(vals, p.V)
			top = math.Max(top, p.V)
		}
	}
	if len(vals) < 2 {
		return 0, false
	}
	if !(baseline > 0) || math.IsInf(baseline, 0) {
		baseline = median(vals)
	}
	if top < ceilingMinRise*baseline {
		return 0, false
	}
	n, run := 0, false
	prevAt, prevT := false, int64(0)
	for _, p := range points {
		if !usableLatency(p.V) {
			continue
		}
		at := sameValue(p.V, top)
		if at {
			n++
			if prevAt && p.T-prevT >= ceilingCoarseStep {
				run = true
			}
		}
		prevAt, prevT = at, p.T
	}
	if n >= ceilingMinPoints || run {
		return top, true
	}
	return 0, false
}

// MarkCeiling sets s.PeakAtCeiling when s is a rise of a latency quantile
// curve (points; the caller knows the curve is one) whose peak is the
// value the curve is pinned at over the spike's own span: its peak is
// then a lower bound. Scores and spans are left as they are.
func MarkCeiling(s *Spike, points []Point) {
	s.PeakAtCeiling = false
	if s.Direction != Up {
		return
	}
	lo, hi := s.Start, s.End
	if !s.Onset.IsZero() && s.Onset.Before(lo) {
		lo = s.Onset
	}
	if s.PeakTime.After(hi) {
		hi = s.PeakTime
	}
	var span []Point
	for _, p := range points {
		if t := p.Time(); !t.Before(lo) && !t.After(hi) {
			span = append(span, p)
		}
	}
	if top, ok := QuantileCeiling(span, s.Baseline); ok && sameValue(s.PeakValue, top) {
		s.PeakAtCeiling = true
	}
}

// AtCeiling says whether v, a figure read from a curve pinned at ceiling
// (0: none), is the ceiling itself, so only a lower bound. A median of
// points mostly at the ceiling is the ceiling; a figure under it is read
// as measured.
func AtCeiling(v, ceiling float64) bool {
	return ceiling > 0 && sameValue(v, ceiling)
}

func usableLatency(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 }

// sameValue is a == b to within ceilingTol relative.
func sameValue(a, b float64) bool {
	return a == b || math.Abs(a-b) <= ceilingTol*math.Max(math.Abs(a), math.Abs(b))
}

// ceiling is the value model m's latency quantile curve (the one its
// impact is measured on) is pinned at from the onset on, 0 when it is
// not pinned (or the impact comes from samples or the mean: no
// histogram bound caps those).
func (f *facts) ceiling(m string) float64 {
	if v, ok := f.ceilings[m]; ok {
		return v
	}
	if f.ceilings == nil {
		f.ceilings = map[string]float64{}
	}
	f.ceilings[m] = 0
	mi, ok := f.impact(m)
	if !ok || !mi.fromCurve || mi.quantile == "mean" {
		return 0
	}
	c := f.latencyCurve(m)
	if c == nil || c.Role == RoleLatencyMean {
		return 0
	}
	lo, hi := f.ph.Onset.UnixMilli(), int64(math.MaxInt64)
	if !f.window.To.IsZero() {
		hi = f.window.To.UnixMilli()
	}
	var pts []Point
	for _, p := range c.Points {
		if p.T >= lo && p.T <= hi {
			pts = append(pts, p)
		}
	}
	if v, ok := QuantileCeiling(pts, mi.before); ok {
		f.ceilings[m] = v
	}
	return f.ceilings[m]
}

// The words for a figure read at a ceiling: the data shows a lower bound.
func msAtLeast(v, ceiling float64) string {
	if AtCeiling(v, ceiling) {
		return "≥ " + fmtMs(v)
	}
	return fmtMs(v)
}

// ratioAtLeast prefixes a ratio's words ("×25") with "at least " when
// the figure it divides is at the ceiling.
func ratioAtLeast(words string, during, ceiling float64) string {
	if AtCeiling(during, ceiling) {
		return "at least " + words
	}
	return words
}

// CeilingNote says, once, why a figure reads "≥": the quantile q reached
// its histogram's top bucket.
func CeilingNote(q string) string {
	return fmt.Sprintf("the %s reached its histogram's top bucket, so the true value is higher", cmp.Or(q, "P99"))
}
