package incident

import (
	"testing"

	"github.com/waterline-dev/waterline/correlate"
)

// The baseline of a frozen copy is an even spread of a stream of unknown
// length, held in bounded memory: a window reaching back a year had all
// its baseline samples in memory before they were thinned.
func TestEvenSampleIsBoundedAndEven(t *testing.T) {
	for _, n := range []int{0, 7, 100, 101, 399, 100000} {
		e := evenSample{max: 100}
		peak := 0
		for i := range n {
			e.add(correlate.Sample{TotalMs: float64(i)})
			peak = max(peak, cap(e.kept))
		}
		got := e.result()
		if want := min(n, 100); len(got) != want {
			t.Errorf("n=%d: kept %d, want %d", n, len(got), want)
		}
		if peak > 400 {
			t.Errorf("n=%d: held room for %d items", n, peak)
		}
		// Evenly spread: consecutive items are about n/100 apart.
		if n >= 1000 {
			for i := 1; i < len(got); i++ {
				gap := got[i].TotalMs - got[i-1].TotalMs
				if want := float64(n) / 100; gap < want/2 || gap > want*2 {
					t.Fatalf("n=%d: gap %v between items %d and %d, want about %v", n, gap, i-1, i, want)
				}
			}
		}
	}
}
