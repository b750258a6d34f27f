package correlate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestImpactPeakAndRecovery: a spike to 500 ms that falls back is
// "recovered" when it came back, with its peak and when; one still high at
// the end of the data is "ongoing".
func TestImpactPeakAndRecovery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		backAfter time.Duration // 0: never
		want      string
	}{{"recovered", 12 * time.Minute, "recovered"}, {"ongoing", 0, "ongoing"}} {
		x := newFixture()
		cv := x.curve(RoleLatencyP99, LevelModel, Scope{Model: "m"}, 100, 300)
		for i := range cv.Points {
			at := cv.Points[i].Time()
			switch {
			case at.Sub(x.onset) == 5*time.Minute:
				cv.Points[i].V = 600 // one scrape: not the peak
			case at.Sub(x.onset) >= 6*time.Minute && at.Sub(x.onset) < 9*time.Minute:
				cv.Points[i].V = 500
			case c.backAfter > 0 && at.Sub(x.onset) >= c.backAfter:
				cv.Points[i].V = 100
			}
		}
		f := x.facts()
		im := f.impacts([]string{"m"}, fxStart.Add(fxMinutes*time.Minute))[0]
		if im.Status != c.want {
			t.Errorf("%s: status %q", c.name, im.Status)
		}
		if math.Abs(im.PeakP99Ms-500) > 10 || im.PeakAt == nil || im.PeakAt.Sub(x.onset) < 5*time.Minute || im.PeakAt.Sub(x.onset) > 9*time.Minute {
			t.Errorf("%s: peak %.0f at %v, want 500 between 5 and 9 min after the onset (one scrape at 600 is noise)", c.name, im.PeakP99Ms, im.PeakAt)
		}
		if c.backAfter > 0 && (im.RecoveredAt == nil || im.RecoveredAt.Sub(x.onset) != c.backAfter) {
			t.Errorf("%s: recovered at %v, want %v after the onset", c.name, im.RecoveredAt, c.backAfter)
		}
		if math.Abs(im.BaselineP99Ms-100) > 2 {
			t.Errorf("%s: baseline %.0f", c.name, im.BaselineP99Ms)
		}
	}
}

// TestSLOImpact: requests over the SLO during the spike, against the 1 %
// a P99 objective allows, and the share of a 30-day budget they burned.
func TestSLOImpact(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	// 10 requests a minute before (none over 200 ms), half of them over it during.
	x.sampleRun(10, Scope{Model: "m", Replica: "r"}, 100, 100, func(s *Sample, during bool) {
		if during && s.Time.Second()%2 == 0 {
			s.TotalMs = 400
		}
	})
	f := x.facts()
	f.slo = func(string) (float64, bool) { return 200, true }
	s := f.sloImpact("m")
	if s == nil || s.BadRequests == nil {
		t.Fatalf("slo impact %+v", s)
	}
	during := x.ph.DuringTo.Sub(x.ph.Onset).Minutes()
	if want := 5 * during; math.Abs(*s.BadRequests-want) > 1 {
		t.Errorf("bad requests %.0f, want %.0f", *s.BadRequests, want)
	}
	if math.Abs(*s.BurnRate-50) > 1 {
		t.Errorf("burn rate %.1f, want 50 (half the requests against 1 %%)", *s.BurnRate)
	}
	month := 10.0 * 60 * 24 * 30
	if want := *s.BadRequests / (0.01 * month); math.Abs(*s.BudgetBurned-want) > 0.001 {
		t.Errorf("budget burned %.4f, want %.4f", *s.BudgetBurned, want)
	}
	// The P99 stays over the SLO from the onset to the end of the data.
	over := fxStart.Add(fxMinutes * time.Minute).Sub(x.onset).Minutes()
	if math.Abs(s.MinutesOver-over) > 1 {
		t.Errorf("minutes over the SLO %.1f, want the whole breach (%.0f)", s.MinutesOver, over)
	}
}

// TestReconciliation: capacity while one replica holds most slow requests
// says it saturates first; a local fault while traffic rose says the pool
// absorbed it.
func TestReconciliation(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 30, 60)
	x.replica("m", "hot", "n1", 100, 600, 10, 30)
	x.replica("m", "b", "n2", 100, 200, 10, 15)
	x.replica("m", "c", "n3", 100, 200, 10, 15)
	for _, r := range []string{"hot", "b", "c"} {
		slow := r == "hot"
		x.sampleRun(10, Scope{Model: "m", Replica: r, Node: map[string]string{"hot": "n1", "b": "n2", "c": "n3"}[r]}, 100, 100, func(s *Sample, during bool) {
			if during && slow && s.Time.Second()%2 == 0 {
				s.TotalMs = 900
			}
		})
	}
	f := x.facts()
	got := f.reconcile(Cause{Category: CatCapacity, Target: Target{Model: "m"}})
	for _, want := range []string{"replica hot", "traffic rose ×2.0", "1.5× the average replica's traffic", "capacity, not a bad replica"} {
		if !strings.Contains(got, want) {
			t.Errorf("capacity reconciliation %q lacks %q", got, want)
		}
	}
	if !strings.Contains(got, "its peers' P99 rose ×2.0 too") {
		t.Errorf("capacity reconciliation %q: the peers went 100 → 200 ms", got)
	}
	got = f.reconcile(Cause{Category: CatLocalReplica, Target: Target{Replica: "hot"}})
	if !strings.Contains(got, "Traffic rose ×2.0") || !strings.Contains(got, "replica hot") || !strings.Contains(got, "not a capacity shortage") {
		t.Errorf("local reconciliation %q", got)
	}
	if got := f.reconcile(Cause{Category: CatRelease}); got != "" {
		t.Errorf("release needs no reconciliation: %q", got)
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{fmtMs(1307), "1.31 s"}, {fmtMs(45), "45 ms"}, {fmtMs(0.84), "0.8 ms"}, {fmtMs(-45), "-45 ms"},
		{fmtValue(RoleNodeNetwork, 612004.27), "612 kB/s"}, {fmtValue(RoleNodeNetwork, 12.3e6), "12.3 MB/s"},
		{fmtValue(RoleErrorRate, 0.004), "0.4%"}, {fmtValue(RoleGPUUtil, 94), "94%"}, {fmtValue(RoleGPUMemUsed, 40960), "40 GiB"},
		{likelier(108.2), "over 100× as likely to be slow"}, {likelier(5.94), "5.9× as likely to be slow"},
		{fmtCount(76292), "76,292"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	d := CurveDeviation{Role: RoleNodeNetwork, Level: LevelNode, Scope: Scope{Node: "gpu-a100-04"}, Before: 612004.27, During: 226688.32, Extreme: 226688.32, Score: 0.9}
	if got := describeCurve(d) + " " + moved(d); got != "node gpu-a100-04's network receive rate fell from 612 kB/s to 227 kB/s (far outside its usual range)" {
		t.Errorf("moved: %q", got)
	}
}

// TestSamplesStepQuotesTheHeadersP99: the samples' own P99 over the spike
// (824 ms, 265 ms without the row) is another population than the impact's
// P99 curve (190 ms → 624 ms); the step quotes the row's effect as a share
// of the impact's rise, never the samples' milliseconds.
func TestSamplesStepQuotesTheHeadersP99(t *testing.T) {
	t.Parallel()
	row := Concentration{Dims: map[string]string{"replica": "r-1"}, Label: "replica=r-1", SelectionPct: 79, BaselinePct: 20, RiskRatio: 9,
		Models: []string{"chat"}, P99Ms: 824, P99WithoutMs: 265, P99DeltaMs: 559, TailShare: 0.88}
	a := Analysis{Concentration: []Concentration{row}, Samples: SampleSummary{Total: 1000, SlowRequests: 120},
		Impact: []Impact{{Model: "chat", BaselineP99Ms: 190, DuringP99Ms: 624}}}
	got := samplesStep(a, &facts{affected: []string{"chat"}}, nil).Answer
	if !strings.Contains(got, "undoes 88% of chat's P99 rise (190 ms → 624 ms)") {
		t.Errorf("samples step %q: want the share of the impact's rise", got)
	}
	for _, ms := range []string{"824", "265", "559"} {
		if strings.Contains(got, ms) {
			t.Errorf("samples step %q quotes the samples' own P99 (%s ms)", got, ms)
		}
	}
	// No share, no P99 clause.
	a.Concentration[0].TailShare = 0
	if got := samplesStep(a, &facts{affected: []string{"chat"}}, nil).Answer; strings.Contains(got, "P99") {
		t.Errorf("samples step %q: a row explaining none of the rise says nothing of the P99", got)
	}
}

// TestPickOnsetSharpOverLongMild: in a window with no scope, a mild shift
// (P99 ×1.8 at its peak) that runs from early on to the end of the data
// does not outweigh the sharp incident inside it (×3.4 for 8 minutes):
// the sharp one sets the onset. A long ×2 spike still outweighs a
// one-minute ×4 blip beside it.
func TestPickOnsetSharpOverLongMild(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 5, 7, 39, 45, 0, time.UTC)
	spike := func(model string, from, to time.Duration, peak, base float64) Spike {
		return Spike{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: model}, Onset: at.Add(from), Start: at.Add(from),
			End: at.Add(to), PeakValue: peak, Baseline: base}
	}
	for _, c := range []struct {
		name   string
		spikes []Spike
		want   time.Time
	}{
		{"sharp inside a long mild shift", []Spike{spike("embed", 0, 80*time.Minute, 163, 91), spike("vision", 15*time.Minute, 23*time.Minute, 812, 238)}, at.Add(15 * time.Minute)},
		{"long spike beside a blip", []Spike{spike("chat", 0, 30*time.Minute, 400, 200), spike("embed", 10*time.Minute, 11*time.Minute, 400, 100)}, at},
	} {
		onset, _, ok := pickOnset(c.spikes, Input{})
		if !ok || !onset.Equal(c.want) {
			t.Errorf("%s: onset %s, want %s", c.name, onset, c.want)
		}
	}
}

// TestPickOnsetEpisodeThatDipped: a sustained rise that dipped for a
// minute is split by the detector into two spikes of one curve, the later
// one stronger (a throttled GPU on one of three replicas: P99 ×1.6 from
// 08:06, a dip at 08:20, ×1.8 from 08:21). The incident began with the
// first; a lull longer than episodeGap, an earlier spike of another model
// or a minor wiggle leaves the stronger spike's onset.
func TestPickOnsetEpisodeThatDipped(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 5, 8, 6, 45, 0, time.UTC)
	spike := func(model string, from, to time.Duration, peak float64) Spike {
		return Spike{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: model}, Onset: at.Add(from), Start: at.Add(from),
			End: at.Add(to), PeakValue: peak, Baseline: 242}
	}
	later := spike("vision", 14*time.Minute+45*time.Second, 36*time.Minute, 425)
	for _, c := range []struct {
		name   string
		spikes []Spike
		want   time.Time
	}{
		{"dipped for a minute", []Spike{spike("vision", 0, 13*time.Minute+30*time.Second, 383), later}, at},
		{"three steps", []Spike{spike("vision", 0, 6*time.Minute, 383), spike("vision", 8*time.Minute, 13*time.Minute+30*time.Second, 383), later}, at},
		{"a long lull", []Spike{spike("vision", 0, 8*time.Minute, 383), later}, later.Onset},
		{"a minor wiggle", []Spike{spike("vision", 12*time.Minute, 12*time.Minute+15*time.Second, 270), later}, later.Onset},
		{"another model", []Spike{spike("embed", 0, 13*time.Minute+30*time.Second, 383), later}, later.Onset},
	} {
		onset, _, ok := pickOnset(c.spikes, Input{})
		if !ok || !onset.Equal(c.want) {
			t.Errorf("%s: onset %s, want %s", c.name, onset, c.want)
		}
	}
}

// TestPickOnsetLeavesAnotherModelsRelease: an earlier spike of another
// model that follows that model's own rollout is a separate incident, so
// the primary keeps its onset; without events, or when both models were
// released, the earlier spike still marks the incident's start.
func TestPickOnsetLeavesAnotherModelsRelease(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 5, 7, 39, 45, 0, time.UTC)
	primary := Spike{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: "chat"}, Onset: at, Start: at,
		End: at.Add(20 * time.Minute), PeakValue: 900, Baseline: 200}
	other := Spike{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: "embed"}, Onset: at.Add(-3 * time.Minute),
		Start: at.Add(-3 * time.Minute), End: at.Add(10 * time.Minute), PeakValue: 500, Baseline: 200}
	deploy := func(model string, before time.Duration) Event {
		return Event{ID: model, Kind: KindDeploy, Time: at.Add(-before), Scope: Scope{Model: model}}
	}
	for _, c := range []struct {
		name   string
		events []Event
		want   time.Time
	}{
		{"the other model's own rollout", []Event{deploy("embed", 5*time.Minute)}, at},
		{"no events", nil, other.Onset},
		{"both models released", []Event{deploy("embed", 5*time.Minute), deploy("chat", 4*time.Minute)}, other.Onset},
		{"the other model's rollout long before", []Event{deploy("embed", 40*time.Minute)}, other.Onset},
	} {
		onset, _, ok := pickOnset([]Spike{primary, other}, Input{Events: c.events})
		if !ok || !onset.Equal(c.want) {
			t.Errorf("%s: onset %s, want %s", c.name, onset, c.want)
		}
	}
}

// TestSamplesOnsetLeadsCoarseCurves: when the request samples' P99 rose
// minutes before the curves' onset (rate() over two-minute scrapes shows
// a cold start late), the samples' phases start at the samples' rise, so
// the worst minutes are not taken as the baseline. A rise within the
// guard minute, or long before, leaves the onset alone.
func TestSamplesOnsetLeadsCoarseCurves(t *testing.T) {
	t.Parallel()
	onset := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	samples := func(rise time.Duration) []Sample {
		rng := rand.New(rand.NewPCG(3, 4))
		var out []Sample
		for at := onset.Add(-70 * time.Minute); at.Before(onset.Add(10 * time.Minute)); at = at.Add(500 * time.Millisecond) {
			ms := 200 * math.Exp(0.2*rng.NormFloat64())
			if !at.Before(onset.Add(-rise)) {
				ms *= 5
			}
			out = append(out, Sample{Time: at, Model: "vision", TotalMs: ms, SampleRate: 1})
		}
		return out
	}
	spikes := []Spike{{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: "vision"}, Onset: onset}}
	noSLO := func(string) (float64, bool) { return 0, false }
	for _, c := range []struct {
		name     string
		rise     time.Duration
		from, to time.Duration // the answer's offset from the onset
	}{
		{"samples rose 4 min before the curves", 4 * time.Minute, -5 * time.Minute, -3 * time.Minute},
		{"samples rose with the curves", 30 * time.Second, 0, 0},
		{"samples rose long before", 20 * time.Minute, 0, 0},
	} {
		got := samplesOnset(samples(c.rise), spikes, onset, noSLO)
		if d := got.Sub(onset); d < c.from || d > c.to {
			t.Errorf("%s: samples onset %s (%v from the onset), want %v…%v", c.name, got.Format("15:04:05"), d, c.from, c.to)
		}
	}
	if got := samplesOnset(samples(4*time.Minute), nil, onset, noSLO); !got.Equal(onset) {
		t.Errorf("no spike at the onset: samples onset %s, want the onset", got)
	}
	ph := newPhases(onset, onset.Add(10*time.Minute), onset.Add(-2*time.Hour), onset.Add(time.Hour)).startingAt(onset.Add(-4 * time.Minute))
	if !ph.Onset.Equal(onset.Add(-4*time.Minute)) || !ph.BeforeTo.Equal(onset.Add(-5*time.Minute)) || !ph.DuringTo.Equal(onset.Add(10*time.Minute)) {
		t.Errorf("phases starting 4 min early: %+v", ph)
	}
}

// TestLocateLooseLeads: in a window opened on an incident where nothing
// lasting rose, the onset is a short bump (a weak cold start: P99 ×1.7
// for two minutes) or a small clean step (×1.22 on a calm model under a
// throttled node) near the window's anchor, not the anchor itself; of two
// such leads the one near the anchor wins. Where a lasting spike exists,
// it decides, and calm noise alone gives no onset.
func TestLocateLooseLeads(t *testing.T) {
	t.Parallel()
	const step = 15 * time.Second
	from := t0
	win := Window{From: from.Add(90 * time.Minute), To: from.Add(225 * time.Minute)}
	anchor := win.From.Add(90 * time.Minute) // two thirds in
	at := func(d time.Duration) int { return int((anchor.Sub(from) + d) / step) }
	curve := func(model string, seed uint64, level func(i int) float64) Curve {
		return Curve{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: model},
			Points: gen(int(225*time.Minute/step), step, seed, 0.01, level)}
	}
	flat := func(i int) float64 { return 100 }
	bump := func(off time.Duration) func(i int) float64 {
		return func(i int) float64 {
			if k := i - at(off); k >= 0 && k < 8 {
				return 170
			}
			return 100
		}
	}
	stepUp := func(off time.Duration, to float64) func(i int) float64 {
		return func(i int) float64 {
			if i >= at(off) {
				return to
			}
			return 100
		}
	}
	for _, c := range []struct {
		name   string
		curves []Curve
		want   time.Time // zero: no onset found
		model  string
	}{
		{"short bump", []Curve{curve("rerank", 1, bump(2*time.Minute)), curve("chat", 2, flat)}, anchor.Add(2 * time.Minute), "rerank"},
		{"small clean step", []Curve{curve("rerank", 3, stepUp(time.Minute, 122)), curve("chat", 4, flat)}, anchor.Add(time.Minute), "rerank"},
		{"the lead near the anchor", []Curve{curve("rerank", 5, bump(-time.Minute)), curve("chat", 6, bump(40*time.Minute))}, anchor.Add(-time.Minute), "rerank"},
		{"a lasting spike decides", []Curve{curve("rerank", 7, bump(0)), curve("chat", 8, stepUp(30*time.Minute, 300))}, anchor.Add(30 * time.Minute), "chat"},
		{"calm noise", []Curve{curve("rerank", 9, flat), curve("chat", 10, flat)}, time.Time{}, ""},
	} {
		in := Input{Window: win, Curves: c.curves, Step: step, SLO: func(string) (float64, bool) { return 0, false }}
		spikes, onset, _, found := locate(newCurveSet(in.Curves), in)
		if c.want.IsZero() {
			if found {
				t.Errorf("%s: onset %s from %v, want none", c.name, onset, spikes)
			}
			continue
		}
		if !found || onset.Sub(c.want).Abs() > 2*step {
			t.Errorf("%s: onset %s (found %v), want %s", c.name, onset, found, c.want)
			continue
		}
		var model string
		for _, s := range spikes {
			if s.Onset.Equal(onset) {
				model = s.Scope.Model
			}
		}
		if model != c.model {
			t.Errorf("%s: onset set by %q, want %q", c.name, model, c.model)
		}
	}
}

// TestSamplesStepWithoutSlowSamplesJudgesNothing: "not concentrated" is a
// finding only when enough slow requests were sampled to find a row.
func TestSamplesStepWithoutSlowSamplesJudgesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		during, slow int
		want, not    string
	}{
		{0, 0, "No request was sampled during the spike", "was slow"},
		{300, 0, "No sampled request of the affected models was slow", "not concentrated"},
		{300, 1, "Only 1 slow request was sampled", "not concentrated"},
		{300, 4, "Only 4 slow requests were sampled", "not concentrated"},
		{300, 40, "Slow requests are not concentrated on any single dimension.", "too few"},
		// Nearly every request slow leaves no others to contrast them with
		// (release demo, seed 2: 94%): no row can be found, which is no
		// finding either.
		{300, 282, "94% of the requests sampled during the spike were slow", "not concentrated"},
	} {
		a := Analysis{Samples: SampleSummary{Total: 500, During: &c.during, Slow: c.slow, SlowRequests: float64(c.slow)}}
		got := samplesStep(a, &facts{affected: []string{"chat"}}, nil).Answer
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("%d slow samples: %q, want %q and not %q", c.slow, got, c.want, c.not)
		}
	}
}

// TestReconciliationSaysOnlyWhatWasMeasured: flat traffic, peers that held
// and a replica with its fair share give capacity nothing to reconcile
// with; no sentence claims a traffic rise or peers slowing.
func TestReconciliationSaysOnlyWhatWasMeasured(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 30, 30)
	x.replica("m", "hot", "n1", 100, 600, 10, 10)
	x.replica("m", "b", "n2", 100, 105, 10, 10)
	x.replica("m", "c", "n3", 100, 100, 10, 10)
	for _, r := range []string{"hot", "b", "c"} {
		slow := r == "hot"
		x.sampleRun(10, Scope{Model: "m", Replica: r, Node: map[string]string{"hot": "n1", "b": "n2", "c": "n3"}[r]}, 100, 100, func(s *Sample, during bool) {
			if during && slow && s.Time.Second()%2 == 0 {
				s.TotalMs = 900
			}
		})
	}
	f := x.facts()
	if got := f.reconcile(Cause{Category: CatCapacity, Target: Target{Model: "m"}}); got != "" {
		t.Errorf("capacity reconciliation with nothing measured for the pool: %q, want none", got)
	}
	// The peers slowing alone is reason enough, and said as such.
	y := newFixture()
	y.p99("m", 100, 300)
	y.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 30, 30)
	y.replica("m", "hot", "n1", 100, 600, 10, 10)
	y.replica("m", "b", "n2", 100, 250, 10, 10)
	y.replica("m", "c", "n3", 100, 250, 10, 10)
	for _, r := range []string{"hot", "b", "c"} {
		slow := r == "hot"
		y.sampleRun(10, Scope{Model: "m", Replica: r, Node: map[string]string{"hot": "n1", "b": "n2", "c": "n3"}[r]}, 100, 100, func(s *Sample, during bool) {
			if during && slow && s.Time.Second()%2 == 0 {
				s.TotalMs = 900
			}
		})
	}
	got := y.facts().reconcile(Cause{Category: CatCapacity, Target: Target{Model: "m"}})
	if !strings.Contains(got, "its peers' P99 rose ×2.5 too") || strings.Contains(got, "traffic rose") || strings.Contains(got, "saturates first") {
		t.Errorf("peers-only reconciliation %q", got)
	}
}
