package correlate

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// quantile selects instead of sorting; it must give exactly what
// interpolating the sorted values gives, duplicates and NaNs included.
func TestQuantileMatchesSortedInterpolation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	qs := []float64{-0.2, 0, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 1, 1.3}
	for trial := 0; trial < 2000; trial++ {
		n := r.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			switch trial % 4 {
			case 0: // continuous
				xs[i] = r.NormFloat64() * 10
			case 1: // quantised: few distinct values
				xs[i] = float64(r.IntN(4))
			case 2: // constant with NaN gaps
				xs[i] = 7
				if r.IntN(5) == 0 {
					xs[i] = math.NaN()
				}
			default: // already sorted, then reversed half the time
				xs[i] = float64(i)
				if trial%8 == 3 {
					xs[i] = float64(n - i)
				}
			}
		}
		sorted := make([]float64, 0, n)
		for _, x := range xs {
			if !math.IsNaN(x) {
				sorted = append(sorted, x)
			}
		}
		sort.Float64s(sorted)
		orig := append([]float64(nil), xs...)
		for _, q := range qs {
			want := quantileSorted(sorted, math.Min(math.Max(q, 0), 1))
			got := quantile(xs, q)
			if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("trial %d, n %d, q %g: quantile %v, sorted interpolation %v", trial, n, q, got, want)
			}
		}
		for i := range xs { // the input is not reordered
			if !(xs[i] == orig[i] || math.IsNaN(xs[i]) && math.IsNaN(orig[i])) {
				t.Fatalf("trial %d: quantile reordered its input", trial)
			}
		}
	}
}
