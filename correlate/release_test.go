package correlate

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// A deploy ten minutes before a spike that also hits another model: the
// new version either served those minutes at its predecessor's latency
// and slowed down with everything at the onset (the deploy is a red
// herring), or was slow from the start. Once the rollout is complete only
// the new version's own minutes before the onset tell the two apart, and
// slow requests "concentrated on the new version" are only the model's
// (version ≡ model); a canary's are the version's own.
func TestReleaseJudgesTheNewVersionsMinutesBeforeTheOnset(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v2Before     float64 // v2's latency between its deploy and the onset
		canary       bool    // v2 serves every other request, and v1 stays fast
		wantFine     bool
		wantConc     bool // slow_requests_on_new_version listed
		wantSummary  string
		avoidSummary string
	}{
		{"served fine, then slowed with the spike", 100, false, true, false, "slowed down with the spike, not with its deploy", "slower than the version it replaces"},
		{"slow from its deploy", 300, false, false, false, "slower than the version it replaces", "not with its deploy"},
		{"a slow canary", 300, true, false, true, "slower than the version it replaces", "not with its deploy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture()
			deploy := x.onset.Add(-10 * time.Minute)
			x.p99("m", 100, 400)
			x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 20, 20)
			x.p99("o", 100, 300)
			k := 0 // o's tail rises: a quarter of its requests turn slow
			x.sampleRun(4, Scope{Model: "o", Version: "v9"}, 100, 100, func(s *Sample, during bool) {
				if k++; during && k%4 == 0 {
					s.TotalMs *= 3
				}
			})
			n := 0
			x.sampleRun(20, Scope{Model: "m", Version: "v1"}, 100, 400, func(s *Sample, during bool) {
				n++
				if s.Time.Before(deploy) || tc.canary && n%2 == 0 {
					if tc.canary && during {
						s.TotalMs /= 4 // v1 stays fast beside a slow canary
					}
					return
				}
				s.Version = "v2"
				if !during {
					s.TotalMs *= tc.v2Before / 100
				}
			})
			x.events = []Event{{ID: "cd-1", Kind: KindDeploy, Time: deploy, Scope: Scope{Model: "m", Version: "v2"}}}
			rel := causeOf(t, x.analyze(), CatRelease)
			fine := false
			for _, e := range rel.CounterEvidence {
				if e.Name == "new_version_fine_before_onset" {
					fine = true
					if !strings.Contains(e.Summary, "v2 served") || !strings.Contains(e.Summary, "like v1's") {
						t.Errorf("counter-evidence %q", e.Summary)
					}
				}
			}
			if conc := names(rel.Evidence)["slow_requests_on_new_version"]; conc != tc.wantConc {
				t.Errorf("slow_requests_on_new_version listed: %v, want %v (evidence: %+v)", conc, tc.wantConc, rel.Evidence)
			}
			if fine != tc.wantFine {
				t.Errorf("new_version_fine_before_onset listed: %v, want %v (counter: %+v)", fine, tc.wantFine, rel.CounterEvidence)
			}
			if !strings.Contains(rel.Summary, tc.wantSummary) || strings.Contains(rel.Summary, tc.avoidSummary) {
				t.Errorf("summary %q, want it to say %q and not %q", rel.Summary, tc.wantSummary, tc.avoidSummary)
			}
			if tc.wantFine && rel.Score > 0.3 {
				t.Errorf("release scored %.2f with its new version fine before the onset", rel.Score)
			}
		})
	}
}

// When no model's release explains the spike (all score 0), the release
// cause speaks of the model that was deployed, not of the first model
// with nothing to weigh: the on-call sees that deploy on the timeline.
func TestReleaseAtZeroSpeaksOfTheDeployedModel(t *testing.T) {
	x := newFixture()
	x.p99("a", 100, 400)
	x.p99("b", 100, 400)
	x.stagedRun(10, Scope{Model: "a", Version: "v1"}, 400, StageDownstream)
	x.stagedRun(10, Scope{Model: "b", Version: "v7"}, 400, StageDownstream)
	x.events = append(x.events, Event{ID: "d1", Kind: KindDeploy, Time: x.onset.Add(-8 * time.Minute),
		Scope: Scope{Model: "b", Version: "v7"}, Summary: "rollout b v6 -> v7"})
	c := causeOf(t, x.analyze(), CatRelease)
	if c.Target.Model != "b" || !names(c.Evidence)["deploy_before_onset"] {
		t.Errorf("release (score %.2f) speaks of %q: %q; want model b and its deploy", c.Score, c.Target.Model, c.Summary)
	}
}

// Two models slow down, each after its own deploy: neither release may
// claim that its model was the only one to slow down.
func TestReleaseTrainIsNotOnlyThisModel(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b"} {
		x.p99(m, 100, 400)
		x.sampleRun(10, Scope{Model: m, Version: "v2"}, 100, 400, nil)
		x.events = append(x.events, Event{ID: "d-" + m, Kind: KindDeploy, Time: x.onset.Add(-5 * time.Minute),
			Scope: Scope{Model: m, Version: "v2"}, Summary: "rollout " + m + " v2"})
	}
	x.p99("c", 100, 100)
	rel := causeOf(t, x.analyze(), CatRelease)
	for _, e := range rel.Evidence {
		if e.Name == "only_this_model" || strings.Contains(e.Summary, "Only ") {
			t.Errorf("evidence %q: another model slowed down too", e.Summary)
		}
	}
	if !names(rel.Evidence)["other_slowed_models_released"] {
		t.Errorf("evidence %+v, want other_slowed_models_released", rel.Evidence)
	}
}

// A release of a during a traffic surge on b: b's slowdown is its surge's,
// and says nothing against a's release (it was counted as "another model
// without a release slowed down", and capacity ranked first); a model that
// slowed down with neither is still counted against it.
func TestReleaseIsNotOpposedByAnotherModelsSurge(t *testing.T) {
	build := func(bQPSDuring float64) Analysis {
		x := newFixture()
		x.p99("a", 100, 210)
		x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "a", Version: "v1"}, 100, 100)
		x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "a", Version: "v2"}, math.NaN(), 220)
		x.curve(RoleQPS, LevelVersion, Scope{Model: "a", Version: "v1"}, 20, 2)
		x.curve(RoleQPS, LevelVersion, Scope{Model: "a", Version: "v2"}, math.NaN(), 18)
		x.curve(RoleQPS, LevelModel, Scope{Model: "a"}, 20, 20)
		x.events = []Event{{ID: "d-a", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "a", Version: "v2"}, Summary: "rollout a v2"}}
		x.p99("b", 100, 170)
		x.curve(RoleQPS, LevelModel, Scope{Model: "b"}, 20, bQPSDuring)
		x.p99("c", 100, 100)
		x.curve(RoleQPS, LevelModel, Scope{Model: "c"}, 20, 20)
		return x.analyze()
	}
	a := build(40)
	rel := causeOf(t, a, CatRelease)
	if e := evidenceNamed(rel, "other_models_slowed"); e != nil {
		t.Errorf("other_models_slowed %q: b slowed down with its own surge", e.Summary)
	}
	if e := evidenceNamed(rel, "other_slowed_models_explained"); e == nil || e.Summary != "The other model that slowed down had a traffic surge of its own." {
		t.Errorf("other_slowed_models_explained %+v", e)
	}
	if a.Causes[0].Category != CatRelease {
		t.Errorf("ranked %s (%.2f) first, release %.2f", a.Causes[0].Category, a.Causes[0].Score, rel.Score)
	}
	flat := causeOf(t, build(20), CatRelease)
	if e := evidenceNamed(flat, "other_models_slowed"); e == nil {
		t.Errorf("b slowed down at flat traffic, yet release has no other_models_slowed: %+v", flat.CounterEvidence)
	}
}

// Two versions serving side by side trade a few points of share: without a
// deploy event, a version that went from 50% to 55% of the traffic is not
// a rollout, and the release cause says no new version was found.
func TestReleaseIgnoresATinyShareGain(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	k := 0
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, during bool) {
		k++
		// 50/50 before the onset, 55/45 during.
		if (!during && k%2 == 0) || (during && k%20 < 11) {
			s.Version = "v2"
		}
	})
	rel := causeOf(t, x.analyze(), CatRelease)
	if !names(rel.CounterEvidence)["no_new_version"] {
		t.Errorf("release %q (score %.2f): a 5-point share gain was taken for a new version; counter %+v", rel.Summary, rel.Score, rel.CounterEvidence)
	}
}

// A version's P99 from two samples is one request's latency: the release
// is not called slower than a version it barely saw.
func TestReleaseDoesNotCompareAVersionOfTwoSamples(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 300)
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy"}}
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r1"}, 100, 300, func(s *Sample, during bool) {
		if during {
			s.Version = "v2"
		}
	})
	// v1 keeps two requests during the spike.
	for i := range 2 {
		x.samples = append(x.samples, Sample{RequestID: fmt.Sprintf("old-%d", i), Time: x.onset.Add(time.Duration(i+1) * time.Minute),
			Model: "m", Version: "v1", Replica: "r1", Status: "ok", TotalMs: 100, SampleRate: 1})
	}
	c := causeOf(t, x.analyze(), CatRelease)
	if e := evidenceNamed(c, "new_version_slower"); e != nil && strings.Contains(e.Summary, "in the same window") {
		t.Errorf("new_version_slower %q compares with v1's two samples", e.Summary)
	}
}

// Version latency curves without version request rates say nothing of
// which version took the traffic: no "no new version taking traffic", and
// a version whose curve starts at the onset is a new one.
func TestVersionTrafficUnknownIsNotNoNewVersion(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 250)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v1"}, 100, 100)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 400)
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	if e := evidenceNamed(c, "no_new_version"); e != nil {
		t.Errorf("no_new_version %q: version traffic is not measured and v2 appeared at the onset", e.Summary)
	}
	if strings.Contains(c.Summary, "No recent release") {
		t.Errorf("summary %q: v2 appeared at the onset", c.Summary)
	}
	if c.Target.Version != "v2" {
		t.Errorf("target %+v, want version v2", c.Target)
	}
}

// Sparse samples (a few per version) give no version P99; the version
// curves then judge the release rather than nothing.
func TestSparseSamplesFallBackToVersionCurves(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 300)
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy"}}
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v1"}, 100, 100)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 400)
	x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v1"}, 10, 5)
	x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 5)
	for i := range 3 {
		for _, v := range []string{"v1", "v2"} {
			x.samples = append(x.samples, Sample{RequestID: fmt.Sprintf("%s-%d", v, i), Time: x.onset.Add(time.Duration(i+1) * time.Minute),
				Model: "m", Version: v, Replica: "r1", Status: "ok", TotalMs: 100, SampleRate: 100})
		}
	}
	c := causeOf(t, x.analyze(), CatRelease)
	if e := evidenceNamed(c, "new_version_slower"); e == nil || e.Strength < 0.5 {
		t.Errorf("new_version_slower %+v: the version curves show v2 at ×4 v1", e)
	}
}

// A slower version backs up its model's queue with traffic flat: the
// release's evidence says the queue follows it, so the stage table (queueing
// most of the growth) does not read as a capacity shortage beside it. A
// queue that grew with a surge gets no such sentence.
func TestReleaseExplainsTheQueueItBacksUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qpsDuring float64
		want      bool
	}{{"traffic flat", 20, true}, {"traffic doubled", 40, false}} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture()
			deploy := x.onset.Add(-2 * time.Minute)
			x.p99("m", 100, 400)
			x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 20, tc.qpsDuring)
			x.sampleRun(20, Scope{Model: "m", Version: "v1"}, 100, 100, func(s *Sample, during bool) {
				if !during {
					return
				}
				s.Version = "v2"
				s.TotalMs = 400 * wobble(int(s.Time.Unix()))
				for st := range s.StagesMs {
					s.StagesMs[st] = 100.0 / float64(NumStages)
				}
				s.StagesMs[StageExec] += 120 // the new version computes longer …
				s.StagesMs[StageQueue] += s.TotalMs - 100 - 120
			})
			x.events = []Event{{ID: "cd-1", Kind: KindDeploy, Time: deploy, Scope: Scope{Model: "m", Version: "v2"}}}
			rel := causeOf(t, x.analyze(), CatRelease)
			if got := strings.Contains(strings.Join(saidBy(rel), "\n"), "the queue follows the release"); got != tc.want {
				dumpCause(t, rel)
				t.Errorf("queue evidence %v, want %v", got, tc.want)
			}
		})
	}
}
