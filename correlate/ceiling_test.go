package correlate

import (
	"math"
	"strings"
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

// pinnedFixture is a model whose P99 (400 ms before the onset) climbs for
// two minutes and then sits at exactly 10000 ms, its histogram's top
// finite bucket, to the end of the data; pinned false leaves the climb
// going on, interpolated, to about 10 s.
func pinnedFixture(pinned bool) *fixture {
	x := newFixture()
	c := x.p99c("chat-8b", 400, 10000)
	for i := range c.Points {
		t := c.Points[i].Time()
		switch k := int(t.Sub(x.onset) / time.Minute); {
		case k < 0:
		case k < 2:
			c.Points[i].V = 3000 * float64(k+1)
		case pinned:
			c.Points[i].V = 10 * 1000.0
		default:
			c.Points[i].V = 9000 + 80*float64(k%13)
		}
	}
	return x
}

func TestAnalysisSaysAtLeastAtTheCeiling(t *testing.T) {
	a := pinnedFixture(true).analyze()
	if len(a.Impact) == 0 {
		t.Fatal("no impact")
	}
	im := a.Impact[0]
	if im.CeilingMs != 10000 || im.DuringP99Ms != 10000 {
		t.Fatalf("impact: ceiling %v, during %v; want both 10000", im.CeilingMs, im.DuringP99Ms)
	}
	for _, want := range []string{"P99 latency up at least ×"} {
		if !strings.Contains(a.Headline.Title, want) {
			t.Errorf("title %q: want %q", a.Headline.Title, want)
		}
	}
	sum := a.Headline.Summary
	if !strings.Contains(sum, "→ ≥ 10 s (the P99 reached its histogram's top bucket, so the true value is higher)") {
		t.Errorf("summary %q: want the P99 as ≥ 10 s with why, once", sum)
	}
	if n := strings.Count(sum, "top bucket"); n != 1 {
		t.Errorf("summary %q: says the top bucket %d times; want once", sum, n)
	}
	if !strings.Contains(a.Scope.Summary, "(P99 at least ×") {
		t.Errorf("scope summary %q: want the P99 ratio as at least", a.Scope.Summary)
	}
	var marked bool
	for _, s := range a.Spikes {
		marked = marked || s.PeakAtCeiling
	}
	if !marked {
		t.Errorf("spikes %+v: want the P99's marked peak_at_ceiling", a.Spikes)
	}

	// The same rise, interpolated: every figure is measured.
	b := pinnedFixture(false).analyze()
	if b.Impact[0].CeilingMs != 0 || strings.Contains(b.Headline.Title+b.Headline.Summary+b.Scope.Summary, "at least") ||
		strings.Contains(b.Headline.Summary, "≥") {
		t.Errorf("an interpolated rise read as capped: %+v / %q / %q", b.Impact[0], b.Headline.Summary, b.Scope.Summary)
	}
	for _, s := range b.Spikes {
		if s.PeakAtCeiling {
			t.Errorf("an interpolated rise's spike marked at the ceiling: %+v", s)
		}
	}
	// Wording, not diagnosis: the causes and their scores are those of a
	// curve a hair under the cap (the same numbers, no repeated value).
	x := pinnedFixture(true)
	for i := range x.curves[0].Points {
		if p := &x.curves[0].Points[i]; p.V == 10000 {
			p.V = 10000 * (1 - 1e-7*float64(i))
		}
	}
	c := x.analyze()
	if c.Impact[0].CeilingMs != 0 {
		t.Fatalf("a curve a hair under the cap, never repeating, read as capped at %v", c.Impact[0].CeilingMs)
	}
	if len(a.Causes) != len(c.Causes) {
		t.Fatalf("causes: %d capped, %d not", len(a.Causes), len(c.Causes))
	}
	for i := range a.Causes {
		if a.Causes[i].Category != c.Causes[i].Category || math.Abs(a.Causes[i].Score-c.Causes[i].Score) > 1e-6 {
			t.Errorf("cause %d: %s %.6f capped, %s %.6f not", i, a.Causes[i].Category, a.Causes[i].Score, c.Causes[i].Category, c.Causes[i].Score)
		}
	}
}

// Cause evidence quoting a capped model's P99 ratio says it is a lower
// bound: "a was hit harder (P99 at least ×4.0)" when a's P99 sat at its
// histogram's top bucket (400 ms here) through the spike.
func TestMinorPartSaysAtLeastForACappedModel(t *testing.T) {
	t.Parallel()
	x := newFixture()
	a := x.p99c("a", 100, 400)
	for i := range a.Points {
		if !a.Points[i].Time().Before(x.onset) {
			a.Points[i].V = 400
		}
	}
	x.p99("b", 100, 150)
	for _, m := range []string{"a", "b"} {
		x.curve(RoleStageTime, LevelModel, Scope{Model: m}, 50, 200).Stage = "exec"
	}
	x.curve(RoleStageTime, LevelModel, Scope{Model: "a"}, 1, 1).Stage = "batch_wait"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "b"}, 1, 2).Stage = "batch_wait"
	c := causeOf(t, x.analyze(), CatBatching)
	e := evidenceNamed(c, "explains_minor_part")
	if e == nil {
		t.Fatalf("batching targets %s: the shape no longer yields explains_minor_part", c.Target.Model)
	}
	if !strings.Contains(e.Summary, "a was hit harder (P99 at least ×4.0) than b (×1.5)") {
		t.Errorf("%q: want a's ratio as at least, b's as measured", e.Summary)
	}
}

// The samples step quotes the impact's P99 rise after a row's tail share:
// a P99 at its histogram's top bucket is quoted as "≥".
func TestTailClauseSaysAtLeastAtTheCeiling(t *testing.T) {
	row := Concentration{Models: []string{"m"}, TailShare: 0.6}
	a := Analysis{Impact: []Impact{{Model: "m", Quantile: "P99", BaselineP99Ms: 400, DuringP99Ms: 10000, CeilingMs: 10000}}}
	if got := tailClause(a, row); !strings.HasSuffix(got, "(400 ms → ≥ 10 s)") {
		t.Errorf("capped: %q; want the rise to end ≥ 10 s", got)
	}
	a.Impact[0].DuringP99Ms = 9200
	if got := tailClause(a, row); !strings.HasSuffix(got, "(400 ms → 9.2 s)") {
		t.Errorf("under the cap: %q; want the rise as measured", got)
	}
}

// The release compares version P99 curves; one pinned at its histogram's
// top bucket is a lower bound there too. v2 at exactly 10 s against v1's
// 400 ms: "≥ 10 s" and "at least ×25". Both versions pinned: neither is
// measured, so no item says which is slower, or that v2 is not slower.
func TestReleaseSaysAtLeastForACappedVersion(t *testing.T) {
	build := func(v1During float64) Cause {
		x := newFixture()
		x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy"}}
		pin := func(c *Curve) {
			for i := range c.Points {
				if !c.Points[i].Time().Before(x.onset) {
					c.Points[i].V = 10000
				}
			}
		}
		pin(x.p99c("m", 400, 10000))
		v1 := x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v1"}, 400, v1During)
		if v1During == 10000 {
			pin(v1)
		}
		pin(x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 10000))
		x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v1"}, 10, 5)
		x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 5)
		return causeOf(t, x.analyze(), CatRelease)
	}
	c := build(400)
	e := evidenceNamed(c, "new_version_slower")
	if e == nil || !strings.Contains(e.Summary, "v2 P99 is ≥ 10 s against 400 ms on v1") || !strings.Contains(e.Summary, "(at least ×25.00)") {
		t.Errorf("new_version_slower %+v: want v2's P99 as ≥ 10 s and the ratio as at least ×25", e)
	}
	if !strings.Contains(c.Summary, "(P99 ≥ 10 s against 400 ms)") {
		t.Errorf("summary %q: want v2's P99 as ≥ 10 s", c.Summary)
	}

	both := build(10000)
	for _, name := range []string{"new_version_slower", "new_version_not_slower"} {
		if e := evidenceNamed(both, name); e != nil {
			t.Errorf("both versions at the top bucket, yet %s: %q", name, e.Summary)
		}
	}
	if !strings.Contains(both.Summary, "which is slower is not measured") {
		t.Errorf("summary %q: want that neither version's P99 is measured", both.Summary)
	}
}

// A sick replica whose P99 sat at its histogram's top bucket is quoted as
// a lower bound in the local cause: "r1's P99 is ≥ 10 s".
func TestLocalReplicaSaysAtLeastAtTheCeiling(t *testing.T) {
	x := newFixture()
	x.p99("m", 200, 1500)
	x.replica("m", "r1", "n1", 200, 10000, 10, 10)
	for i := range x.curves {
		c := &x.curves[i]
		if c.Role == RoleLatencyP99 && c.Scope.Replica == "r1" {
			for k := range c.Points {
				if !c.Points[k].Time().Before(x.onset) {
					c.Points[k].V = 10000
				}
			}
		}
	}
	for _, r := range []string{"r2", "r3", "r4", "r5"} {
		x.replica("m", r, "n2", 200, 210, 10, 10)
	}
	c := causeOf(t, x.analyze(), CatLocalReplica)
	e := evidenceNamed(c, "replica_outlier")
	if e == nil || !strings.Contains(e.Summary, "r1's P99 is ≥ 10 s while its peers") {
		t.Errorf("replica_outlier %+v: want r1's P99 as ≥ 10 s", e)
	}
}
