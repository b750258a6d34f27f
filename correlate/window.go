package correlate

import "sort"

// sortedWindow keeps the values of a sliding window sorted, so the median
// and MAD of a trailing baseline cost O(W) per step instead of a sort.
type sortedWindow struct {
	vals []float64
}

func (w *sortedWindow) add(v float64) {
	i := sort.SearchFloat64s(w.vals, v)
	w.vals = append(w.vals, 0)
	copy(w.vals[i+1:], w.vals[i:])
	w.vals[i] = v
}

func (w *sortedWindow) remove(v float64) {
	i := sort.SearchFloat64s(w.vals, v)
	if i < len(w.vals) && w.vals[i] == v {
		w.vals = append(w.vals[:i], w.vals[i+1:]...)
	}
}

func (w *sortedWindow) len() int { return len(w.vals) }

// stats returns the robust statistics of the window, with the scale floored
// as in robust.
func (w *sortedWindow) stats(floorFrac, absFloor float64) robustStats {
	return robustSorted(w.vals, floorFrac, absFloor)
}

// medianAbsDev finds the median of |x − med| over sorted c in O(n): the
// deviations left of the median, read right to left, and those right of it,
// read left to right, are two sorted runs; merging them until the middle
// gives the median without sorting.
func medianAbsDev(c []float64, med float64) float64 {
	n := len(c)
	split := sort.SearchFloat64s(c, med)
	l, r := split-1, split
	next := func() float64 {
		switch {
		case l < 0:
			r++
			return c[r-1] - med
		case r >= n:
			l--
			return med - c[l+1]
		case med-c[l] <= c[r]-med:
			l--
			return med - c[l+1]
		default:
			r++
			return c[r-1] - med
		}
	}
	// The median of n deviations is the mean of the ((n-1)/2)-th and
	// (n/2)-th smallest (0-based).
	var a, b float64
	for k := 0; k <= n/2; k++ {
		v := next()
		if k == (n-1)/2 {
			a = v
		}
		if k == n/2 {
			b = v
		}
	}
	return (a + b) / 2
}
