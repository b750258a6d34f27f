package correlate

import (
	"math"
	"testing"
	"time"
)

// pinnedP99 is a 15 s P99 curve at about 400 ms for two hours, then an
// incident: it climbs for a minute, sits at exactly 10000 ms (the top
// finite bucket of 10 s, * 1000) for pinned points, and comes back.
func pinnedP99(pinned int) []Point {
	pts := series("480×400", 7)
	n := len(pts)
	add := func(v float64) {
		pts = append(pts, Point{T: at(n).UnixMilli(), V: v})
		n++
	}
	for _, v := range []float64{900, 2600, 6100} {
		add(v)
	}
	for range pinned {
		add(10 * 1000.0) // histogram_quantile's answer in +Inf, in ms
	}
	for _, v := range []float64{7400, 3100, 1200} {
		add(v)
	}
	for _, p := range series("120×400", 8) {
		add(p.V)
	}
	return pts
}

func TestQuantileCeilingPinnedSpike(t *testing.T) {
	pts := pinnedP99(12)
	top, ok := QuantileCeiling(pts, math.NaN())
	if !ok || top != 10000 {
		t.Fatalf("a P99 sitting at exactly 10000 ms for 12 points during a rise: got %v, %v; want 10000, true", top, ok)
	}
	// The same with three points: the fewest the rule takes at 15 s.
	if _, ok := QuantileCeiling(pinnedP99(3), math.NaN()); !ok {
		t.Fatal("three points at the same maximum during a rise are the cap's signature")
	}
	// Two points at 15 s could be one slow request seen by two evaluations
	// of one rate window.
	if _, ok := QuantileCeiling(pinnedP99(2), math.NaN()); ok {
		t.Fatal("two consecutive 15 s points at the maximum were read as pinned")
	}
}

func TestQuantileCeilingNoisySpikeNotFlagged(t *testing.T) {
	// A real spike: the quantile interpolates inside a bucket and moves
	// with every scrape, whatever its height.
	pts := series("480×400 20×9000 120×400", 11)
	if top, ok := QuantileCeiling(pts, math.NaN()); ok {
		t.Fatalf("a noisy spike read as pinned at %v", top)
	}
	// Interpolated values that come close to one another are not one
	// value: 10000 and 10000.01 differ by 1e-6 relative.
	pts = series("480×400", 3)
	for i, v := range []float64{9000, 10000, 9999.99, 10000.01, 9500} {
		pts = append(pts, Point{T: at(480 + i).UnixMilli(), V: v})
	}
	if _, ok := QuantileCeiling(pts, math.NaN()); ok {
		t.Fatal("three near-equal interpolated values read as one pinned value")
	}
}

func TestQuantileCeilingConstantCurveNotFlagged(t *testing.T) {
	// A synthetic or idle curve repeats one value everywhere: its maximum
	// is its median, no rise, no cap to speak of.
	var pts []Point
	for i := range 600 {
		pts = append(pts, Point{T: at(i).UnixMilli(), V: 250})
	}
	if _, ok := QuantileCeiling(pts, math.NaN()); ok {
		t.Fatal("a constant curve read as pinned at a ceiling")
	}
	// Nor with a few missing measurements (NaN, 0) in it.
	pts[10].V, pts[11].V, pts[300].V = math.NaN(), 0, math.NaN()
	if _, ok := QuantileCeiling(pts, math.NaN()); ok {
		t.Fatal("a constant curve with holes read as pinned at a ceiling")
	}
	// A step up to a value held for good is a new level, judged against
	// the caller's baseline when it has one.
	if _, ok := QuantileCeiling(pts, 240); ok {
		t.Fatal("a constant curve at its own baseline read as pinned")
	}
}

func TestQuantileCeilingCoarseSteps(t *testing.T) {
	// At 5 min steps two consecutive points at one exact value are ten
	// minutes pinned.
	base := t0
	var pts []Point
	for i := range 40 {
		v := 400 * (1 + 0.02*math.Sin(float64(i)))
		switch i {
		case 30, 31:
			v = 10000
		case 32:
			v = 5200
		}
		pts = append(pts, Point{T: base.Add(time.Duration(i) * 5 * time.Minute).UnixMilli(), V: v})
	}
	if _, ok := QuantileCeiling(pts, math.NaN()); !ok {
		t.Fatal("two consecutive 5 min points at the maximum during a rise not read as pinned")
	}
	// Two such points apart are two evaluations that happened to agree.
	pts[31].V = 7000
	pts[35].V = 10000
	if _, ok := QuantileCeiling(pts, math.NaN()); ok {
		t.Fatal("two non-consecutive points at the maximum read as pinned")
	}
}

func TestDetectedSpikeMarkedAtCeiling(t *testing.T) {
	pts := pinnedP99(12)
	spikes := DetectSpikes(pts, SpikeOptions{Quantile: true})
	if len(spikes) == 0 {
		t.Fatal("no spike found")
	}
	s := spikes[0]
	MarkCeiling(&s, pts)
	if !s.PeakAtCeiling || s.PeakValue != 10000 {
		t.Fatalf("peak %v, at ceiling %v; want 10000 at the ceiling", s.PeakValue, s.PeakAtCeiling)
	}
	// The same spike with an interpolated top is not marked.
	noisy := series("480×400 20×9000 120×400", 11)
	for _, s := range DetectSpikes(noisy, SpikeOptions{Quantile: true}) {
		MarkCeiling(&s, noisy)
		if s.PeakAtCeiling {
			t.Fatalf("a noisy spike peaking at %v marked at the ceiling", s.PeakValue)
		}
	}
	// A later, milder episode of the same curve is read on its own span:
	// its peak is measured, whatever the cap the curve hit before.
	first := len(pts)
	mild := append(pts, series("20×3000 100×400", 12)...)
	for i := first; i < len(mild); i++ {
		mild[i].T = at(i).UnixMilli()
	}
	later := Spike{Direction: Up, Start: at(first), Onset: at(first), End: at(first + 19), Baseline: 400}
	for _, p := range mild[first : first+20] {
		if p.V > later.PeakValue {
			later.PeakValue, later.PeakTime = p.V, p.Time()
		}
	}
	MarkCeiling(&later, mild)
	if later.PeakAtCeiling {
		t.Fatalf("a later spike peaking at %v, under the earlier cap, marked at the ceiling", later.PeakValue)
	}
	// A drop is never at a ceiling.
	s.Direction = Down
	MarkCeiling(&s, pts)
	if s.PeakAtCeiling {
		t.Fatal("a drop marked at the ceiling")
	}
}
