package correlate

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestQPSRatio(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("curved", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "curved"}, 50, 100)
	// No QPS curve: the sample weights say traffic tripled.
	x.p99("sampled", 100, 300)
	x.sampleRun(2, Scope{Model: "sampled", Replica: "r"}, 100, 100, func(s *Sample, during bool) {
		if during {
			s.SampleRate = 3
		}
	})
	x.p99("unknown", 100, 300)
	// Samples before the onset and none during: the feed stopped, traffic
	// did not fall to nothing.
	x.p99("stopped", 100, 300)
	x.sampleRun(2, Scope{Model: "stopped", Replica: "r"}, 100, 100, nil)
	x.samples = slices.DeleteFunc(x.samples, func(s Sample) bool { return s.Model == "stopped" && !s.Time.Before(x.onset) })
	f := x.facts()
	if r := f.qpsRatio("stopped"); !math.IsNaN(r) {
		t.Errorf("no sample during the spike: ×%.2f, want NaN (cannot tell)", r)
	}
	if r := f.qpsRatio("curved"); math.Abs(r-2) > 0.05 {
		t.Errorf("from the QPS curve: ×%.2f, want ×2", r)
	}
	if r := f.qpsRatio("sampled"); math.Abs(r-3) > 0.05 {
		t.Errorf("from sample weights: ×%.2f, want ×3", r)
	}
	if r := f.qpsRatio("unknown"); !math.IsNaN(r) {
		t.Errorf("no traffic data: ×%.2f, want NaN", r)
	}
	if r := f.affectedQPSRatio(); math.Abs(r-2.5) > 0.05 {
		t.Errorf("affected models' traffic: ×%.2f, want the median of 2 and 3", r)
	}
}

func TestBreadth(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("a", 100, 300)
	x.p99("b", 100, 100)
	x.p99("c", 100, 101)
	x.p99("d", 100, 250)
	x.curve(RoleQPS, LevelModel, Scope{Model: "no-latency"}, 10, 10) // not judged: no latency
	f := x.facts()
	if n := f.modelsWithData(); n != 4 {
		t.Errorf("models with data %d, want 4", n)
	}
	if b := f.breadth(); b != 0.5 {
		t.Errorf("breadth %.2f, want 2 of 4", b)
	}
	if m, ok := f.impact("d"); !ok || !m.affected {
		t.Errorf("impact(d) = %+v, %v", m, ok)
	}
}

func TestVersionStats(t *testing.T) {
	t.Parallel()
	t.Run("FromSamples", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.sampleRun(10, Scope{Model: "m", Version: "v1", Replica: "a"}, 100, 100, nil)
		x.sampleRun(10, Scope{Model: "m", Version: "v2", Replica: "b"}, 100, 400, func(s *Sample, during bool) {
			if !during {
				s.Version = "v1" // b ran v1 until the onset
			}
		})
		vs := x.facts().versionStats("m")
		if len(vs) != 2 || vs[0].version != "v1" || vs[1].version != "v2" {
			t.Fatalf("versions %+v", vs)
		}
		v1, v2 := vs[0], vs[1]
		if v1.shareBefore != 1 || math.Abs(v2.shareDuring-0.5) > 0.01 || v2.shareBefore != 0 {
			t.Errorf("shares: v1 before %.2f, v2 %.2f → %.2f; want 1, 0 → 0.5", v1.shareBefore, v2.shareBefore, v2.shareDuring)
		}
		if v2.p99During < 350 || v1.p99During > 110 {
			t.Errorf("P99 during: v1 %.0f, v2 %.0f; want 100 and 400", v1.p99During, v2.p99During)
		}
	})
	t.Run("FromCurves", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.p99("m", 100, 250)
		x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v1"}, 100, 100)
		x.curve(RoleLatencyP99, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 400)
		x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v1"}, 10, 5)
		x.curve(RoleQPS, LevelVersion, Scope{Model: "m", Version: "v2"}, math.NaN(), 5)
		vs := x.facts().versionStats("m")
		if len(vs) != 2 || math.Abs(vs[1].shareDuring-0.5) > 0.02 || vs[1].shareBefore != 0 || !math.IsNaN(vs[1].p99Before) {
			t.Errorf("versions from curves %+v: want v2 new, half the traffic during", vs)
		}
		if !math.IsNaN(vs[0].slowFracDuring()) {
			t.Errorf("curves know no slow fractions: %v", vs[0].slowFracDuring())
		}
	})
}

func TestNodeImpactsFindSickNode(t *testing.T) {
	t.Parallel()
	x := newFixture()
	for _, m := range []string{"a", "b"} {
		x.p99(m, 100, 130)
		x.replica(m, m+"-sick", "sick", 100, 190, 10, 10) // ×1.9 against peers' ×1.0
		x.replica(m, m+"-1", "n1", 100, 101, 10, 10)
		x.replica(m, m+"-2", "n2", 100, 99, 10, 10)
	}
	f := x.facts()
	nodes := f.nodeImpacts()
	if len(nodes) == 0 || nodes[0].node != "sick" || nodes[0].models != 2 || nodes[0].worse != 2 || nodes[0].excess < 1.7 {
		t.Fatalf("node impacts %+v: want the sick node first with both models' pods worse", nodes)
	}
	if n := f.sickNode(); n == nil || n.node != "sick" {
		t.Errorf("sickNode = %+v", n)
	}
}

func TestConcentrationLookups(t *testing.T) {
	t.Parallel()
	f := &facts{conc: []Concentration{
		{Dims: map[string]string{"replica": "r-1", "node": "n1"}, RiskRatio: 50, Support: 0.9},
		{Dims: map[string]string{"replica": "r-2"}, RiskRatio: 3, Support: 0.2},
		{Dims: map[string]string{"replica": "r-3"}, RiskRatio: 10, Support: 0.6},
		{Dims: map[string]string{"node": "n1"}, RiskRatio: 4, Support: 0.3},
		{Dims: map[string]string{"version": "v2"}, RiskRatio: 8, Support: 0.7},
	}}
	if c, ok := f.topConcentration("replica"); !ok || c.Dims["replica"] != "r-3" {
		t.Errorf("top replica %+v: pairs do not count, r-3 has the largest support × log RR", c)
	}
	if c, ok := f.topLocal(); !ok || c.Dims["replica"] != "r-3" {
		t.Errorf("top local %+v, want r-3 (stronger than node n1)", c)
	}
	if _, ok := f.concentrationOf("version", "v2"); !ok {
		t.Error("version v2 not found")
	}
	if _, ok := f.concentrationOf("version", "v3"); ok {
		t.Error("version v3 found")
	}
	if s := concStrength(Concentration{RiskRatio: 1, Support: 1}); s != 0 {
		t.Errorf("no lift, strength %.2f", s)
	}
}

func TestReplicaStartsAndYouth(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 200)
	x.replica("m", "old", "n1", 100, 100, 10, 10)
	x.replica("m", "fresh", "n2", math.NaN(), 300, math.NaN(), 10) // curves start at the onset
	x.events = []Event{{Kind: KindReplicaStart, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m", Replica: "pushed"}}}
	f := x.facts()
	if _, ok := f.started["old"]; ok {
		t.Error("a replica whose curves start with the data did not start in it")
	}
	if !f.started["pushed"].Equal(x.onset.Add(-3 * time.Minute)) {
		t.Errorf("replica_start event: %v", f.started["pushed"])
	}
	if got := f.startedNear("m", 10*time.Minute); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("started near the onset: %v, want fresh (pushed has no curves to give its model)", got)
	}
	if m := f.replicaModel("fresh"); m != "m" {
		t.Errorf("replicaModel(fresh) = %q", m)
	}
}

func TestStageShares(t *testing.T) {
	t.Parallel()
	f := &facts{stages: []StageShare{{Stage: "gateway", Share: 0.2}, {Stage: "auth", Share: 0.1}, {Stage: "exec", Share: 0.7}}}
	if s := f.frontShare(); math.Abs(s-0.3) > 1e-9 {
		t.Errorf("front share %.2f, want gateway + auth", s)
	}
}

// TestLocalReplicaWorsenedAlone: on a mixed fleet a replica on a faster
// GPU doubles its P99 (100 → 196 ms) and still sits not far above its
// slower peers (about 135 ms), which barely moved. Its change against
// theirs is evidence of a local fault; the same rise with 50 % more
// traffic on it is not (routing's case).
func TestLocalReplicaWorsenedAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		qpsDuring float64
		want      bool
	}{{"same traffic", 10, true}, {"more traffic", 15, false}} {
		x := newFixture()
		x.p99("m", 120, 150)
		x.replica("m", "fast", "a100", 100, 196, 10, c.qpsDuring)
		x.replica("m", "slow-1", "l40s-1", 125, 135, 10, 10)
		x.replica("m", "slow-2", "l40s-2", 130, 140, 10, 10)
		x.replica("m", "slow-3", "l40s-3", 118, 128, 10, 10)
		got := false
		for _, e := range localReplicaCause(x.facts()).Evidence {
			if e.Name == "replica_worsened_alone" {
				got = e.Strength == 1
			}
		}
		if got != c.want {
			t.Errorf("%s: replica_worsened_alone at full strength = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTrafficNotUpSaysADrop(t *testing.T) {
	t.Parallel()
	for q, want := range map[float64]string{0.5: "fell (×0.50)", 0.9: "is steady (×0.90)", 1.15: "is steady (×1.15)", 1.2: "rose only ×1.20"} {
		if got := trafficNotUp(q); got != want {
			t.Errorf("trafficNotUp(%.2f) = %q, want %q", q, got, want)
		}
	}
}

// A stage that took a third of the tail's growth took part: only a share
// under 5 % is "did not grow".
func TestGrewLittleSaysTheShare(t *testing.T) {
	t.Parallel()
	if got := grewLittle(0.34, "explains"); got != "explains only 34% of the tail's growth" {
		t.Errorf("34%%: %q", got)
	}
	if got := grewLittle(0.02, "explain"); got != "did not grow (2% of the tail's growth)" {
		t.Errorf("2%%: %q", got)
	}
}

// The samples may be split at an earlier onset than the curves (their own
// P99 rose first). A tenant whose rate never changed must not read as a
// surge because its counts were split at one onset and divided by the
// spans of the other.
func TestTenantSurgeUsesTheSamplesPhases(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	for _, tenant := range []string{"a", "b"} {
		x.sampleRun(5, Scope{Model: "m", Tenant: tenant, Replica: "r"}, 100, 400, nil)
	}
	cs := newCurveSet(x.curves)
	ss := newSampleSet(x.samples, x.ph.startingAt(x.onset.Add(-8*time.Minute)), func(string) (float64, bool) { return 0, false }, nil)
	f := newFacts(cs, ss, x.ph, nil, Scope{})
	if tenant, r, _ := f.tenantSurge([]string{"m"}); tenant != "" {
		t.Errorf("steady tenants: %q surged ×%.2f", tenant, r)
	}
}
