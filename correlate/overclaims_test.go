package correlate

// Sentences the analysis must not write: each test feeds data that lacks
// what a claim needs (or contradicts it) and checks the claim is not made.

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// saidBy is every sentence a cause says: its summary, then its evidence's
// and counter-evidence's.
func saidBy(c Cause) []string {
	out := []string{c.Summary}
	for _, e := range allEvidence(c) {
		out = append(out, e.Summary)
	}
	return out
}

// dumpCause logs a cause with its evidence, to read a failure by.
func dumpCause(t *testing.T, c Cause) {
	t.Helper()
	t.Logf("%s %.2f summary=%q", c.Category, c.Score, c.Summary)
	for _, e := range c.Evidence {
		t.Logf("  + %s %.2f %q", e.Name, e.Strength, e.Summary)
	}
	for _, e := range c.CounterEvidence {
		t.Logf("  - %s %.2f %q", e.Name, e.Strength, e.Summary)
	}
}

// A deploy event that names no version must not be answered with "No
// deploy of m …" next to the deploy just listed.
func TestOverclaimDeployWithoutVersionDenied(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, nil)
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m"}, Summary: "helm upgrade m"}}
	c := causeOf(t, x.analyze(), CatRelease)
	dumpCause(t, c)
	if names(c.Evidence)["deploy_before_onset"] && (names(c.CounterEvidence)["no_new_version"] || strings.Contains(c.Summary, "No recent release")) {
		t.Errorf("deploy listed as evidence, yet counter %+v / summary %q deny any deploy", c.CounterEvidence, c.Summary)
	}
}

// Ingress must not say "for every model" when 10 of 11 slowed.
func TestOverclaimIngressEveryModel(t *testing.T) {
	x := newFixture()
	for i := 0; i < 11; i++ {
		m := fmt.Sprintf("m%02d", i)
		if i == 10 {
			x.p99(m, 100, 100)
			x.curve(RoleStageTime, LevelModel, Scope{Model: m}, 10, 10).Stage = "gateway"
			continue
		}
		x.p99(m, 100, 400)
		x.curve(RoleStageTime, LevelModel, Scope{Model: m}, 10, 300).Stage = "gateway"
		x.curve(RoleStageTime, LevelModel, Scope{Model: m}, 50, 50).Stage = "exec"
	}
	a := x.analyze()
	t.Log(a.Scope.Summary)
	c := causeOf(t, a, CatIngress)
	dumpCause(t, c)
	if strings.Contains(c.Summary, "every model") && len(a.Scope.Models) < 11 {
		t.Errorf("summary %q but only %d of 11 models slowed", c.Summary, len(a.Scope.Models))
	}
}

// Replica curves show one replica at 18× its peers, and no samples:
// downstream must not say "No single replica or node explains …".
func TestOverclaimNotLocalIgnoresReplicaCurves(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 300).Stage = "downstream"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 50, 50).Stage = "exec"
	x.replica("m", "sick", "n-sick", 100, 2000, 10, 10)
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		x.replica("m", r, "n-"+r, 100, 110, 10, 10)
	}
	a := x.analyze()
	loc := causeOf(t, a, CatLocalReplica)
	dumpCause(t, loc)
	c := causeOf(t, a, CatDownstream)
	dumpCause(t, c)
	if names(loc.Evidence)["replica_outlier"] && names(c.Evidence)["not_local"] {
		t.Errorf("downstream says %q while replica sick stands out (%q)", "No single replica or node explains the slow requests.", loc.Evidence[0].Summary)
	}
}

// Samples name replicas, but only 4 are slow (all on r1): capacity must
// not say "No replica or node stands out among the slow requests".
func TestOverclaimSpreadOverPoolFromTooFewSlow(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 25)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 300).Stage = "queue"
	// one sample a minute, replica r1; during the spike 4 slow ones, all on r1
	n := 0
	x.sampleRun(1, Scope{Model: "m", Version: "v1", Replica: "r0"}, 100, 100, func(s *Sample, d bool) {
		if d && n < 4 {
			s.TotalMs, s.Replica = 900, "r1"
			n++
		}
	})
	a := x.analyze()
	t.Logf("slow samples: %d; samples step: %q", a.Samples.Slow, a.Checklist[2].Answer)
	c := causeOf(t, a, CatCapacity)
	dumpCause(t, c)
	for _, e := range c.Evidence {
		if e.Name == "spread_over_pool" && a.Samples.Slow < minSlowToJudge {
			t.Errorf("%q from %d slow samples (all on r1); the samples step says too few to tell", e.Summary, a.Samples.Slow)
		}
	}
}

// Two slow samples, both from one tenant: after "too few to tell" the
// samples step must not quote the tenant's share of them.
func TestOverclaimTenantSentenceFromTwoSlow(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	n := 0
	x.sampleRun(2, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 100, func(s *Sample, d bool) {
		s.Tenant = []string{"acme", "beta"}[len(s.RequestID)%2]
		if d && n < 2 {
			s.TotalMs, s.Tenant = 900, "acme"
			n++
		}
	})
	a := x.analyze()
	ans := a.Checklist[2].Answer
	t.Logf("slow=%d samples step: %q", a.Samples.Slow, ans)
	if a.Samples.Slow < minSlowToJudge && strings.Contains(ans, "Tenant acme sends") {
		t.Errorf("samples step quotes a tenant share of %d slow samples: %q", a.Samples.Slow, ans)
	}
}

// A model served by one replica: routing must not speak of its traffic's
// spread over replicas — there is nothing to compare.
func TestOverclaimRoutingOneReplica(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "only", Node: "n1"}, 100, 400, nil)
	c := causeOf(t, x.analyze(), CatRouting)
	dumpCause(t, c)
	bad := strings.Contains(c.Summary, "spread over its replicas")
	for _, e := range c.CounterEvidence {
		bad = bad || strings.Contains(e.Summary, "balanced across")
	}
	if bad {
		t.Errorf("routing speaks of a spread over replicas of a single-replica model: %q", c.Summary)
	}
}

// A scale-up 3 min before the onset, no replica curves or start events:
// cold start must not deny new replicas it cannot see.
func TestOverclaimColdStartDeniesReplicasItCannotSee(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.events = []Event{{ID: "su", Kind: KindScaleUp, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m"}, Summary: "4 -> 8 replicas"}}
	c := causeOf(t, x.analyze(), CatColdStart)
	dumpCause(t, c)
	if names(c.Evidence)["scale_up"] && strings.Contains(c.Summary, "No new replicas") {
		t.Errorf("summary %q although the scale-up (4 -> 8) is listed and no replica start data exists", c.Summary)
	}
}

// Two replicas on two nodes stand out, traffic ×1.5: the reconciliation
// must name both, not "only replica s1".
func TestOverclaimReconcileOnlyOneReplica(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 100, 150)
	x.replica("m", "s1", "n-s1", 100, 1500, 10, 15)
	x.replica("m", "s2", "n-s2", 100, 1400, 10, 15)
	for _, r := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		x.replica("m", r, "n-"+r, 100, 105, 10, 15)
	}
	a := x.analyze()
	t.Logf("scope: %q replicas %v", a.Scope.Summary, a.Scope.Replicas)
	t.Logf("reconciliation: %q", a.Reconciliation)
	dumpCause(t, a.Causes[0])
	if len(a.Scope.Replicas) > 1 && (strings.Contains(a.Reconciliation, "only replica") || !strings.Contains(a.Reconciliation, "s2")) {
		t.Errorf("%q but %d replicas stand out: %v", a.Reconciliation, len(a.Scope.Replicas), a.Scope.Replicas)
	}
}

// Two replicas, one slowed ×4, the other not: the scope must not say the
// model slowed "across its replicas".
func TestOverclaimScopeAcrossReplicas(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 250)
	x.replica("m", "sick", "n1", 100, 400, 10, 10)
	x.replica("m", "fine", "n2", 100, 100, 10, 10)
	a := x.analyze()
	t.Logf("scope: %q replicas %v", a.Scope.Summary, a.Scope.Replicas)
	if strings.Contains(a.Scope.Summary, "across its replicas") && len(a.Scope.Replicas) > 0 {
		t.Errorf("%q but only %v stands out", a.Scope.Summary, a.Scope.Replicas)
	}
}

// Three affected models, one with downstream data: not "1 of 1 affected
// models".
func TestOverclaimDownstreamAffectedCount(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b", "c"} {
		x.p99(m, 100, 400)
	}
	x.curve(RoleStageTime, LevelModel, Scope{Model: "a"}, 10, 300).Stage = "downstream"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "a"}, 50, 50).Stage = "exec"
	a := x.analyze()
	c := causeOf(t, a, CatDownstream)
	dumpCause(t, c)
	for _, e := range c.Evidence {
		if e.Name == "affected_models_call_it" && strings.HasPrefix(e.Summary, "1 of 1 affected") {
			t.Errorf("%q with %d affected models", e.Summary, len(a.Scope.Models))
		}
	}
}

// Singular counts in the headline.
func TestOverclaimPlurals(t *testing.T) {
	x := newFixture()
	x.p99("a", 100, 400)
	x.p99("b", 100, 300)
	a := x.analyze()
	t.Log(a.Headline.Summary)
	if strings.Contains(a.Headline.Summary, "(1 more models slowed)") {
		t.Errorf("headline %q", a.Headline.Summary)
	}
}

// Traffic ×2.5, GPU curves at 30 % and queue time flat: capacity must not
// say "no queue or GPU data shows whether the pool saturated".
func TestOverclaimCapacityNoQueueOrGPUData(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 25)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 20, 20).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 50, 330).Stage = "exec"
	for _, r := range []string{"a", "b", "c"} {
		x.replica("m", r, "n-"+r, 100, 400, 3, 8)
		x.curve(RoleGPUUtil, LevelReplica, Scope{Model: "m", Version: "v1", Replica: r, Node: "n-" + r}, 30, 30)
	}
	a := x.analyze()
	c := causeOf(t, a, CatCapacity)
	dumpCause(t, c)
	t.Logf("stages %+v", a.Stages)
	if strings.Contains(c.Summary, "no queue or GPU data") {
		t.Errorf("summary %q although queue time (flat) and GPU utilisation (30%%) are in the data", c.Summary)
	}
}

// A count of one reads as one: "1 of the 1 replicas … are", "the other 1
// models", "(1 models)" were printed.
func TestCountsOfOneReadAsOne(t *testing.T) {
	bad := []string{" 1 models", "(1 models)", "1 of the 1 ", "1 of 1 ", "model(s)", "replica(s)"}
	check := func(a Analysis) {
		t.Helper()
		for _, c := range a.Causes {
			for _, e := range allEvidence(c) {
				for _, s := range bad {
					if strings.Contains(e.Summary, s) {
						t.Errorf("%s/%s: %q has %q", c.Category, e.Name, e.Summary, s)
					}
				}
			}
		}
	}
	// Two models, one slowed after its deploy: "the other model".
	x := newFixture()
	x.p99("m", 100, 400)
	x.p99("o", 100, 100)
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "deploy"}}
	x.sampleRun(20, Scope{Model: "m", Version: "v2", Replica: "r"}, 100, 400, nil)
	a := x.analyze()
	check(a)
	if e := evidenceNamed(causeOf(t, a, CatRelease), "only_this_model"); e == nil || !strings.Contains(e.Summary, "the other model did not") {
		t.Errorf("only_this_model = %+v, want \"the other model did not\"", e)
	}
	// Two pods of one model on a sick node: "(1 model)".
	x = newFixture()
	x.p99("m", 100, 200)
	x.replica("m", "s1", "sick", 100, 300, 10, 10)
	x.replica("m", "s2", "sick", 100, 290, 10, 10)
	for _, r := range []string{"a", "b", "c", "d"} {
		x.replica("m", r, "n-"+r, 100, 102, 10, 10)
	}
	a = x.analyze()
	check(a)
	if e := evidenceNamed(causeOf(t, a, CatLocalReplica), "node_replicas_slowed"); e == nil || !strings.Contains(e.Summary, "(1 model)") {
		t.Errorf("node_replicas_slowed = %+v, want \"(1 model)\"", e)
	}
}

// A replica whose P99 rests on a sample or two is not compared with its
// peers: a 900 ms request on a replica seen twice is no "narrow" spike.
func TestReplicaOfTwoSamplesIsNotAnOutlier(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 130)
	for _, r := range []string{"a", "b", "c", "d"} {
		x.sampleRun(5, Scope{Model: "m", Version: "v1", Replica: r, Node: "n-" + r}, 100, 130, nil)
	}
	x.samples = append(x.samples,
		Sample{RequestID: "lone", Time: x.onset.Add(5 * time.Minute), Model: "m", Version: "v1", Replica: "lone", Node: "n-lone", Status: "ok", TotalMs: 900, SampleRate: 1},
		Sample{RequestID: "lone0", Time: x.onset.Add(-5 * time.Minute), Model: "m", Version: "v1", Replica: "lone", Node: "n-lone", Status: "ok", TotalMs: 100, SampleRate: 1})
	a := x.analyze()
	if strings.Contains(a.Scope.Summary, "lone") {
		t.Errorf("scope %q names a replica judged on two samples", a.Scope.Summary)
	}
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			if strings.Contains(e.Summary, "lone") {
				t.Errorf("%s/%s %q rests on two samples of replica lone", c.Category, e.Name, e.Summary)
			}
		}
	}
}

// With one replica there is no peer to stand out from: "no replica
// stands out" is not evidence that the cause is not local.
func TestOneReplicaIsNotEvidenceOfNothingLocal(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "only", Node: "n1"}, 100, 400, nil)
	a := x.analyze()
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			if e.Name == "not_local" || e.Name == "no_outlier" {
				t.Errorf("%s/%s %q: one replica has no peers to stand out from", c.Category, e.Name, e.Summary)
			}
		}
	}
	// Replica QPS curves without latency compare no replica either.
	x = newFixture()
	x.p99("m", 100, 400)
	for _, r := range []string{"a", "b", "c"} {
		x.curve(RoleQPS, LevelReplica, Scope{Model: "m", Version: "v1", Replica: r, Node: "n-" + r}, 10, 10)
	}
	a = x.analyze()
	if strings.Contains(a.Scope.Summary, "across its replicas") {
		t.Errorf("scope %q: no replica's latency is known", a.Scope.Summary)
	}
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			if e.Name == "not_local" || e.Name == "no_outlier" {
				t.Errorf("QPS only: %s/%s %q", c.Category, e.Name, e.Summary)
			}
		}
	}
}

// A single model is no breadth: ingress does not say "every model" nor
// count "1 of 1 models" as evidence of a gateway problem.
func TestIngressNeedsTwoModelsForBreadth(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "only"}, 100, 400, nil)
	c := causeOf(t, x.analyze(), CatIngress)
	if e := evidenceNamed(c, "all_models"); e != nil {
		t.Errorf("all_models %q with one model", e.Summary)
	}
	if strings.Contains(c.Summary, "every model") {
		t.Errorf("summary %q with one model", c.Summary)
	}
}

// A model measured by a P95 curve alone is reported as P95, not P99.
func TestP95OnlyIsNotCalledP99(t *testing.T) {
	x := newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	a := x.analyze()
	for _, s := range []string{a.Headline.Title, a.Headline.Summary, a.Scope.Summary} {
		if strings.Contains(s, "P99") || !strings.Contains(s, "P95") {
			t.Errorf("%q: the data is a P95 curve", s)
		}
	}
	if len(a.Impact) == 0 || a.Impact[0].Quantile != "P95" {
		t.Errorf("impact %+v, want quantile P95", a.Impact)
	}
}

// The checklist does not single out one of several stages that grew
// alike, nor read "no change lines up" as a finding when no change event
// was received at all; capacity's GPU figure says how many replicas it
// covers.
func TestChecklistAndGPUSayWhatTheyRestOn(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "only"}, 100, 400, nil) // every stage grows alike
	a := x.analyze()
	for _, s := range a.Checklist {
		if s.Step == "samples" && strings.Contains(s.Answer, " stage explains ") {
			t.Errorf("samples step %q singles out one of equal stages", s.Answer)
		}
		if strings.Contains(s.Answer, "lines up with the onset") {
			t.Errorf("%s step %q: no change event was received at all", s.Step, s.Answer)
		}
	}
	x = newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 30)
	for i, r := range []string{"a", "b", "c", "d"} {
		x.replica("m", r, "n-"+r, 100, 400, 10, 30)
		if i == 0 {
			x.curve(RoleGPUUtil, LevelReplica, Scope{Model: "m", Version: "v1", Replica: r, Node: "n-" + r}, 60, 97)
		}
	}
	if e := evidenceNamed(causeOf(t, x.analyze(), CatCapacity), "gpu_busy"); e == nil || !strings.Contains(e.Summary, "1 of the 4") {
		t.Errorf("gpu_busy %+v: one replica of four has GPU data", e)
	}
}

// A replica with a handful of samples (scaled up during the spike) has no
// load of its own, and does not take the others' away.
func TestSparseReplicaKeepsPeersLoads(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 300)
	x.sampleRun(6, Scope{Model: "m", Version: "v1", Replica: "a", Node: "n-a"}, 100, 300, nil)
	x.sampleRun(2, Scope{Model: "m", Version: "v1", Replica: "b", Node: "n-b"}, 100, 110, nil)
	x.samples = append(x.samples, Sample{RequestID: "c-1", Time: x.onset.Add(5 * time.Minute), Model: "m", Version: "v1", Replica: "c", Node: "n-c", Status: "ok", TotalMs: 100, SampleRate: 1})
	for _, r := range x.facts().allReps["m"] {
		switch r.replica {
		case "a", "b":
			if math.IsNaN(r.loadDuring) || math.IsNaN(r.loadBefore) {
				t.Errorf("replica %s: load %v → %v, want known", r.replica, r.loadBefore, r.loadDuring)
			}
		case "c":
			if !math.IsNaN(r.loadDuring) {
				t.Errorf("replica c (one sample): load %v, want unknown", r.loadDuring)
			}
		}
	}
}

// A P99 curve without a baseline leaves the impact to the P95; its peak
// is then the P95's too, not the P99's under a "P95" label.
func TestP95ImpactTakesItsPeakFromTheP95(t *testing.T) {
	x := newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	x.curve(RoleLatencyP99, LevelModel, Scope{Model: "m"}, math.NaN(), 2000)
	a := x.analyze()
	if len(a.Impact) == 0 || a.Impact[0].Quantile != "P95" {
		t.Fatalf("impact %+v, want P95", a.Impact)
	}
	if p := a.Impact[0].PeakP99Ms; p > 1000 {
		t.Errorf("peak %v ms read on the P99 curve, the impact is the P95's", p)
	}
}

// A server that times only one stage must not have that stage "explain
// 100 % of the tail's growth" when it grew 10 ms of a 300 ms rise: from
// curves (stage means) and from samples whose other stages are unknown.
func TestOverclaimOneTimedStageExplainsAll(t *testing.T) {
	check := func(t *testing.T, x *fixture) {
		t.Helper()
		a := x.analyze()
		for _, s := range a.Stages {
			if s.Stage == "downstream" && s.Share > 0.1 {
				t.Errorf("downstream grew %.0f ms of a ~300 ms rise, share %.2f", s.DeltaMs, s.Share)
			}
		}
		if a.Causes[0].Category == CatDownstream {
			dumpCause(t, a.Causes[0])
			t.Errorf("downstream ranked first on 10 ms of a 300 ms rise")
		}
		for _, e := range allEvidence(causeOf(t, a, CatDownstream)) {
			if strings.Contains(e.Summary, "100%") {
				t.Errorf("claim %q", e.Summary)
			}
		}
	}
	t.Run("curves", func(t *testing.T) {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleLatencyP50, LevelModel, Scope{Model: "m"}, 60, 300)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 20).Stage = "downstream"
		check(t, x)
	})
	t.Run("samples", func(t *testing.T) {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		x.sampleRun(10, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, during bool) {
			for st := range s.StagesMs {
				s.StagesMs[st] = math.NaN()
			}
			s.StagesMs[StageDownstream] = 20
			if during {
				s.StagesMs[StageDownstream] = 30
			}
		})
		check(t, x)
	})
}

// Traffic from sample weights is a rate over the time the samples cover:
// a sampler turned on 10 minutes before the onset must not make steady
// traffic "rise ×6" against the hour before, nor burn a month's budget.
func TestOverclaimSampleRateOverCoveredTime(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	for _, r := range []string{"r1", "r2", "r3"} {
		x.sampleRun(10, Scope{Model: "m", Version: "v1", Replica: r}, 100, 400, func(s *Sample, _ bool) {
			s.StagesMs[StageQueue] = s.TotalMs - 70
		})
	}
	from := x.onset.Add(-10 * time.Minute)
	kept := x.samples[:0]
	for _, s := range x.samples {
		if !s.Time.Before(from) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	f := x.facts()
	if q := f.qpsRatio("m"); math.IsNaN(q) || q < 0.8 || q > 1.25 {
		t.Errorf("steady traffic: qpsRatio %.2f", q)
	}
	a := x.analyze()
	c := causeOf(t, a, CatCapacity)
	for _, e := range allEvidence(c) {
		if strings.Contains(e.Summary, "Traffic of m rose") {
			dumpCause(t, c)
			t.Errorf("claim %q on steady traffic", e.Summary)
		}
	}
}

// Latency with nothing before the onset to compare with, or no latency at
// all, cannot be judged: the analysis must say so, not "no rise, nothing
// to explain".
func TestOverclaimNoBaselineIsNotNoRise(t *testing.T) {
	check := func(t *testing.T, x *fixture, want string) {
		t.Helper()
		a := x.analyze()
		for _, s := range []string{a.Headline.Title, a.Headline.Summary, a.Scope.Summary, a.Causes[0].Summary} {
			if strings.Contains(s, "No latency rise found") || strings.Contains(s, "nothing to explain") ||
				strings.Contains(s, "latency rose clearly") || strings.Contains(s, "latency clearly rose") {
				t.Errorf("claims no rise: %q", s)
			}
		}
		if !strings.Contains(a.Headline.Summary, want) || !strings.Contains(a.Scope.Summary, want) || !strings.Contains(a.Causes[0].Summary, want) {
			t.Errorf("want %q in headline %q, scope %q, top cause %q", want, a.Headline.Summary, a.Scope.Summary, a.Causes[0].Summary)
		}
	}
	t.Run("curve starts at the onset", func(t *testing.T) {
		x := newFixture()
		x.p99("m", math.NaN(), 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		check(t, x, "m has too little latency data before the onset")
	})
	t.Run("curve starts two minutes before the rise", func(t *testing.T) {
		x := newFixture()
		startFrom(x.p99c("m", 100, 400), x.onset.Add(-2*time.Minute))
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		check(t, x, "m has too little latency data before the onset")
	})
	t.Run("a mean from the start lends the P99 no baseline", func(t *testing.T) {
		x := newFixture()
		startFrom(x.p99c("m", 100, 400), x.onset.Add(-2*time.Minute))
		x.curve(RoleLatencyMean, LevelModel, Scope{Model: "m"}, 20, 20)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		check(t, x, "m has too little latency data before the onset")
	})
	t.Run("no latency at all", func(t *testing.T) {
		x := newFixture()
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 30)
		check(t, x, "cannot be judged")
	})
}

// Stage times only from before the onset say nothing about the spike:
// not "the downstream call did not grow (0%)", and with no sample during
// the spike, not "no sampled request was slow".
func TestOverclaimStagesOnlyBeforeTheOnset(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.p99("o", 100, 100)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.sampleRun(10, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, nil)
	kept := x.samples[:0]
	for _, s := range x.samples {
		if s.Time.Before(x.onset) {
			kept = append(kept, s)
		}
	}
	x.samples = kept
	a := x.analyze()
	var said []string
	for _, c := range a.Causes {
		said = append(said, c.Summary)
	}
	for _, st := range a.Checklist {
		said = append(said, st.Answer)
	}
	for _, s := range said {
		if strings.Contains(s, "did not grow") || strings.Contains(s, "was slow during the spike") {
			t.Errorf("unsupported: %q (stages %+v)", s, a.Stages)
		}
	}
	if a.Samples.During == nil || *a.Samples.During != 0 {
		t.Errorf("samples during the spike: %v, want 0", a.Samples.During)
	}
}

// Two samples on two replicas cannot say "no replica or node stands
// out": local_replica is not assessable from them.
func TestOverclaimLocalFromTwoSamples(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	for k, r := range []string{"r1", "r2"} {
		x.samples = append(x.samples, Sample{RequestID: r, Time: x.onset.Add(time.Duration(3+k) * time.Minute), Model: "m",
			Version: "v1", Replica: r, Node: "n" + r, Status: "ok", TotalMs: 420, SampleRate: 1})
	}
	a := x.analyze()
	for _, c := range a.Causes {
		if c.Category == CatLocalReplica {
			dumpCause(t, c)
			t.Errorf("local_replica judged from two samples: %q", c.Summary)
		}
	}
}

// Two samples during the spike are no traffic shares and no rate: not
// "v2 went from 0% to 50% of the model's traffic", nor "traffic did not
// rise (×0.07)".
func TestOverclaimSharesFromTwoSamples(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	for i := 0; i < 70; i++ {
		x.samples = append(x.samples, Sample{RequestID: fmt.Sprint("b", i), Time: fxStart.Add(time.Duration(i) * time.Minute), Model: "m",
			Version: "v1", Replica: "r1", Status: "ok", TotalMs: 100, SampleRate: 1})
	}
	for k, v := range []string{"v2", "v1"} {
		x.samples = append(x.samples, Sample{RequestID: fmt.Sprint("d", k), Time: x.onset.Add(time.Duration(3+k) * time.Minute), Model: "m",
			Version: v, Replica: "r1", Status: "ok", TotalMs: 420, SampleRate: 1})
	}
	a := x.analyze()
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			if strings.Contains(e.Summary, "of the model's traffic") || strings.Contains(e.Summary, "Traffic did not rise") ||
				strings.Contains(e.Summary, "×0.0") {
				t.Errorf("%s: %q from two samples", c.Category, e.Summary)
			}
		}
		if strings.Contains(c.Summary, "×0.0") {
			t.Errorf("%s: %q from two samples", c.Category, c.Summary)
		}
	}
}

// Cold start judged within the data there is: replicas seen only by
// their GPU curves still have start times, and data that begins 11 or 13
// minutes before the onset neither makes every replica "new" nor lets
// the analysis say none started in the 15 minutes before.
func TestOverclaimColdStartWithinTheData(t *testing.T) {
	trim := func(c *Curve, from time.Time) {
		for len(c.Points) > 0 && c.Points[0].Time().Before(from) {
			c.Points = c.Points[1:]
		}
	}
	t.Run("GPU curves only", func(t *testing.T) {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
		for _, r := range []string{"old1", "old2", "old3", "old4", "new1", "new2"} {
			c := x.curve(RoleGPUUtil, LevelReplica, Scope{Model: "m", Version: "v1", Replica: r, Node: "n1"}, 50, 60)
			if strings.HasPrefix(r, "new") {
				trim(c, x.onset.Add(-5*time.Minute))
			}
		}
		c := causeOf(t, x.analyze(), CatColdStart)
		if strings.Contains(c.Summary, "No new replicas") || evidenceNamed(c, "new_replicas") == nil {
			dumpCause(t, c)
			t.Errorf("new1 and new2 started 5 minutes before the onset: %q", c.Summary)
		}
	})
	for _, before := range []time.Duration{11 * time.Minute, 13 * time.Minute} {
		t.Run(fmt.Sprint("data from ", before, " before"), func(t *testing.T) {
			x := newFixture()
			x.p99("m", 100, 400)
			x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
			for _, r := range []string{"r1", "r2", "r3", "r4"} {
				x.replica("m", r, "n1", 100, 400, 2.5, 2.5)
			}
			for i := range x.curves {
				trim(&x.curves[i], x.onset.Add(-before))
			}
			a := x.analyze()
			c := causeOf(t, a, CatColdStart)
			for _, s := range saidBy(c) {
				if strings.Contains(s, "new replica(s)") || strings.Contains(s, "No replica of m started") || strings.Contains(s, "No new replicas") {
					dumpCause(t, c)
					t.Errorf("claim %q on data from %v before the onset", s, before)
				}
			}
		})
	}
}

// Traffic measured per replica only (no model-level request rate) is
// still traffic: capacity must not call it unknown.
func TestTrafficFromReplicaCurves(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	for _, r := range []string{"r1", "r2", "r3"} {
		x.replica("m", r, "n1", 100, 400, 4, 10)
	}
	if q := x.facts().qpsRatio("m"); math.IsNaN(q) || q < 2.3 || q > 2.7 {
		t.Errorf("qpsRatio %.2f, want ×2.5 from the replicas' rates", q)
	}
	c := causeOf(t, x.analyze(), CatCapacity)
	for _, e := range allEvidence(c) {
		if strings.Contains(e.Summary, "traffic change is unknown") {
			t.Errorf("claim %q with replica request rates", e.Summary)
		}
	}
	if strings.Contains(c.Summary, "unknown") {
		t.Errorf("capacity: %q", c.Summary)
	}
}

// GPUs measured per node only still show a saturated pool: capacity
// quotes the nodes the affected replicas run on, not "no GPU data".
func TestCapacityFromNodeGPUs(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 25)
	for _, r := range []string{"r1", "r2"} {
		x.replica("m", r, "n"+r, 100, 400, 5, 12.5)
		x.curve(RoleGPUUtil, LevelNode, Scope{Node: "n" + r}, 60, 99)
	}
	x.curve(RoleGPUUtil, LevelNode, Scope{Node: "idle"}, 5, 5) // no replica of m runs there
	c := causeOf(t, x.analyze(), CatCapacity)
	e := evidenceNamed(c, "gpu_busy")
	if e == nil || !strings.Contains(e.Summary, "nodes nr1, nr2") || e.Value < 95 {
		dumpCause(t, c)
		t.Errorf("gpu_busy %+v, want the nodes nr1, nr2 at ~99%%", e)
	}
	if strings.Contains(c.Summary, "no queue or GPU data") {
		t.Errorf("capacity: %q", c.Summary)
	}
}

// With no change event received at all, the release cause must not say
// "no deploy of m" (the timeline step says nothing was received); it may
// say no new version took traffic when versions are measured.
func TestOverclaimNoDeployWithoutEvents(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, nil)
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	for _, s := range saidBy(c) {
		if strings.Contains(s, "No deploy of m") || strings.Contains(s, "No recent release") {
			dumpCause(t, c)
			t.Errorf("claim %q with no event received at all", s)
		}
	}
	if !strings.Contains(c.Summary, "No new version of m took traffic") {
		t.Errorf("summary %q, want what the versions show", c.Summary)
	}
}

// A gateway timed once for the whole fleet (stage_time at level fleet)
// is every model's front stage: ingress is assessable, and the growth is
// the gateway's.
func TestIngressFromFleetGatewayCurve(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"m1", "m2"} {
		x.p99(m, 100, 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: m}, 10, 10)
		x.curve(RoleStageTime, LevelModel, Scope{Model: m}, 80, 80).Stage = "exec"
	}
	x.curve(RoleStageTime, LevelFleet, Scope{}, 10, 300).Stage = "gateway"
	a := x.analyze()
	for _, na := range a.NotAssessable {
		if na.Category == CatIngress {
			t.Fatalf("ingress not assessable: %s", na.Reason)
		}
	}
	if a.Causes[0].Category != CatIngress {
		dumpCause(t, a.Causes[0])
		t.Errorf("top cause %s, want ingress (the fleet's gateway 10 → 300 ms)", a.Causes[0].Category)
	}
}

// Stage means against a P99 alone are no sign of a partly timed request:
// fully timed stages keep their whole shares without a median curve.
func TestStageSharesWithoutMedianCurve(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 25)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 70).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 20, 20).Stage = "exec"
	for _, st := range x.analyze().Stages {
		if st.Stage == "queue" && st.Share < 0.9 {
			t.Errorf("queue share %.2f, want ~1 (the only stage that grew)", st.Share)
		}
	}
}

// A rolling restart replaces replicas during the spike: their rates,
// summed per instant, stay flat — not ×2 from counting the old and the
// new replicas in full.
func TestTrafficThroughRollingRestart(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	for _, r := range []string{"old1", "old2", "old3", "old4"} {
		c := x.curve(RoleQPS, LevelReplica, Scope{Model: "m", Replica: r}, 10, 10)
		end := x.onset.Add(3 * time.Minute).UnixMilli()
		for len(c.Points) > 0 && c.Points[len(c.Points)-1].T >= end {
			c.Points = c.Points[:len(c.Points)-1]
		}
	}
	for _, r := range []string{"new1", "new2", "new3", "new4"} {
		c := x.curve(RoleQPS, LevelReplica, Scope{Model: "m", Replica: r}, 10, 10)
		start := x.onset.Add(3 * time.Minute).UnixMilli()
		for len(c.Points) > 0 && c.Points[0].T < start {
			c.Points = c.Points[1:]
		}
	}
	if q := x.facts().qpsRatio("m"); math.IsNaN(q) || q > 1.2 || q < 0.8 {
		t.Errorf("qpsRatio %.2f through a rolling restart, want ~1", q)
	}
}

// Breadth and quiet model servers alone must not make ingress the top
// cause while the front stages are measured flat: they only corroborate
// a front that grew.
func TestOverclaimIngressFromBreadthAlone(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"chat", "embed"} {
		x.p99(m, 200, 800)
		x.curve(RoleLatencyP50, LevelModel, Scope{Model: m}, 100, 100)
		x.curve(RoleQPS, LevelModel, Scope{Model: m}, 100, 100)
		for st, v := range map[string]float64{"gateway": 5, "queue": 20, "exec": 60} {
			x.curve(RoleStageTime, LevelModel, Scope{Model: m}, v, v*0.98).Stage = st
		}
	}
	a := x.analyze()
	c := causeOf(t, a, CatIngress)
	dumpCause(t, c)
	if c.Score > 0.1 || (len(a.Causes) > 0 && a.Causes[0].Category == CatIngress && a.Causes[0].Score > 0.05) {
		t.Errorf("ingress scores %.2f with the gateway measured flat", c.Score)
	}
}

// Per-version P99 curves without per-version request rates still compare
// the versions: a deployed version ten times slower must not read "not
// measured slower".
func TestOverclaimReleaseVersionP99WithoutRates(t *testing.T) {
	x := newFixture()
	x.p99("chat", 200, 800)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "chat", Version: "v1"}, 200, 210)
	x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "chat", Version: "v2"}, 200, 2000)
	x.events = append(x.events, Event{ID: "d1", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "chat", Version: "v2"}})
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	dumpCause(t, c)
	if strings.Contains(c.Summary, "not measured slower") || !names(c.Evidence)["new_version_slower"] {
		t.Errorf("v2 at 2 s against v1's 210 ms in the same window, yet: %q", c.Summary)
	}
	if a.Causes[0].Category != CatRelease {
		t.Errorf("top cause %s, want release", a.Causes[0].Category)
	}
}

// Stage-time means that stayed flat explain none of a tail rise: their
// wobble of a few microseconds must not become "71 % of the growth".
func TestOverclaimStageSharesFromWobble(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"chat", "embed"} {
		x.p99(m, 200, 800)
		x.curve(RoleLatencyP50, LevelModel, Scope{Model: m}, 100, 100)
		x.curve(RoleQPS, LevelModel, Scope{Model: m}, 100, 100)
		for st, v := range map[string]float64{"gateway": 5, "queue": 20, "exec": 60} {
			x.curve(RoleStageTime, LevelModel, Scope{Model: m}, v, v).Stage = st
		}
	}
	a := x.analyze()
	for _, s := range a.Stages {
		if s.Share > 0 {
			t.Errorf("stage %s %.3f → %.3f ms (Δ%.4f) gets share %.2f of a rise it did not take part in", s.Stage, s.BeforeMs, s.DuringMs, s.DeltaMs, s.Share)
		}
	}
	for _, c := range a.Causes {
		for _, said := range saidBy(c) {
			if strings.Contains(said, "% of the tail's growth is in") {
				t.Errorf("%s says %q", c.Category, said)
			}
		}
	}
}

// The dependency named must be the one the samples show slowing down, not
// one that two samples (one before, one during) happen to name.
func TestOverclaimDependencyFromTwoSamples(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	x.sampleRun(10, Scope{Model: "chat"}, 100, 400, func(s *Sample, d bool) {
		for k := range s.StagesMs {
			s.StagesMs[k] = 10
		}
		s.StagesMs[StageDownstream] = s.TotalMs - 70
		s.Dependency = "vector-db"
	})
	for i, at := range []time.Duration{-20 * time.Minute, 5 * time.Minute} {
		s := Sample{RequestID: fmt.Sprintf("c%d", i), Time: x.onset.Add(at), Model: "chat", Status: "ok", SampleRate: 1, Dependency: "cache"}
		for k := range s.StagesMs {
			s.StagesMs[k] = 10
		}
		s.StagesMs[StageDownstream] = []float64{2, 40}[i]
		s.TotalMs = 70 + s.StagesMs[StageDownstream]
		x.samples = append(x.samples, s)
	}
	c := causeOf(t, x.analyze(), CatDownstream)
	dumpCause(t, c)
	for _, said := range saidBy(c) {
		if strings.Contains(said, "cache") {
			t.Errorf("names cache from two samples: %q", said)
		}
	}
	if c.Target.Dependency != "" && c.Target.Dependency != "vector-db" {
		t.Errorf("target dependency %q, want vector-db", c.Target.Dependency)
	}
}

// Two samples before the onset are no P99 baseline: the scope must not
// call a steady model slower from them.
func TestOverclaimSampleP99FromTwoSamples(t *testing.T) {
	onset := fxStart.Add(70 * time.Minute)
	var ss []Sample
	lat := func(i int) float64 { return 100 * math.Exp(0.8*math.Sin(float64(i)*2.3)) } // steady, 45–220 ms
	add := func(at time.Time) {
		ss = append(ss, Sample{RequestID: fmt.Sprint(len(ss)), Time: at, Model: "chat", Status: "ok", TotalMs: lat(len(ss)), SampleRate: 1})
	}
	add(onset.Add(-150 * time.Second))
	add(onset.Add(-90 * time.Second))
	for i := 0; i < 200; i++ {
		add(onset.Add(time.Duration(i) * 6 * time.Second))
	}
	a := Analyze(Input{Window: Window{From: onset.Add(-20 * time.Minute), To: onset.Add(10 * time.Minute)}, Samples: ss, Step: time.Minute})
	t.Logf("scope %q headline %q", a.Scope.Summary, a.Headline.Summary)
	if strings.Contains(a.Scope.Summary, "slowed down") || strings.Contains(a.Headline.Summary, "→") {
		t.Errorf("a P99 baseline from 2 samples: scope %q, headline %q", a.Scope.Summary, a.Headline.Summary)
	}
}

// With the batch wait not measured, queue growth is no evidence against
// a batching window that grew: it may be that wait.
func TestOverclaimBatchingGrowthElsewhereUntimed(t *testing.T) {
	x := newFixture()
	x.p99("chat", 200, 800)
	x.curve(RoleLatencyP50, LevelModel, Scope{Model: "chat"}, 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	x.curve(RoleBatchSize, LevelModel, Scope{Model: "chat"}, 4, 8)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "chat"}, 30, 330).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "chat"}, 70, 70).Stage = "exec"
	x.events = append(x.events, Event{ID: "c1", Kind: KindConfigChange, Time: x.onset.Add(-2 * time.Minute), Scope: Scope{Model: "chat"}, Summary: "raise max_queue_delay to 50ms"})
	c := causeOf(t, x.analyze(), CatBatching)
	dumpCause(t, c)
	if names(c.CounterEvidence)["growth_elsewhere"] {
		t.Errorf("batch wait unmeasured, yet counter %+v", c.CounterEvidence)
	}
}

// An alert is no change feed: with it the only event, a release can still
// be neither seen nor ruled out.
func TestOverclaimReleaseRuledOutByAnAlert(t *testing.T) {
	x := newFixture()
	x.p99("chat", 200, 800)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	x.curve(RoleGPUUtil, LevelReplica, Scope{Model: "chat", Version: "v1", Replica: "r1", Node: "n1"}, 50, 50)
	x.curve(RoleGPUUtil, LevelReplica, Scope{Model: "chat", Version: "v1", Replica: "r2", Node: "n2"}, 50, 50)
	x.events = append(x.events, Event{ID: "a1", Kind: KindAlert, Time: x.onset.Add(3 * time.Minute), Scope: Scope{Model: "chat"}, Summary: "ChatP99High"})
	a := x.analyze()
	c := causeOf(t, a, CatRelease)
	dumpCause(t, c)
	if len(c.CounterEvidence) > 0 || strings.Contains(c.Summary, "No recent release") {
		t.Errorf("an alert alone rules a release out: %q %+v", c.Summary, c.CounterEvidence)
	}
	for _, st := range a.Checklist {
		if strings.Contains(st.Answer, "No change event in the incident's scope lines up") {
			t.Errorf("checklist %q: the alert is no change event", st.Answer)
		}
	}
}

// "No single replica stands out" covers only the models whose replicas
// are measured; the hardest-hit one without replica data is unseen.
func TestOverclaimNoOutlierWithoutReplicaData(t *testing.T) {
	x := newFixture()
	x.p99("chat", 200, 800)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	x.p99("embed", 50, 80)
	x.curve(RoleQPS, LevelModel, Scope{Model: "embed"}, 100, 100)
	for i, r := range []string{"e1", "e2", "e3"} {
		x.replica("embed", r, fmt.Sprintf("n%d", i), 50, 80, 30, 30)
	}
	c := causeOf(t, x.analyze(), CatLocalReplica)
	dumpCause(t, c)
	if !strings.Contains(c.Summary, "chat") {
		t.Errorf("summary %q does not say chat's replicas are not measured", c.Summary)
	}
	for _, e := range c.CounterEvidence {
		if e.Name == "no_outlier" && (e.Strength >= 1 || !strings.Contains(e.Summary, "embed")) {
			t.Errorf("counter %q at %.2f for a fleet whose hardest-hit model has no replica data", e.Summary, e.Strength)
		}
	}
}

// A tenant's shares are of all the model's requests, tagged or not: a
// tenant sending a tenth of the traffic is not "100 % of the requests".
func TestOverclaimTenantShareOfTaggedOnly(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 500)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 110)
	x.sampleRun(20, Scope{Model: "chat"}, 100, 100, func(s *Sample, d bool) {
		if d && s.Time.Second() < 4 {
			s.TotalMs = 500
		}
	})
	// acme: one tagged sample a minute before, two during.
	x.sampleRun(2, Scope{Model: "chat", Tenant: "acme"}, 100, 100, func(s *Sample, d bool) {
		if !d && s.Time.Second() == 1 {
			s.Tenant = ""
		}
		if d && s.Time.Second() == 1 {
			s.TotalMs = 500
		}
	})
	a := x.analyze()
	for _, im := range a.Impact {
		for _, e := range im.Tenants {
			if *e.TrafficShare > 0.5 || *e.SlowShare > 0.5 {
				t.Errorf("tenant %s: %.0f%% of slow, %.0f%% of requests; it sends under a tenth", e.Name, 100**e.SlowShare, 100**e.TrafficShare)
			}
		}
	}
	c := causeOf(t, a, CatCapacity)
	dumpCause(t, c)
	for _, said := range saidBy(c) {
		if strings.Contains(said, "100% of the requests") || strings.Contains(said, "NaN") {
			t.Errorf("capacity says %q", said)
		}
	}
}

// A tenant surge needs the tenant's samples in both phases: one before
// and four during is no "×14.8".
func TestOverclaimTenantSurgeFromFiveSamples(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 500)
	add := func(tenant string, n int, from time.Time, span time.Duration) {
		for i := 0; i < n; i++ {
			x.samples = append(x.samples, Sample{RequestID: fmt.Sprintf("%s-%v-%d", tenant, from, i), Time: from.Add(span * time.Duration(i) / time.Duration(n)),
				Model: "chat", Tenant: tenant, Status: "ok", TotalMs: 100 + float64(i), SampleRate: 1})
		}
	}
	add("beta", 4, x.onset.Add(-50*time.Minute), 45*time.Minute)
	add("acme", 1, x.onset.Add(-30*time.Minute), 20*time.Minute)
	add("beta", 2, x.onset.Add(time.Minute), 15*time.Minute)
	add("acme", 4, x.onset.Add(2*time.Minute), 15*time.Minute)
	c := causeOf(t, x.analyze(), CatCapacity)
	dumpCause(t, c)
	for _, said := range saidBy(c) {
		if strings.Contains(said, "acme") || strings.Contains(said, "NaN") {
			t.Errorf("capacity says %q from five samples", said)
		}
	}
}

// Capacity must not say both "spread over the pool" and "concentrate on
// r1" of the same slow requests.
func TestOverclaimCapacitySpreadAndConcentrated(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 500)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 200)
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		rep := r
		x.sampleRun(10, Scope{Model: "chat", Replica: rep, Node: "n-" + rep}, 100, 100, func(s *Sample, d bool) {
			if d && (rep == "r1" && s.Time.Second()%2 == 0 || rep != "r1" && s.Time.Second() == 0) {
				s.TotalMs = 500
			}
		})
	}
	c := causeOf(t, x.analyze(), CatCapacity)
	dumpCause(t, c)
	if names(c.Evidence)["spread_over_pool"] && names(c.CounterEvidence)["concentrated"] {
		t.Errorf("slow requests both spread and concentrated")
	}
}

// Minutes over the SLO count from the onset to the end of the data, at the
// curve's spacing: a 90-minute breach read "30 min over" (the spike's main
// part), and the spacing came from the first gap seen.
func TestOverclaimSLOMinutesOver(t *testing.T) {
	step := 5 * time.Minute
	rise := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	from, to := rise.Add(-90*time.Minute), rise.Add(150*time.Minute)
	for _, spike := range []time.Duration{15 * time.Minute, 90 * time.Minute} {
		c := Curve{Role: RoleLatencyP99, Level: LevelModel, Scope: Scope{Model: "chat"}}
		for ts, i := from, 0; ts.Before(to); ts, i = ts.Add(step), i+1 {
			v := 200 * wobble(i)
			if !ts.Before(rise) && ts.Before(rise.Add(spike)) {
				v = 800 * wobble(i)
			}
			c.Points = append(c.Points, Point{T: ts.UnixMilli(), V: v})
		}
		a := Analyze(Input{Window: Window{From: rise.Add(-10 * time.Minute), To: to}, Curves: []Curve{c}, Step: step,
			SLO: func(string) (float64, bool) { return 300, true }})
		if len(a.Impact) == 0 || a.Impact[0].SLO == nil {
			t.Fatalf("spike %s: no SLO impact", spike)
		}
		if got := a.Impact[0].SLO.MinutesOver; math.Abs(got-spike.Minutes()) > step.Minutes() {
			t.Errorf("spike of %s over the SLO: %.1f min over", spike, got)
		}
	}
}

// A replica that started 8 minutes before the onset is new at any step: at
// 5-minute steps its start, inferred from its first point, was backdated
// out of the cold-start window, and "no replica started" was said.
func TestOverclaimColdStartAtCoarseSteps(t *testing.T) {
	for _, step := range []time.Duration{15 * time.Second, time.Minute, 5 * time.Minute} {
		onset := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
		from, to := onset.Add(-80*time.Minute), onset.Add(40*time.Minute)
		curve := func(role Role, level Level, sc Scope, start time.Time, before, during float64) Curve {
			c := Curve{Role: role, Level: level, Scope: sc}
			for ts, i := start, 0; ts.Before(to); ts, i = ts.Add(step), i+1 {
				v := before
				if !ts.Before(onset) {
					v = during
				}
				c.Points = append(c.Points, Point{T: ts.UnixMilli(), V: v * wobble(i)})
			}
			return c
		}
		cs := []Curve{curve(RoleLatencyP99, LevelModel, Scope{Model: "chat"}, from, 200, 800), curve(RoleQPS, LevelModel, Scope{Model: "chat"}, from, 100, 100)}
		for _, r := range []string{"r1", "r2"} {
			cs = append(cs, curve(RoleLatencyP99, LevelReplica, Scope{Model: "chat", Replica: r, Node: "n" + r}, from, 200, 300))
		}
		// r3 started 8 minutes before the onset: its first point is the
		// first step after two 15 s scrapes.
		first := onset.Add(-8 * time.Minute).Add(30 * time.Second).Truncate(step).Add(step)
		cs = append(cs, curve(RoleLatencyP99, LevelReplica, Scope{Model: "chat", Replica: "r3", Node: "nr3"}, first, 3000, 3000))
		a := Analyze(Input{Window: Window{From: onset.Add(-10 * time.Minute), To: to}, Curves: cs, Step: step})
		c := causeOf(t, a, CatColdStart)
		for _, said := range saidBy(c) {
			if strings.Contains(said, "No replica of chat started") || strings.Contains(said, "No new replicas") {
				t.Errorf("step %s: %q about a replica 8 minutes old", step, said)
			}
		}
	}
}

// At 5-minute steps the onset is known to a step: a deploy 3 minutes after
// the rise must not read "2m before the onset" with a strong weight.
func TestOverclaimEventOrderAtCoarseSteps(t *testing.T) {
	step := 5 * time.Minute
	rise := time.Date(2026, 3, 2, 14, 1, 0, 0, time.UTC)
	from, to := rise.Add(-90*time.Minute), rise.Add(40*time.Minute)
	curve := func(role Role, level Level, sc Scope, before, during float64) Curve {
		c := Curve{Role: role, Level: level, Scope: sc}
		for ts, i := from, 0; ts.Before(to); ts, i = ts.Add(step), i+1 {
			v := before
			if ts.After(rise) { // a point at T sums (T − step, T]
				v = during
			}
			c.Points = append(c.Points, Point{T: ts.UnixMilli(), V: v * wobble(i)})
		}
		return c
	}
	cs := []Curve{curve(RoleLatencyP99, LevelModel, Scope{Model: "chat"}, 200, 800), curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100),
		curve(RoleLatencyP99, LevelVersion, Scope{Model: "chat", Version: "v1"}, 200, 800), curve(RoleQPS, LevelVersion, Scope{Model: "chat", Version: "v1"}, 100, 100)}
	ev := []Event{{ID: "d1", Kind: KindDeploy, Time: rise.Add(3 * time.Minute), Scope: Scope{Model: "chat", Version: "v2"}, Summary: "chat v2"}}
	a := Analyze(Input{Window: Window{From: rise.Add(-10 * time.Minute), To: to}, Curves: cs, Events: ev, Step: step})
	c := causeOf(t, a, CatRelease)
	dumpCause(t, c)
	for _, said := range append(saidBy(c), a.Checklist[1].Answer) {
		if strings.Contains(said, "before the onset") {
			t.Errorf("at 5-minute steps: %q", said)
		}
	}
	for _, e := range c.Evidence {
		if e.Name == "deploy_before_onset" && e.Strength > 0.6 {
			t.Errorf("a deploy that may have followed the rise weighs %.2f", e.Strength)
		}
	}
}

// With no latency data, the timeline cannot say no spike was detected:
// nothing was there to detect it in.
func TestOverclaimNoSpikeWithoutLatencyData(t *testing.T) {
	x := newFixture()
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 100, 100)
	a := x.analyze()
	if ans := a.Checklist[1].Answer; strings.Contains(ans, "No latency spike was detected") || !strings.Contains(ans, "cannot be judged") {
		t.Errorf("timeline step without latency curves or samples: %q", ans)
	}
}

// An incident scoped to a model that did not slow, while another did: the
// samples step spoke of "slow requests in the affected models during the
// spike" and of the other models' "P99 rise" under a scope that said no
// model rose.
func TestOverclaimSamplesStepWithNothingAffected(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 500)
	x.p99("embed", 50, 50)
	x.sampleRun(10, Scope{Model: "chat", Replica: "chat-1"}, 100, 500, nil)
	x.sampleRun(10, Scope{Model: "embed", Replica: "embed-1"}, 50, 50, nil)
	a := Analyze(Input{Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Samples: x.samples, Step: time.Minute, Scope: Scope{Model: "embed"}})
	if len(a.Scope.Models) != 0 && a.Scope.Models[0] == "embed" {
		t.Fatalf("embed did not slow; scope %+v", a.Scope)
	}
	ans := a.Checklist[2].Answer
	for _, bad := range []string{"affected models", "P99 rise", "chat"} {
		if strings.Contains(ans, bad) {
			t.Errorf("samples step says %q: %q", bad, ans)
		}
	}
	t.Logf("scope: %q; samples: %q", a.Checklist[0].Answer, ans)
}

// An incident scoped to a model with no latency data at all, on a fleet
// whose other models were judged flat: the analysis read "no rise" (the
// other models' verdict) for a model it never saw.
func TestOverclaimScopedModelWithoutData(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 100)
	x.sampleRun(10, Scope{Model: "chat", Replica: "chat-1"}, 100, 100, nil)
	a := Analyze(Input{Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Samples: x.samples, Step: time.Minute, Scope: Scope{Model: "embed"}})
	for name, s := range map[string]string{"headline": a.Headline.Summary, "scope": a.Scope.Summary, "timeline step": a.Checklist[1].Answer} {
		if !strings.Contains(s, "embed") || !strings.Contains(s, "cannot be judged") {
			t.Errorf("%s: %q", name, s)
		}
	}
	if a.Headline.Title != "Latency rise not judged" {
		t.Errorf("headline %q", a.Headline.Title)
	}
}

// Every replica's P99 tripled and one went ×15: the scope said "Narrow:
// 1 of 6 replicas … carry the spike" and local_replica led unopposed
// with "drain it", while the peers alone explain most of the rise.
func TestOverclaimNarrowWhilePeersSlowedToo(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.replica("m", "sick", "n-sick", 100, 1500, 10, 10)
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		x.replica("m", r, "n-"+r, 100, 300, 10, 10)
	}
	a := x.analyze()
	if a.Scope.Breadth == "replicas" || strings.HasPrefix(a.Scope.Summary, "Narrow") || !strings.Contains(a.Scope.Summary, "too") {
		t.Errorf("scope %q: the other 5 replicas' P99 rose ×3 too", a.Scope.Summary)
	}
	if top := a.Causes[0]; top.Category == CatLocalReplica && len(top.CounterEvidence) == 0 {
		t.Errorf("local_replica leads (%.2f) unopposed while every peer's P99 tripled", top.Score)
	}
	if c := causeOf(t, a, CatLocalReplica); !hasItem(c.CounterEvidence, "peers_slowed_too") {
		t.Errorf("local_replica has no peers_slowed_too: %+v", c.CounterEvidence)
	}
	// A replica that slowed alone is still narrow.
	y := newFixture()
	y.p99("m", 100, 250)
	y.replica("m", "sick", "n-sick", 100, 1500, 10, 10)
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		y.replica("m", r, "n-"+r, 100, 105, 10, 10)
	}
	if b := y.analyze(); !strings.HasPrefix(b.Scope.Summary, "Narrow") {
		t.Errorf("one replica slowed alone: scope %q", b.Scope.Summary)
	}
}

func hasItem(es []Evidence, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return true
		}
	}
	return false
}

// The P99 and the request rate fell to 0 at 07:32 (no request completes):
// the headline said "recovered at 07:32" with P99 now 0 ms.
func TestOverclaimRecoveredOnZeroLatency(t *testing.T) {
	x := newFixture()
	cut := fxStart.Add(91 * time.Minute)
	c := x.curve(RoleLatencyP99, LevelModel, Scope{Model: "m"}, 100, 400)
	q := x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	for _, pts := range [][]Point{c.Points, q.Points} {
		for i := range pts {
			if pts[i].Time().After(cut) {
				pts[i].V = 0
			}
		}
	}
	a := x.analyze()
	if im := a.Impact[0]; im.Status == "recovered" || im.NowP99Ms == 0 {
		t.Errorf("%q (now %v ms): P99 0 ms with request rate 0 is no recovery", a.Headline.Summary, im.NowP99Ms)
	}
}

// Scoped to model a while b rose ×4 too: release said "Only a slowed
// down; the other model did not" (and scored higher for it), ingress "1
// of the 2 models" and "a gateway problem would hit every model".
func TestOverclaimScopedIncidentDeniesOtherModels(t *testing.T) {
	x := newFixture()
	x.p99("a", 100, 400)
	x.p99("b", 100, 400)
	x.sampleRun(20, Scope{Model: "a", Version: "v1", Replica: "r1"}, 100, 100, func(s *Sample, d bool) {
		if d && len(s.RequestID)%2 == 0 {
			s.Version, s.TotalMs = "v2", 500
		}
	})
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "a", Version: "v2"}}}
	in := func(sc Scope) Input {
		return Input{Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
			Curves: x.curves, Events: x.events, Samples: x.samples, Step: time.Minute, Scope: sc}
	}
	fleet := causeOf(t, Analyze(in(Scope{})), CatRelease)
	sa := Analyze(in(Scope{Model: "a"}))
	scoped := causeOf(t, sa, CatRelease)
	for _, s := range saidBy(scoped) {
		if strings.Contains(s, "Only a slowed down") {
			t.Errorf("%q: b's P99 rose ×4 at the same time", s)
		}
	}
	if scoped.Score > fleet.Score+0.1 {
		t.Errorf("scoping to a raised release from %.2f to %.2f", fleet.Score, scoped.Score)
	}
	if !strings.Contains(sa.Scope.Summary, "b slowed down") || strings.Contains(sa.Scope.Summary, "One model slowed down") {
		t.Errorf("scope %q does not say b slowed too", sa.Scope.Summary)
	}

	y := newFixture()
	for _, m := range []string{"a", "b"} {
		y.p99(m, 100, 400)
		y.curve(RoleStageTime, LevelModel, Scope{Model: m}, 10, 300).Stage = "gateway"
		y.curve(RoleStageTime, LevelModel, Scope{Model: m}, 50, 50).Stage = "exec"
	}
	c := causeOf(t, Analyze(Input{Window: Window{From: y.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: y.curves, Step: time.Minute, Scope: Scope{Model: "a"}}), CatIngress)
	for _, s := range saidBy(c) {
		if strings.Contains(s, "Only a slowed down") || strings.Contains(s, "1 of the 2 models") {
			t.Errorf("%q: b rose ×4 too, through the same gateway", s)
		}
	}
}

// Samples only: ×4 for ten minutes, then back at 100 ms for twenty. The
// spike list said it ended; the headline said "ongoing at the end of the
// data" (the curve built from samples stopped at the spike's end).
func TestOverclaimSamplesOnlyOngoingAfterRecovery(t *testing.T) {
	x := newFixture()
	end := x.onset.Add(10 * time.Minute)
	x.sampleRun(25, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, d bool) {
		if !s.Time.Before(end) {
			s.TotalMs = 100 * wobble(len(s.RequestID))
		}
	})
	a := x.analyze()
	if len(a.Impact) == 0 {
		t.Fatal("no impact")
	}
	if im := a.Impact[0]; im.Status != "recovered" || strings.Contains(a.Headline.Summary, "ongoing") {
		t.Errorf("%q (status %s, now at %v): the samples are back at 100 ms until the end", a.Headline.Summary, im.Status, im.NowAt)
	}
}

// A pool scaled to zero before the onset and back to 2 after it: the
// action said "its autoscaler did not react" (a 0 count was taken as no
// data, and the hour's first count, 3, stood in for the onset's).
func TestOverclaimAutoscalerFromZero(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 25)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 300).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 50, 50).Stage = "exec"
	rep := Curve{Role: RoleReplicas, Level: LevelModel, Scope: Scope{Model: "m"}}
	mx := Curve{Role: RoleReplicasMax, Level: LevelModel, Scope: Scope{Model: "m"}}
	for i := 0; i < fxMinutes; i++ {
		v := 3.0
		if i >= 73 {
			v = 2
		} else if i >= 40 {
			v = 0
		}
		tm := fxStart.Add(time.Duration(i) * time.Minute).UnixMilli()
		rep.Points = append(rep.Points, Point{T: tm, V: v})
		mx.Points = append(mx.Points, Point{T: tm, V: 10})
	}
	x.curves = append(x.curves, rep, mx)
	a := x.analyze()
	if len(a.Pools) == 0 || a.Pools[0].DesiredAtOnset != 0 {
		t.Fatalf("pools %+v: the pool had 0 replicas at the onset", a.Pools)
	}
	for _, act := range causeOf(t, a, CatCapacity).Actions {
		if strings.Contains(act, "did not react") {
			t.Errorf("%q: the autoscaler went 0 → 2", act)
		}
	}
}

// The request-rate curve starts two minutes before the onset (one point
// in the baseline, a partial rate() window): capacity said "Traffic of m
// rose ×2.50 against the hour before" and ranked first on it.
func TestOverclaimTrafficFromOnePointBaseline(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 10, 300).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "m"}, 50, 50).Stage = "exec"
	q := x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	var pts []Point
	for _, p := range q.Points {
		if !p.Time().Before(x.onset.Add(-2 * time.Minute)) {
			pts = append(pts, p)
		}
	}
	pts[0].V = 4
	q.Points = pts
	a := x.analyze()
	for _, s := range saidBy(causeOf(t, a, CatCapacity)) {
		if strings.Contains(s, "rose ×") {
			t.Errorf("%q: one point before the onset", s)
		}
	}
	if a.Causes[0].Category == CatCapacity {
		t.Errorf("capacity first (%.2f) on traffic read from one point", a.Causes[0].Score)
	}
}

// v2 serves 10 % of the traffic, all of it slow, but v1 slowed too and
// holds 60 % of the slow requests: the scope said "version v2 carries the
// spike", and a rollback would leave most of them.
func TestOverclaimVersionCarriesSpikeOnMinorityShare(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 100, func(s *Sample, d bool) {
		k := s.Time.Second()
		if k < 2 {
			s.Version = "v2"
		}
		if d && k < 5 {
			s.TotalMs = 600
		}
	})
	a := x.analyze()
	found := false
	for _, v := range a.Scope.VersionImpact {
		if v.SlowShare != nil && *v.SlowShare < 0.5 {
			found = true
			if strings.Contains(a.Scope.Summary, "version "+v.Name+" carries the spike") || a.Scope.Breadth == "version" {
				t.Errorf("%q: %s holds %.0f%% of the slow requests", a.Scope.Summary, v.Name, 100**v.SlowShare)
			}
		}
	}
	if !found {
		t.Fatalf("fixture: no minority version in %+v", a.Scope)
	}
}

// Big's tenant share quoted from its 3 slow samples because small had
// 580: "Tenant acme sends 67% of big's slow requests".
func TestOverclaimTenantSentenceFromOtherModelsCount(t *testing.T) {
	x := newFixture()
	x.p99("big", 100, 800)
	x.p99("small", 100, 300)
	n := 0
	x.sampleRun(1, Scope{Model: "big", Version: "v1", Replica: "r"}, 100, 100, func(s *Sample, d bool) {
		s.Tenant = "beta"
		if d && n < 2 {
			s.TotalMs, s.Tenant = 900, "acme"
			n++
		}
	})
	x.sampleRun(20, Scope{Model: "small", Version: "v1", Replica: "r2"}, 100, 300, func(s *Sample, _ bool) { s.Tenant = "gamma" })
	a := x.analyze()
	if a.Impact[0].Model != "big" {
		t.Fatalf("fixture: first impact %s", a.Impact[0].Model)
	}
	if ans := a.Checklist[2].Answer; strings.Contains(ans, "Tenant acme sends") {
		t.Errorf("quotes acme's share of big's 3 slow samples: %q", ans)
	}
}

// Only a P95 curve: its figures were quoted as the "P99 rise (100 ms →
// 400 ms)".
func TestOverclaimTailClauseCallsP95P99(t *testing.T) {
	x := newFixture()
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "m"}, 100, 400)
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		during := 100.0
		if r == "r1" {
			during = 900
		}
		x.sampleRun(5, Scope{Model: "m", Version: "v1", Replica: r, Node: "n-" + r}, 100, during, nil)
	}
	a := x.analyze()
	if a.Impact[0].Quantile != "P95" {
		t.Fatalf("fixture: quantile %q", a.Impact[0].Quantile)
	}
	if ans := a.Checklist[2].Answer; strings.Contains(ans, "P99 rise (100 ms → 400 ms)") {
		t.Errorf("%q: those are the P95 curve's figures", ans)
	}
}

// A model measured by its mean latency alone (Triton without its
// summary): the rise is found and judged on the mean, and every quote
// names it "mean", never P99.
func TestMeanLatencyStandsInWhereNoQuantile(t *testing.T) {
	x := newFixture()
	x.curve(RoleLatencyMean, LevelModel, Scope{Model: "resnet"}, 20, 80)
	x.curve(RoleQPS, LevelModel, Scope{Model: "resnet"}, 10, 10)
	a := x.analyze()
	if len(a.Impact) == 0 || a.Impact[0].Model != "resnet" || a.Impact[0].Quantile != "mean" {
		t.Fatalf("impact %+v", a.Impact)
	}
	if a.Onset == nil {
		t.Error("no onset found on the mean")
	}
	for _, s := range []string{a.Headline.Title, a.Headline.Summary, a.Scope.Summary} {
		if strings.Contains(s, "P99") {
			t.Errorf("%q: the mean quoted as a P99", s)
		}
	}
	// A few request samples (too few for a sample curve) do not hide the
	// mean from the detection.
	z := newFixture()
	z.curve(RoleLatencyMean, LevelModel, Scope{Model: "resnet"}, 20, 80)
	z.curve(RoleQPS, LevelModel, Scope{Model: "resnet"}, 10, 10)
	z.sampleRun(2, Scope{Model: "resnet", Version: "v1", Replica: "r1"}, 20, 80, nil)
	if c := z.analyze(); c.Onset == nil || !c.Onset.Equal(z.onset) {
		t.Errorf("with a few samples: onset %v, want %v; headline %q", c.Onset, z.onset, c.Headline.Title)
	}
	// With a P99 curve too, the P99 is what is judged.
	y := newFixture()
	y.curve(RoleLatencyMean, LevelModel, Scope{Model: "resnet"}, 20, 20)
	y.p99("resnet", 100, 400)
	if b := y.analyze(); len(b.Impact) == 0 || b.Impact[0].Quantile != "P99" {
		t.Errorf("with a P99 curve: impact %+v", b.Impact)
	}
}

// A model whose latency only its request samples measure (traced over
// OTLP, no latency metric), in a fleet whose other models have curves: its
// spike is found in its samples, as it is when no model has a curve.
func TestSamplesOnlyModelBesideCurves(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 100)
	x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 10, 10)
	x.sampleRun(30, Scope{Model: "traced", Version: "v1", Replica: "t1"}, 100, 400, nil)
	for _, scope := range []Scope{{}, {Model: "traced"}} {
		a := Analyze(Input{
			Window: Window{From: fxStart, To: fxStart.Add(fxMinutes * time.Minute)},
			Curves: x.curves, Samples: x.samples, Step: time.Minute, Scope: scope,
		})
		if a.Onset == nil || a.Onset.Sub(x.onset).Abs() > time.Minute {
			t.Errorf("scope %+v: onset %v, want %v; headline %q", scope, a.Onset, x.onset, a.Headline.Title)
		}
		if len(a.Impact) == 0 || a.Impact[0].Model != "traced" {
			t.Errorf("scope %+v: impact %+v", scope, a.Impact)
		}
	}
}

// startFrom drops a curve's points before t: latency data that begins
// late.
func startFrom(c *Curve, t time.Time) {
	for len(c.Points) > 0 && c.Points[0].Time().Before(t) {
		c.Points = c.Points[1:]
	}
}
