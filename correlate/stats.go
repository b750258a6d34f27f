package correlate

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// madScale turns a median absolute deviation into a standard-deviation
// estimate for normal data.
const madScale = 1.4826

// median returns the median of xs (NaN for none), from a copy.
func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile returns the q-quantile of xs by linear interpolation between
// order statistics (NaN for none), as quantileSorted would on the sorted
// values. It selects the two order statistics in a copy, NaNs skipped,
// rather than sorting it: O(n), where the detector's per-series checks
// spent a fifth of their time sorting.
func quantile(xs []float64, q float64) float64 {
	c := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			c = append(c, x)
		}
	}
	if len(c) == 0 {
		return math.NaN()
	}
	q = math.Min(math.Max(q, 0), 1)
	pos := q * float64(len(c)-1)
	lo := int(pos)
	frac := pos - float64(lo)
	v := selectKth(c, lo)
	if frac == 0 || lo+1 >= len(c) {
		return v
	}
	next := c[lo+1] // c[lo+1:] holds what is ≥ v: its least is the next one
	for _, x := range c[lo+2:] {
		next = math.Min(next, x)
	}
	return v + frac*(next-v)
}

// selectKth reorders c (NaN-free) so that c[k] is its k-th smallest
// value, with nothing larger before it and nothing smaller after, and
// returns it: quickselect with a median-of-three pivot and a three-way
// partition (quantised series repeat values a lot); a range that keeps
// refusing to shrink is sorted instead, so the worst case is n log n.
func selectKth(c []float64, k int) float64 {
	lo, hi := 0, len(c)-1
	for budget := 2 * bits.Len(uint(len(c))); lo < hi; budget-- {
		if budget == 0 {
			slices.Sort(c[lo : hi+1])
			break
		}
		a, b, m := c[lo], c[hi], c[lo+(hi-lo)/2]
		p := max(min(a, b), min(max(a, b), m)) // median of the three
		// c[lo:lt] < p, c[lt:i] == p, c[gt+1:hi+1] > p.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case c[i] < p:
				c[lt], c[i] = c[i], c[lt]
				lt++
				i++
			case c[i] > p:
				c[i], c[gt] = c[gt], c[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return c[k]
}

// quantileSorted is quantile over already sorted, NaN-free values.
func quantileSorted(c []float64, q float64) float64 {
	if len(c) == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return c[0]
	}
	if q >= 1 {
		return c[len(c)-1]
	}
	pos := q * float64(len(c)-1)
	lo := int(pos)
	frac := pos - float64(lo)
	if lo+1 >= len(c) {
		return c[lo]
	}
	return c[lo] + frac*(c[lo+1]-c[lo])
}

// robustStats is a location and scale that one outlier cannot move.
type robustStats struct {
	Median float64
	Scale  float64 // 1.4826·MAD, floored (see robust)
	IQR    float64
	N      int
}

// robust computes median, MAD-based scale and IQR of xs. The scale is
// floored at floorFrac of |median| and at absFloor so that a perfectly
// flat baseline (MAD = 0) does not turn every wiggle into an infinite z.
func robust(xs []float64, floorFrac, absFloor float64) robustStats {
	c := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			c = append(c, x)
		}
	}
	if len(c) == 0 {
		return robustStats{Median: math.NaN(), Scale: math.NaN(), IQR: math.NaN()}
	}
	sort.Float64s(c)
	return robustSorted(c, floorFrac, absFloor)
}

// robustSorted is robust over sorted, finite values.
func robustSorted(c []float64, floorFrac, absFloor float64) robustStats {
	if len(c) == 0 {
		return robustStats{Median: math.NaN(), Scale: math.NaN(), IQR: math.NaN()}
	}
	med := quantileSorted(c, 0.5)
	scale := madScale * medianAbsDev(c, med)
	iqr := quantileSorted(c, 0.75) - quantileSorted(c, 0.25)
	floor := math.Max(floorFrac*math.Abs(med), absFloor)
	if scale < floor {
		scale = floor
	}
	if iqr < floor {
		iqr = floor
	}
	return robustStats{Median: med, Scale: scale, IQR: iqr, N: len(c)}
}

// weighted is a value with a weight (a sample and its sample_rate).
type weighted struct {
	V, W float64
}

// weightedQuantile returns the q-quantile of weighted values (sorted in
// place by value). Weights are frequencies: a sample kept 1 in 10 counts 10.
func weightedQuantile(xs []weighted, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.SortFunc(xs, func(a, b weighted) int { return cmp.Compare(a.V, b.V) })
	return weightedQuantileSorted(xs, q)
}

// weightedQuantileSorted is weightedQuantile over values sorted by V.
func weightedQuantileSorted(xs []weighted, q float64) float64 {
	var total float64
	for _, x := range xs {
		total += x.W
	}
	if total <= 0 {
		return math.NaN()
	}
	target := q * total
	var cum float64
	for _, x := range xs {
		cum += x.W
		if cum >= target {
			return x.V
		}
	}
	return xs[len(xs)-1].V
}

// strength maps a non-negative deviation onto 0..1 with g(ρ) = 1 − e^(−ρ/s):
// g(s) ≈ 0.63, g(3s) ≈ 0.95. Negative and NaN inputs give 0.
func strength(rho, s float64) float64 {
	if math.IsNaN(rho) || rho <= 0 {
		return 0
	}
	return 1 - math.Exp(-rho/s)
}

// ramp maps x linearly from lo (→0) to hi (→1), clamped.
func ramp(x, lo, hi float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	if hi == lo {
		if x >= hi {
			return 1
		}
		return 0
	}
	v := (x - lo) / (hi - lo)
	return clamp01(v)
}

func clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// safeRatio returns a/b, or NaN when b is not positive.
func safeRatio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
