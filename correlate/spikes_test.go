package correlate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

// series builds 15 s points from segments "n×v" (n points around v, with
// ±2 % deterministic noise); "n×_" is a gap of n missing points.
func series(spec string, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, 1))
	var pts []Point
	i := 0
	for _, seg := range strings.Fields(spec) {
		var n int
		var v string
		if _, err := fmt.Sscanf(strings.Replace(seg, "×", " ", 1), "%d %s", &n, &v); err != nil {
			panic(seg)
		}
		for k := 0; k < n; k++ {
			if v != "_" {
				var x float64
				fmt.Sscanf(v, "%g", &x)
				pts = append(pts, Point{T: t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli(), V: x * (1 + 0.02*rng.NormFloat64())})
			}
			i++
		}
	}
	return pts
}

// at is the time of point index i.
func at(i int) time.Time { return t0.Add(time.Duration(i) * 15 * time.Second) }

func TestDetectSpikes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      string
		opt       SpikeOptions
		wantOnset []int // point index of each spike's onset
		tolerance int   // points
	}{
		{"flat", "480×100", SpikeOptions{}, nil, 0},
		{"step up", "300×100 100×300", SpikeOptions{}, []int{300}, 1},
		{"spike and recovery", "300×100 60×300 120×100", SpikeOptions{}, []int{300}, 1},
		{"two spikes", "300×100 40×400 200×100 40×400 60×100", SpikeOptions{}, []int{300, 540}, 1},
		{"small rise is not a spike", "300×100 100×115", SpikeOptions{}, nil, 0},
		{"ramp onset at half-way", "300×100 40×R 100×500", SpikeOptions{}, []int{320}, 4},
		{"one bad scrape is not a spike", "300×100 1×900 100×100", SpikeOptions{}, nil, 0},
		{"weak but sustained", "300×100 100×140", SpikeOptions{}, []int{300}, 2},
		{"weak and short is noise", "300×100 6×140 100×100", SpikeOptions{}, nil, 0},
		{"drop", "300×100 100×30", SpikeOptions{Direction: Down}, []int{300}, 1},
		{"drop is not an up spike", "300×100 100×30", SpikeOptions{}, nil, 0},
		{"gap then spike", "200×100 20×_ 80×100 100×300", SpikeOptions{}, []int{300}, 1},
		{"spike at the start of the window", "40×400 400×100", SpikeOptions{}, []int{0}, 1},
		{"a 90 s blip is not an incident", "300×100 6×200 100×100", SpikeOptions{}, nil, 0},
		{"a short burst that quadrupled is", "300×100 8×400 100×100", SpikeOptions{}, []int{300}, 1},
		{"a slow creep is drift", "300×100 " + creep(100, 145, 80) + "60×145 40×100", SpikeOptions{}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pts := series(strings.ReplaceAll(tt.spec, "40×R", ramp40(100, 500)), 1)
			opt := tt.opt
			opt.Locate = true // the onset locator's rules; alarms: alarm_test.go
			got := DetectSpikes(pts, opt)
			if len(got) != len(tt.wantOnset) {
				t.Fatalf("got %d spikes %v, want %d", len(got), onsets(got), len(tt.wantOnset))
			}
			for i, s := range got {
				want := at(tt.wantOnset[i])
				if d := s.Onset.Sub(want); d < -time.Duration(tt.tolerance)*15*time.Second || d > time.Duration(tt.tolerance)*15*time.Second {
					t.Errorf("spike %d onset %s, want %s ±%d points", i, s.Onset.Format("15:04:05"), want.Format("15:04:05"), tt.tolerance)
				}
				if s.DetectedAt.Before(s.Start) {
					t.Errorf("spike %d detected at %s before it started at %s", i, s.DetectedAt, s.Start)
				}
			}
		})
	}
}

// ramp40 spells a 40-point linear ramp as single-point segments.
func ramp40(from, to float64) string {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "1×%g ", from+(to-from)*float64(i)/39)
	}
	return b.String()
}

func onsets(s []Spike) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Onset.Format("15:04:05"))
	}
	return out
}

// TestDetectSpikesInvariances: the verdict depends on the shape of the
// curve, not its unit — scaling every point leaves it unchanged, and so does
// adding a constant once the ratio test (which is about proportions) is
// off and the MAD floor cannot bind.
func TestDetectSpikesInvariances(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		spec := fmt.Sprintf("%d×100 %d×%d %d×100", 250+rng.IntN(50), 20+rng.IntN(80), 150+rng.IntN(400), 50+rng.IntN(100))
		base := series(spec, seed)
		ref := DetectSpikes(base, SpikeOptions{})
		scaled := make([]Point, len(base))
		for i, p := range base {
			scaled[i] = Point{T: p.T, V: p.V * 7.5}
		}
		if a, b := spikeKeys(ref), spikeKeys(DetectSpikes(scaled, SpikeOptions{})); a != b {
			t.Errorf("%s: scaling changed the spikes: %s vs %s", spec, a, b)
		}
		// The alarm detector's ratio test is fixed (×1.5): the shift
		// invariance holds for the onset locator with its tests off.
		noRatio := SpikeOptions{MinRatio: 1e-9, StrongRatio: 1e-9, ScaleFloor: 1e-9, Locate: true}
		ref = DetectSpikes(base, noRatio)
		shifted := make([]Point, len(base))
		for i, p := range base {
			shifted[i] = Point{T: p.T, V: p.V + 1000}
		}
		if a, b := spikeKeys(ref), spikeKeys(DetectSpikes(shifted, noRatio)); a != b {
			t.Errorf("%s: adding a constant changed the spikes: %s vs %s", spec, a, b)
		}
	}
}

func spikeKeys(s []Spike) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, "[%s %s %s] ", x.Start.Format("15:04:05"), x.Onset.Format("15:04:05"), x.End.Format("15:04:05"))
	}
	return b.String()
}

// TestDetectedAtIsCausal: a live run that sees only the data up to a
// spike's DetectedAt raises the same spike at the same instant.
func TestDetectedAtIsCausal(t *testing.T) {
	t.Parallel()
	pts := series("300×100 30×300 300×100 60×600 50×100", 3)
	full := DetectSpikes(pts, SpikeOptions{})
	if len(full) != 2 {
		t.Fatalf("want 2 spikes, got %v", onsets(full))
	}
	for _, s := range full {
		var cut []Point
		for _, p := range pts {
			if !p.Time().After(s.DetectedAt) {
				cut = append(cut, p)
			}
		}
		live := DetectSpikes(cut, SpikeOptions{})
		found := false
		for _, l := range live {
			if l.Start.Equal(s.Start) && l.DetectedAt.Equal(s.DetectedAt) && l.Ongoing {
				found = true
			}
		}
		if !found {
			t.Errorf("spike starting %s: a live run cut at %s found %v", s.Start, s.DetectedAt, spikeKeys(live))
		}
		cut = cut[:len(cut)-1] // one point earlier it must not have fired yet
		for _, l := range DetectSpikes(cut, SpikeOptions{}) {
			if l.Start.Equal(s.Start) {
				t.Errorf("spike starting %s already raised before its DetectedAt %s", s.Start, s.DetectedAt)
			}
		}
	}
}

// TestQuietNoiseStaysQuiet runs the detector over long stretches of noisy,
// drifting, bursty series and expects no spike.
func TestQuietNoiseStaysQuiet(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var pts []Point
		for i := 0; i < 2880; i++ { // 12 h at 15 s
			diurnal := 1 + 0.25*math.Sin(2*math.Pi*float64(i)/5760)
			v := 200 * diurnal * math.Exp(0.12*rng.NormFloat64())
			if rng.Float64() < 0.01 { // a bad scrape now and then
				v *= 1.8
			}
			pts = append(pts, Point{T: at(i).UnixMilli(), V: v})
		}
		if got := DetectSpikes(pts, SpikeOptions{}); len(got) > 0 {
			t.Errorf("seed %d: %d false spikes, first %s peak %.0f base %.0f", seed, len(got), got[0].Onset, got[0].PeakValue, got[0].Baseline)
		}
	}
}

func TestSeverity(t *testing.T) {
	t.Parallel()
	pts := series("300×100 100×300", 1)
	if s := DetectSpikes(pts, SpikeOptions{SLO: 250}); len(s) != 1 || s[0].Severity != "page" {
		t.Fatalf("sustained SLO breach: %+v, want page", s)
	}
	if s := DetectSpikes(pts, SpikeOptions{SLO: 1000}); len(s) != 1 || s[0].Severity != "ticket" {
		t.Fatalf("under the SLO: %+v, want ticket", s)
	}
}

func TestMedianAbsDev(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	for n := 1; n < 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Round(rng.NormFloat64() * 10)
		}
		var w sortedWindow
		for _, x := range xs {
			w.add(x)
		}
		med := median(xs)
		dev := make([]float64, n)
		for i, x := range xs {
			dev[i] = math.Abs(x - med)
		}
		if got, want := medianAbsDev(w.vals, med), median(dev); math.Abs(got-want) > 1e-9 {
			t.Fatalf("n=%d: MAD %v, want %v", n, got, want)
		}
	}
}

// creep spells a slow linear rise over n points.
func creep(from, to float64, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "1×%g ", from+(to-from)*float64(i)/float64(n-1))
	}
	return b.String()
}
