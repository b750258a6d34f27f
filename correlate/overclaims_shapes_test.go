package correlate

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Shapes of real fleets' data under which the analysis said more than the
// data shows.

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
