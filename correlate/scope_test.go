package correlate

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestModelImpacts(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("tripled", 100, 300)
	x.p99("steady", 100, 104)
	x.p99("mild", 200, 260) // ×1.3, many spreads away: affected
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "p95only"}, 100, 180)
	x.curve(RoleLatencyP95, LevelModel, Scope{Model: "tripled"}, 50, 51) // P99 wins over P95
	// A model seen only in samples: 0.5 % slow before, a third slow during.
	x.sampleRun(30, Scope{Model: "sampled", Replica: "s-1"}, 100, 100, func(s *Sample, during bool) {
		if (during && s.Time.Second()%3 == 0) || (s.Time.Minute()%7 == 0 && s.Time.Second() == 0) {
			s.TotalMs = 900
		}
	})
	f := x.facts()
	got := map[string]modelImpact{}
	var order []string
	for _, m := range f.models {
		got[m.model] = m
		order = append(order, m.model)
	}
	for model, want := range map[string]bool{"tripled": true, "steady": false, "mild": true, "p95only": true, "sampled": true} {
		if got[model].affected != want {
			t.Errorf("%s: affected %v, want %v (%+v)", model, got[model].affected, want, got[model])
		}
	}
	if m := got["tripled"]; !m.fromCurve || math.Abs(m.ratio-3) > 0.1 || m.before < 95 || m.before > 105 {
		t.Errorf("tripled: %+v, want the P99 curve's ×3 from 100", m)
	}
	if m := got["sampled"]; m.fromCurve || m.slowFrac < 0.3 || m.slowBase > 0.05 {
		t.Errorf("sampled: %+v, want a slow share of a third against a few percent", m)
	}
	if order[len(order)-1] != "steady" || slices.Index(order, "tripled") > slices.Index(order, "mild") {
		t.Errorf("order %v: the hardest hit first (×3 before ×1.3), the unaffected last", order)
	}
}

func TestReplicaOutliers(t *testing.T) {
	t.Parallel()
	t.Run("TwoReplicasLeaveOneOut", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.p99("m", 100, 200)
		x.replica("m", "a", "n1", 100, 300, 10, 10)
		x.replica("m", "b", "n2", 100, 105, 10, 10)
		reps := x.facts().allReps["m"]
		if len(reps) != 2 || reps[0].replica != "a" || !reps[0].outlier || reps[1].outlier {
			t.Fatalf("reps %+v: want a alone standing out, first", reps)
		}
		if math.Abs(reps[0].peerMedian-105) > 5 {
			t.Errorf("a's peer median %.1f, want b's P99 alone (≈105)", reps[0].peerMedian)
		}
	})
	t.Run("AlwaysSlowerIsNotNews", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.p99("m", 100, 100)
		x.replica("m", "old-gpu", "n1", 250, 255, 10, 10)
		x.replica("m", "b", "n2", 100, 101, 10, 10)
		x.replica("m", "c", "n3", 100, 99, 10, 10)
		for _, r := range x.facts().allReps["m"] {
			if r.outlier {
				t.Errorf("%s marked an outlier: %+v", r.replica, r)
			}
		}
	})
	t.Run("NewReplicaByLevel", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.p99("m", 100, 150)
		x.replica("m", "new", "n1", math.NaN(), 400, math.NaN(), 10)
		x.replica("m", "b", "n2", 100, 100, 10, 10)
		x.replica("m", "c", "n3", 100, 102, 10, 10)
		reps := x.facts().allReps["m"]
		if reps[0].replica != "new" || !reps[0].outlier || !math.IsNaN(reps[0].ratio) {
			t.Errorf("a new replica 4× its peers must stand out on its level alone: %+v", reps[0])
		}
		if !reps[0].young {
			t.Errorf("a replica whose curves start at the onset is young: %+v", reps[0])
		}
	})
	t.Run("FromSamples", func(t *testing.T) {
		t.Parallel()
		x := newFixture()
		x.sampleRun(20, Scope{Model: "m", Replica: "a", Node: "n1"}, 100, 500, nil)
		x.sampleRun(20, Scope{Model: "m", Replica: "b", Node: "n2"}, 100, 100, nil)
		x.sampleRun(20, Scope{Model: "m", Replica: "c", Node: "n3"}, 100, 100, nil)
		reps := x.facts().allReps["m"]
		if len(reps) != 3 || reps[0].replica != "a" || !reps[0].outlier || reps[0].node != "n1" {
			t.Fatalf("reps from samples %+v: want a first, standing out, on n1", reps)
		}
		if math.Abs(reps[0].loadDuring-1) > 0.05 {
			t.Errorf("even traffic: relative load %.2f, want 1", reps[0].loadDuring)
		}
	})
}

func TestRelativeLoadsAndImbalance(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.replica("m", "hot", "n1", 100, 100, 10, 30)
	x.replica("m", "b", "n2", 100, 100, 10, 5)
	x.replica("m", "c", "n3", 100, 100, 10, 5)
	cs := newCurveSet(x.curves)
	loads := relativeLoads(cs.get(RoleQPS, LevelReplica, Scope{Model: "m"}, ""))
	before, during := periodMedian(loads["hot"], x.ph.BeforeFrom, x.ph.BeforeTo), periodMedian(loads["hot"], x.ph.Onset, x.ph.DuringTo)
	if math.Abs(before-1) > 0.05 || math.Abs(during-2.25) > 0.1 {
		t.Errorf("hot replica's relative load %.2f → %.2f, want 1 → 2.25 (30 of 40 over 3)", before, during)
	}
	ib, id := imbalance(cs, x.ph, "m")
	if math.Abs(ib-1) > 0.05 || math.Abs(id-2.25) > 0.1 {
		t.Errorf("imbalance %.2f → %.2f, want 1 → 2.25", ib, id)
	}
}

func TestScopeReportBreadth(t *testing.T) {
	t.Parallel()
	hit := func(name string, ratio float64) modelImpact {
		return modelImpact{model: name, before: 100, during: 100 * ratio, ratio: ratio, slowFrac: math.NaN(), affected: ratio >= 1.2}
	}
	reps := func(model string, n, outliers int) []replicaImpact {
		var out []replicaImpact
		for i := 0; i < n; i++ {
			out = append(out, replicaImpact{replica: model + "-" + string(rune('a'+i)), model: model, node: "n1", outlier: i < outliers})
		}
		return out
	}
	cases := []struct {
		name    string
		models  []modelImpact
		reps    map[string][]replicaImpact
		conc    []Concentration
		breadth string
		says    string
	}{
		{"none", []modelImpact{hit("a", 1), hit("b", 1.05)}, nil, nil, "none", "No model"},
		{"replicas", []modelImpact{hit("a", 2), hit("b", 1)}, map[string][]replicaImpact{"a": reps("a", 4, 1)}, nil, "replicas", "1 of 4 replicas of a"},
		{"version", []modelImpact{hit("a", 2), hit("b", 1)}, map[string][]replicaImpact{"a": reps("a", 4, 0)},
			[]Concentration{{Dims: map[string]string{"version": "v2"}, Support: 0.9}}, "version", "a version v2"},
		{"fleet", []modelImpact{hit("a", 2), hit("b", 2), hit("c", 1.5)}, nil, nil, "fleet", "3 of 3 models"},
		{"model", []modelImpact{hit("a", 2), hit("b", 1), hit("c", 1)}, map[string][]replicaImpact{"a": reps("a", 3, 0)}, nil, "model", "across its replicas: a"},
		{"model without replica data", []modelImpact{hit("a", 2), hit("b", 1), hit("c", 1)}, nil, nil, "model", "One model slowed down: a."},
		{"models", []modelImpact{hit("a", 2), hit("b", 1.5), hit("c", 1), hit("d", 1), hit("e", 1)}, nil, nil, "models", "Several models"},
		{"tenant", []modelImpact{hit("a", 2), hit("b", 1)}, nil,
			[]Concentration{{Dims: map[string]string{"tenant": "t-1"}, Support: 0.8}}, "model", "tenant t-1"},
	}
	scopeOf := func(models []modelImpact, reps map[string][]replicaImpact, conc []Concentration) ScopeReport {
		var affected []string
		for _, m := range models {
			if m.affected {
				affected = append(affected, m.model)
			}
		}
		sr := scopeLists(affected, reps, conc)
		summarizeScope(&sr, len(models), reps, conc)
		return sr
	}
	for _, c := range cases {
		sr := scopeOf(c.models, c.reps, c.conc)
		if sr.Breadth != c.breadth || !strings.Contains(sr.Summary, c.says) {
			t.Errorf("%s: breadth %q, summary %q; want %q saying %q", c.name, sr.Breadth, sr.Summary, c.breadth, c.says)
		}
	}
	sr := scopeOf([]modelImpact{hit("a", 2), hit("b", 1)}, map[string][]replicaImpact{"a": reps("a", 4, 1)}, nil)
	if !slices.Equal(sr.Replicas, []string{"a-a"}) || !slices.Equal(sr.Nodes, []string{"n1"}) {
		t.Errorf("replicas %v nodes %v, want the outlier and its node", sr.Replicas, sr.Nodes)
	}
}

// TestSeveralModelsOrderedByImpact: the scope lists the hardest hit model
// first, with its P99 ratio and share of the slow requests.
func TestSeveralModelsOrderedByImpact(t *testing.T) {
	t.Parallel()
	x := newFixture()
	for _, m := range []struct {
		name           string
		before, during float64
		slowEvery      int // during, one request in slowEvery is slow
	}{{"mild", 100, 150, 20}, {"worst", 100, 420, 3}, {"middle", 100, 220, 6}, {"calm", 100, 101, 0}} {
		x.p99(m.name, m.before, m.during)
		x.sampleRun(30, Scope{Model: m.name, Replica: m.name + "-1", Tenant: "t"}, 50, 50, func(s *Sample, during bool) {
			if during && m.slowEvery > 0 && s.Time.Second()%m.slowEvery == 0 {
				s.TotalMs = 1000
			}
		})
	}
	f := x.facts()
	sr := f.scopeReport()
	if !slices.Equal(sr.Models, []string{"worst", "middle", "mild"}) {
		t.Fatalf("models %v, want hardest hit first", sr.Models)
	}
	var shares float64
	for i, e := range sr.ModelImpact {
		if e.Name != sr.Models[i] || e.P99Ratio <= 1 || e.SlowShare == nil {
			t.Errorf("entry %d: %+v", i, e)
			continue
		}
		shares += *e.SlowShare
	}
	if math.Abs(sr.ModelImpact[0].P99Ratio-4.2) > 0.2 {
		t.Errorf("worst: ×%.2f, want ×4.2", sr.ModelImpact[0].P99Ratio)
	}
	if math.Abs(shares-1) > 0.01 || *sr.ModelImpact[0].SlowShare < *sr.ModelImpact[2].SlowShare {
		t.Errorf("slow shares %v do not add up or are not ordered", sr.ModelImpact)
	}
	if !strings.Contains(sr.Summary, "worst (P99 ×4.2)") {
		t.Errorf("summary %q should give the impact", sr.Summary)
	}
}

// TestFlatSeriesNextToMovingOne: a flat error rate that blips and a flat
// request rate that wiggles stay small next to a latency that doubled,
// on the raw deviation and on the comparable score.
func TestFlatSeriesNextToMovingOne(t *testing.T) {
	t.Parallel()
	x := newFixture()
	lat := x.curve(RoleLatencyP99, LevelModel, Scope{Model: "m"}, 100, 200)
	errs := x.curve(RoleErrorRate, LevelModel, Scope{Model: "m"}, 0, 0)
	for i := range errs.Points {
		errs.Points[i].V = 0
	}
	errs.Points[80].V, errs.Points[81].V = 0.004, 0.004 // two failed requests in a row
	qps := x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 0.5, 0.5)
	for i := range qps.Points {
		qps.Points[i].V = 0.5
		if i >= 75 && i < 80 {
			qps.Points[i].V = 0.55
		}
	}
	devs := topDeviations(newCurveSet(x.curves), x.ph, 10)
	if len(devs) != 3 || devs[0].Key != lat.Key() {
		t.Fatalf("deviations %+v, want the latency first", devs)
	}
	for _, d := range devs[1:] {
		if math.Abs(d.Deviation) > 5 || d.Score > 0.3 {
			t.Errorf("%s: deviation %.1f score %.2f, want small next to the latency's %.1f / %.2f", d.Key, d.Deviation, d.Score, devs[0].Deviation, devs[0].Score)
		}
	}
	if devs[0].Score < 0.8 || math.Abs(devs[0].Ratio-2) > 0.1 {
		t.Errorf("latency: score %.2f ratio %.2f, want ≥ 0.8 and ×2", devs[0].Score, devs[0].Ratio)
	}
}
