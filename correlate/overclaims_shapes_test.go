package correlate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// Shapes of real fleets' data under which the analysis said more than the
// data shows.

// Only a P99 curve (no P50, no mean) and one timed stage: the lone stage's
// mean "explains 100% of the tail's growth" by construction, and a 10 ms
// rise of the downstream call led the ranking at 0.90 under a 300 ms P99
// rise. TestOverclaimOneTimedStageExplainsAll holds this only where a P50
// curve exists.
func TestOverclaimLoneStageWithOnlyP99(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 20).Stage = "downstream"
	a := x.analyze()
	for _, s := range a.Stages {
		if s.Stage == "downstream" && s.Share > 0.1 {
			t.Errorf("downstream grew %.0f ms of a 300 ms P99 rise, yet its share is %.2f", s.DeltaMs, s.Share)
		}
	}
	if a.Causes[0].Category == CatDownstream {
		dumpCause(t, a.Causes[0])
		t.Errorf("downstream ranked first (%.2f) on 10 ms of a 300 ms rise, the only stage timed", a.Causes[0].Score)
	}
	for _, e := range allEvidence(causeOf(t, a, CatDownstream)) {
		if strings.Contains(e.Summary, "100%") {
			t.Errorf("claim %q", e.Summary)
		}
	}
}

// The deploy event names the version as the CD system knows it (a commit,
// an image tag) while the metrics label another string: the event's
// version matches none the data measures. Release then compared a version
// with no requests, scored 0 and argued "slow requests concentrate on
// version 1.5.0 … more than on the new version" — 1.5.0 being the very
// version the rollout brought.
func TestDeployVersionNotInTheData(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 40, 40)
	for _, r := range []string{"r1", "r2"} {
		x.sampleRun(10, Scope{Model: "m", Version: "1.4.0", Replica: r, Node: "n-" + r}, 100, 100, nil)
	}
	for _, r := range []string{"r3", "r4"} {
		x.sampleRun(10, Scope{Model: "m", Version: "1.5.0", Replica: r, Node: "n-" + r}, math.NaN(), 600, nil)
	}
	kept := x.samples[:0] // the new pods serve from the onset on
	for _, s := range x.samples {
		if !math.IsNaN(s.TotalMs) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "sha-9f3c2e1"}, Summary: "argo sync m"}}
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	if e := evidenceNamed(c, "localised_elsewhere"); e != nil && strings.Contains(e.Summary, "version") {
		dumpCause(t, c)
		t.Errorf("release argued against with the new version itself: %q", e.Summary)
	}
	if c.Target.Version != "1.5.0" || c.Score < unexplainedBelow {
		dumpCause(t, c)
		t.Errorf("release of 1.5.0 (deployed 3m before, carrying every slow request): target %q, score %.2f", c.Target.Version, c.Score)
	}
}

// A new version whose predecessor's latency is not measured (the version
// label came with the new release, so the old series carry none): no
// comparison is made, yet the summary said its requests "are not measured
// slower than the previous version's" — read as a release cleared.
func TestReleaseNotComparedIsNotCleared(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 400)
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy v2"}}
	c := causeOf(t, x.analyze(), CatRelease)
	if names(c.Evidence)["new_version_slower"] || names(c.CounterEvidence)["new_version_not_slower"] {
		t.Fatal("premise: no earlier version is measured, yet a comparison was made")
	}
	if strings.Contains(c.Summary, "not measured slower") {
		dumpCause(t, c)
		t.Errorf("no version was compared with v2, yet: %q", c.Summary)
	}
}

// Batch sizes carried by the request samples only (no batch-size curve,
// batch wait untimed): batching is assessable on them, yet they were never
// read, and the summary said "No sign that m's batching changed" while
// every sampled batch went from 4 to 32 requests.
func TestBatchSizesFromSamples(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 50, 50)
	x.sampleRun(20, Scope{Model: "m", Version: "v1"}, 100, 400, func(s *Sample, during bool) {
		s.BatchSize = 4
		if during {
			s.BatchSize = 32
		}
		for k := range s.StagesMs {
			s.StagesMs[k] = math.NaN()
		}
		s.StagesMs[StageExec] = s.TotalMs
	})
	c := causeOf(t, x.analyze(), CatBatching)
	if strings.HasPrefix(c.Summary, "No sign") {
		dumpCause(t, c)
		t.Errorf("sampled batches grew ×8, yet: %q", c.Summary)
	}
}

// Replica latency curves for 3 of the model's 10 replicas (the other 7
// known by their request rates): the scope said "Narrow: 1 of 3 replicas
// of m carry the spike" — a pool of three, and a narrowness the 7
// unmeasured replicas leave open.
func TestNarrowCountsOnlyMeasuredReplicas(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 100, 100)
	for i := 0; i < 10; i++ {
		sc := Scope{Model: "m", Version: "v1", Replica: fmt.Sprintf("r%d", i), Node: fmt.Sprintf("n%d", i)}
		if i < 3 {
			during := 100.0
			if i == 0 {
				during = 900
			}
			x.curve(RoleLatencyP99, LevelReplica, sc, 100, during)
		}
		x.curve(RoleQPS, LevelReplica, sc, 10, 10)
	}
	s := x.analyze().Scope.Summary
	if strings.Contains(s, "1 of 3 replicas") && !strings.Contains(s, "7 more have") {
		t.Errorf("m has 10 replicas in the data, 3 with latency: %q", s)
	}
}

// Hourly data reaching back two days: the baseline hour holds one point,
// so the rise is not judged — but the reason said the data "starts at
// 06:00 UTC", 40 hours before the onset, and the action sends the reader
// to pull from earlier, which cannot help.
func TestNoBaselineAtCoarseStepNamesNoStart(t *testing.T) {
	mk := func(role Role, b, d float64) Curve {
		c := Curve{Role: role, Level: LevelModel, Scope: Scope{Model: "m"}}
		for i := 0; i < 48; i++ {
			v := b
			if i >= 40 {
				v = d
			}
			c.Points = append(c.Points, Point{T: fxStart.Add(time.Duration(i) * time.Hour).UnixMilli(), V: v * wobble(i)})
		}
		return c
	}
	a := Analyze(Input{Window: Window{From: fxStart.Add(36 * time.Hour), To: fxStart.Add(48 * time.Hour)}, Step: time.Hour,
		Curves: []Curve{mk(RoleLatencyP99, 100, 400), mk(RoleQPS, 10, 10)}})
	if strings.Contains(a.Scope.Summary, "it starts at") {
		t.Errorf("the data starts 40 h before the onset, yet: %q", a.Scope.Summary)
	}
}

// Samples kept one in 123 (a tail-sampling Collector's rate): the count
// of slow requests is an estimate from the few sampled, yet the samples
// step printed it as a count ("10,701 slow requests"), where the page's
// header says "≈10,701".
func TestEstimatedSlowRequestsAreSaidSo(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 500)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.sampleRun(3, Scope{Model: "m", Replica: "r1"}, 100, 500, func(s *Sample, _ bool) { s.SampleRate = 123 })
	a := x.analyze()
	ans := a.Checklist[2].Answer
	if a.Samples.Slow == 0 || a.Samples.SlowRequests <= float64(a.Samples.Slow) {
		t.Fatalf("premise: %d slow samples standing for %.0f requests", a.Samples.Slow, a.Samples.SlowRequests)
	}
	exact := fmtCount(a.Samples.SlowRequests)
	if !strings.HasPrefix(ans, "≈"+exact+" slow requests") || !strings.Contains(ans, fmt.Sprintf("estimated from their %s slow samples", fmtCount(float64(a.Samples.Slow)))) {
		t.Errorf("%d slow samples at 1 in 123 stand for about %s requests, yet: %q", a.Samples.Slow, exact, ans)
	}
}

// Samples with no baseline of their own (the sampler turned on at the
// onset, or a feed that kept only three slow requests) under a P99 curve
// that shows the baseline: slowness was judged against the samples' own
// P90, so the three requests at 4× the baseline read "No sampled request
// of the affected models was slow", and a spike sampled throughout
// counted a tenth of its requests slow by construction.
func TestSlowWithoutSampleBaseline(t *testing.T) {
	three := newFixture()
	three.p99("m", 100, 400)
	three.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	for i := 0; i < 3; i++ {
		three.samples = append(three.samples, Sample{RequestID: fmt.Sprint(i), Time: three.onset.Add(time.Duration(5+i) * time.Minute),
			Model: "m", Replica: "r1", Status: "ok", TotalMs: 400 + float64(i), SampleRate: 1})
	}
	a := three.analyze()
	if a.Samples.Slow != 3 {
		t.Errorf("3 sampled requests at 4× the P99 curve's baseline, %d counted slow", a.Samples.Slow)
	}
	for _, st := range a.Checklist {
		if strings.Contains(st.Answer, "No sampled request") {
			t.Errorf("%s: %q", st.Step, st.Answer)
		}
	}

	during := newFixture()
	during.p99("m", 100, 400)
	during.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	during.sampleRun(20, Scope{Model: "m", Replica: "r1"}, 100, 400, nil)
	kept := during.samples[:0]
	for _, s := range during.samples {
		if !s.Time.Before(during.onset) {
			kept = append(kept, s)
		}
	}
	during.samples = kept
	a = during.analyze()
	if a.Samples.During == nil || a.Samples.Slow != *a.Samples.During {
		t.Errorf("every sampled request of the spike is 4× the baseline, %d of %d counted slow", a.Samples.Slow, *a.Samples.During)
	}
}

// The latency curve has a hole across the spike (a scrape outage, a pull
// that failed): the analysis found no rise and said "No model's latency
// rose clearly in this window", which the data cannot show.
func TestNoRiseOverAHoleInTheCurve(t *testing.T) {
	x := newFixture()
	c := x.p99c("m", 100, 100)
	from, to := x.onset.Add(-2*time.Minute).UnixMilli(), x.onset.Add(12*time.Minute).UnixMilli()
	kept := c.Points[:0]
	for _, p := range c.Points {
		if p.T < from || p.T >= to {
			kept = append(kept, p)
		}
	}
	c.Points = kept
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	a := x.analyze()
	for _, s := range []string{a.Headline.Summary, a.Scope.Summary, a.Causes[0].Summary} {
		if strings.Contains(s, "rose clearly in this window") || strings.Contains(s, "clearly rose in this window") {
			t.Errorf("%q over a 14-minute hole in m's P99 curve", s)
		}
	}
	if !strings.Contains(a.Headline.Summary, "no points from 07:07 to 07:22 UTC") {
		t.Errorf("headline %q does not name the hole", a.Headline.Summary)
	}
}

// The latency curve has a hole ending where the rise is first seen (a
// scrape outage across the spike's start): the timeline read "Latency
// rose at 07:10:00 UTC. Deploy of m … at 07:02:00, 8m before the onset",
// timing the rise to the first point after the hole and a deploy inside
// the hole against it. The rise came somewhere in the hole.
func TestOnsetAfterAGapInTheCurve(t *testing.T) {
	x := newFixture()
	c := x.p99c("m", 100, 400)
	from := x.onset.Add(-12 * time.Minute).UnixMilli()
	kept := c.Points[:0]
	for _, p := range c.Points {
		if p.T < from || p.T >= x.onset.UnixMilli() {
			kept = append(kept, p)
		}
	}
	c.Points = kept
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.events = []Event{
		{ID: "inside", Kind: KindDeploy, Time: x.onset.Add(-8 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy m v2"},
		{ID: "earlier", Kind: KindRouteChange, Time: x.onset.Add(-15 * time.Minute), Scope: Scope{Model: "m"}, Summary: "weights"},
	}
	a := x.analyze()
	if a.Onset == nil || !a.Onset.Equal(x.onset) {
		t.Fatalf("onset %v, want the first point after the hole (%v)", a.Onset, x.onset)
	}
	if a.OnsetGapFrom == nil || !a.OnsetGapFrom.Equal(x.onset.Add(-13*time.Minute)) {
		t.Errorf("onset_gap_from %v, want the last point before the hole (06:57)", a.OnsetGapFrom)
	}
	var said []string
	for _, st := range a.Checklist {
		said = append(said, st.Answer)
	}
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			said = append(said, e.Summary)
		}
		said = append(said, c.Summary)
	}
	for _, s := range said {
		if strings.Contains(s, "Latency rose at") || strings.Contains(s, "8m before the onset") || strings.Contains(s, "15m before the onset") {
			t.Errorf("%q: the rise came somewhere between 06:57 and 07:10, which the data cannot time", s)
		}
	}
	if tl := a.Checklist[1].Answer; !strings.Contains(tl, "Latency rose between 06:57:00 and 07:10:00 UTC") ||
		!strings.Contains(tl, "Route change (weights) between 2m and 15m before the rise") {
		t.Errorf("timeline %q does not time the rise and the route change by the hole", tl)
	}
	if e := evidenceNamed(causeOf(t, a, CatRelease), "deploy_before_onset"); e == nil || !strings.Contains(e.Summary, "during the gap before the rise was seen") {
		t.Errorf("the deploy inside the hole: %+v", e)
	}
}

// Stage times (batch wait, downstream call, gateway) sampled only from
// the onset on: the batching summary read "No sign that m's batching
// changed (the batch wait is not measured)", the downstream one "no
// downstream call time is measured during the spike", while the coverage
// listed both as present. What is missing is a measurement before the
// onset to compare with.
func TestStageTimedOnlyDuringTheSpike(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.sampleRun(20, Scope{Model: "m", Replica: "r1"}, 100, 400, func(s *Sample, _ bool) { s.BatchSize = 4 })
	kept := x.samples[:0]
	for _, s := range x.samples {
		if !s.Time.Before(x.onset) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	a := x.analyze()
	for _, cat := range []Category{CatBatching, CatDownstream, CatIngress} {
		s := causeOf(t, a, cat).Summary
		if strings.Contains(s, "not measured") || strings.Contains(s, "no downstream call time is measured") || strings.Contains(s, "route time is measured during") {
			t.Errorf("%s: %q, with the stage timed in every sample of the spike", cat, s)
		}
		if !strings.Contains(s, "no measurement before the onset to compare it with") {
			t.Errorf("%s: %q does not say what is missing", cat, s)
		}
	}
}

// A release over data with no stage times at all (latency curves and
// samples that carry only totals): the second action read "Compare the
// new version's stage times (exec, postprocess) with the previous one
// before resuming", times the data does not have.
func TestReleaseActionWithoutStageTimes(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 40, 40)
	untimed := func(s *Sample, _ bool) {
		for k := range s.StagesMs {
			s.StagesMs[k] = math.NaN()
		}
	}
	x.sampleRun(10, Scope{Model: "m", Version: "1.4.0", Replica: "r1"}, 100, math.NaN(), untimed)
	x.sampleRun(10, Scope{Model: "m", Version: "1.5.0", Replica: "r2"}, math.NaN(), 400, untimed)
	kept := x.samples[:0]
	for _, s := range x.samples {
		if !math.IsNaN(s.TotalMs) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-2 * time.Minute), Scope: Scope{Model: "m", Version: "1.5.0"}}}
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	for _, act := range c.Actions {
		if strings.Contains(act, "version's stage times") {
			t.Errorf("action %q with no stage time in the data", act)
		}
	}
	if len(c.Actions) != 2 || !strings.Contains(c.Actions[1], "latency") {
		t.Errorf("actions %q: want the versions' latency compared", c.Actions)
	}

	// With exec timed (and postprocess not), only exec is named.
	x = newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 40, 40)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 50, 200).Stage = "exec"
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-2 * time.Minute), Scope: Scope{Model: "m", Version: "1.5.0"}}}
	if acts := causeOf(t, x.analyze(), CatRelease).Actions; len(acts) != 2 || !strings.Contains(acts[1], "stage times (exec)") {
		t.Errorf("actions %q: want the exec stage times compared, and no other", acts)
	}
}

// One slow replica of three: the scope read "Narrow: 1 of 3 replicas of m
// carry the spike".
func TestNarrowOneReplicaCarries(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 30, 30)
	x.replica("m", "r1", "n1", 100, 900, 10, 10)
	x.replica("m", "r2", "n2", 100, 100, 10, 10)
	x.replica("m", "r3", "n3", 100, 100, 10, 10)
	s := x.analyze().Scope.Summary
	if !strings.HasPrefix(s, "Narrow: 1 of 3 replicas of m carries the spike: r1") {
		t.Errorf("scope %q", s)
	}
	x.curve(RoleQPS, LevelReplica, Scope{Model: "m", Version: "v1", Replica: "r4", Node: "n4"}, 10, 10)
	if s := x.analyze().Scope.Summary; !strings.Contains(s, "1 of 3 replicas of m carries the spike: r1") {
		t.Errorf("scope %q", s)
	}
}

// Samples from the onset on only, and no P99 curve (a P95 curve judged
// the rise): the slow threshold falls back to the spike's own P90, so the
// samples step read "58 slow requests in the affected models during the
// spike" — a tenth of the 580 sampled, whatever happened. With samples
// alone (no curve) nothing is judged affected and no count is said.
func TestSlowCountWithoutBaselineIsNotStated(t *testing.T) {
	spread := func(s *Sample, _ bool) { // ×0.5 to ×1.5, by a hash of the ID
		h := uint32(2166136261)
		for _, c := range []byte(s.RequestID) {
			h = (h ^ uint32(c)) * 16777619
		}
		s.TotalMs *= 0.5 + float64(h%100)/100
	}
	for _, p95 := range []bool{false, true} {
		x := newFixture()
		if p95 {
			x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
		}
		x.sampleRun(10, Scope{Model: "m", Replica: "r1"}, 100, 400, spread)
		x.sampleRun(10, Scope{Model: "m", Replica: "r2"}, 100, 400, spread)
		kept := x.samples[:0]
		for _, s := range x.samples {
			if !s.Time.Before(x.onset) {
				kept = append(kept, s)
			}
		}
		x.samples = kept
		a := x.analyze()
		for _, st := range a.Checklist {
			if strings.Contains(st.Answer, "slow requests in the affected models") {
				t.Errorf("P95 curve %v: %s: %q, the slowest tenth of the spike by construction", p95, st.Step, st.Answer)
			}
		}
		if p95 && !strings.Contains(a.Checklist[2].Answer, "slowest tenth") {
			t.Errorf("samples step %q does not say what stands for slow", a.Checklist[2].Answer)
		}
	}

	// Beside a model with a baseline, the count stands, and says which
	// model's part of it is its own slowest tenth.
	x := newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "k"}, 100, 400)
	x.sampleRun(10, Scope{Model: "m", Replica: "r1"}, 100, 400, spread)
	x.sampleRun(10, Scope{Model: "k", Replica: "k1"}, 100, 400, spread)
	kept := x.samples[:0]
	for _, s := range x.samples {
		if s.Model == "k" || !s.Time.Before(x.onset) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	if ans := x.analyze().Checklist[2].Answer; !strings.Contains(ans, "For m, with no baseline before the onset, the slowest tenth") {
		t.Errorf("samples step %q does not say m's slow requests are its own slowest tenth", ans)
	}
}

// The structured counts say what "slow" was judged against: a model with
// no baseline has its spike's own slowest tenth counted, and the impact,
// the samples summary (and from them the page header, the export and the
// API) gave that number as the incident's slow requests.
func TestSlowBasisIsStated(t *testing.T) {
	onlyDuring := func(x *fixture, models ...string) {
		kept := x.samples[:0]
		for _, s := range x.samples {
			if !slices.Contains(models, s.Model) || !s.Time.Before(x.onset) {
				kept = append(kept, s)
			}
		}
		x.samples = kept
	}
	basisOf := func(a Analysis) map[string]string {
		out := map[string]string{}
		for _, im := range a.Impact {
			out[im.Model] = im.SlowBasis
		}
		return out
	}
	// No baseline: the spike's tail.
	x := newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	x.sampleRun(10, Scope{Model: "m", Replica: "r1"}, 100, 400, nil)
	onlyDuring(x, "m")
	a := x.analyze()
	if a.Samples.SlowRequests == 0 || a.Samples.SlowBasis != SlowBasisSpikeTail || basisOf(a)["m"] != SlowBasisSpikeTail {
		t.Errorf("no baseline: samples %d slow (basis %q), impact bases %v; want %q", a.Samples.Slow, a.Samples.SlowBasis, basisOf(a), SlowBasisSpikeTail)
	}
	// Beside a model with a baseline: mixed, said per model.
	x = newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "k"}, 100, 400)
	x.sampleRun(10, Scope{Model: "m", Replica: "r1"}, 100, 400, nil)
	x.sampleRun(10, Scope{Model: "k", Replica: "k1"}, 100, 400, nil)
	onlyDuring(x, "m")
	a = x.analyze()
	if b := basisOf(a); a.Samples.SlowBasis != SlowBasisMixed || b["m"] != SlowBasisSpikeTail || b["k"] != SlowBasisBaseline {
		t.Errorf("one model without a baseline: samples basis %q, impact bases %v", a.Samples.SlowBasis, b)
	}
	// Samples before the onset: a baseline.
	x = newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	x.sampleRun(10, Scope{Model: "m", Replica: "r1"}, 100, 400, nil)
	a = x.analyze()
	if a.Samples.SlowBasis != SlowBasisBaseline || basisOf(a)["m"] != SlowBasisBaseline {
		t.Errorf("with a baseline: samples basis %q, impact bases %v", a.Samples.SlowBasis, basisOf(a))
	}
}
