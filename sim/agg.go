package sim

import (
	"math"

	"github.com/waterline-dev/waterline/correlate"
)

// bounds are the latency histogram's upper bounds in seconds (+Inf is
// implied). One fleet-wide layout, as a real exporter has, dense enough
// (10–25 % apart) around every catalog SLO for histogram_quantile to resolve
// P99 shifts.
var bounds = []float64{
	0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1,
	0.125, 0.15, 0.175, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6,
	0.7, 0.8, 0.9, 1, 1.25, 1.5, 2, 2.5, 3, 4,
	5, 6, 8, 10, 15, 20, 30, 60,
}

// nBuckets counts the histogram's buckets including +Inf.
var nBuckets = len(bounds) + 1

// bucketOf returns the index of the first bound ≥ v (len(bounds) for +Inf).
func bucketOf(v float64) int {
	lo, hi := 0, len(bounds)
	for lo < hi {
		mid := (lo + hi) / 2
		if bounds[mid] >= v {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// podAgg holds one pod's per-scrape increments. Index i covers the
// interval (t_{i−1}, t_i] ending at scrape i; index 0 also takes everything
// before the window (the warm-up), which the writer scales up to the pod's
// uptime so counters do not start at zero.
type podAgg struct {
	buckets  []uint32 // nSteps × nBuckets, per-bucket (not cumulative) counts
	sum      []float64
	stageSum [correlate.NumStages][]float64
	stageCnt [correlate.NumStages][]uint32
	batches  []uint32
	items    []uint32  // requests in the batches dispatched in the step
	queue    []float64 // request-seconds spent waiting (Little's law)
	gpuBusy  []float64 // seconds the GPU executed batches
	cpu      []float64 // host CPU seconds of request handling
	rx       []float64 // request bytes received
}

func newPodAgg(n int) *podAgg {
	a := &podAgg{
		buckets: make([]uint32, n*nBuckets),
		sum:     make([]float64, n),
		batches: make([]uint32, n),
		items:   make([]uint32, n),
		queue:   make([]float64, n),
		gpuBusy: make([]float64, n),
		cpu:     make([]float64, n),
		rx:      make([]float64, n),
	}
	for s := range a.stageSum {
		a.stageSum[s] = make([]float64, n)
		a.stageCnt[s] = make([]uint32, n)
	}
	return a
}

// counterStep returns the scrape that first counts an event at time t
// (seconds from the window start): ceil(t/step), 0 for anything before the
// window, −1 past its end.
func (f *Fleet) counterStep(t float64) int {
	if t <= 0 {
		return 0
	}
	i := int(math.Ceil(t / f.step))
	if i >= f.nSteps {
		return -1
	}
	return i
}

// spread adds w per second of [from, to) to the scrapes whose interval it
// overlaps, for time-averaged gauges. Time before (−step, 0] is dropped.
func (f *Fleet) spread(arr []float64, from, to, w float64) {
	if to <= from {
		return
	}
	lo := math.Max(from, -f.step)
	if to <= lo {
		return
	}
	i := f.counterStep(lo)
	if i < 0 {
		return
	}
	for ; i < f.nSteps; i++ {
		end := float64(i) * f.step
		start := end - f.step
		a, b := math.Max(lo, start), math.Min(to, end)
		if b > a {
			arr[i] += (b - a) * w
		}
		if to <= end {
			return
		}
	}
}
