package correlate

import (
	"strings"
	"testing"
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
