package correlate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// plantedSamples makes n samples over 20 replicas on 5 nodes, 4 tenants,
// 2 versions. Requests on replica r-7 are slow with probability badP,
// others with goodP. Every fifth sample is head-sampled 1 in 10 (weight
// 10) to check that weights are honoured.
func plantedSamples(n int, badP, goodP float64, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]Sample, n)
	for i := range out {
		rep := rng.IntN(20)
		p := goodP
		if rep == 7 {
			p = badP
		}
		total := 50 + 10*rng.Float64()
		if rng.Float64() < p {
			total = 500 + 100*rng.Float64()
		}
		rate := 1.0
		if i%5 == 0 {
			rate = 10
		}
		out[i] = Sample{
			RequestID: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Model: "m",
			Version: fmt.Sprintf("v%d", rng.IntN(2)), Tenant: fmt.Sprintf("t%d", rng.IntN(4)),
			Replica: fmt.Sprintf("r-%d", rep), Node: fmt.Sprintf("n-%d", rep%5), Entry: "/v1/m",
			BatchSize: 1 + rng.IntN(8), Status: "ok", TotalMs: total, SampleRate: rate,
		}
		for k := range out[i].StagesMs {
			out[i].StagesMs[k] = total / float64(NumStages)
		}
	}
	return out
}

// table puts samples into a concentration table with slow = total > 200.
func table(samples []Sample) concTable {
	ss := &sampleSet{all: samples, slow: make([]bool, len(samples)), byModel: map[string]*sampleStats{}}
	for i := range samples {
		ss.during = append(ss.during, int32(i))
		ss.slow[i] = samples[i].TotalMs > 200
	}
	return ss.concentrationTable(nil)
}

func TestConcentrationFindsPlantedReplica(t *testing.T) {
	t.Parallel()
	// methods §8 anchor 8: a bad replica (30 % slow vs 1 %) is found with a
	// risk ratio within 5 % of the truth and ranked first.
	samples := plantedSamples(200000, 0.30, 0.01, 1)
	rows := concentrate(table(samples), ConcentrationOptions{})
	if len(rows) == 0 {
		t.Fatal("no concentration found")
	}
	top := rows[0]
	if top.Dims["replica"] != "r-7" || len(top.Dims) != 1 {
		t.Fatalf("top row %v, want replica r-7", top.Dims)
	}
	if math.Abs(top.RiskRatio-30)/30 > 0.05 {
		t.Errorf("risk ratio %.1f, want 30 ±5%%", top.RiskRatio)
	}
	if top.P99WithoutMs >= 200 || top.P99DeltaMs <= 0 {
		t.Errorf("without r-7 the P99 should drop below the slow band: %.0f (delta %.0f)", top.P99WithoutMs, top.P99DeltaMs)
	}
	// Its node (n-2 hosts r-2, r-7, r-12, r-17) is a weaker, diluted signal.
	for _, r := range rows {
		if r.Dims["node"] == "n-2" && r.RiskRatio >= top.RiskRatio {
			t.Errorf("node row %v should rank below the replica", r)
		}
	}
}

func TestConcentrationQuietWhenUniform(t *testing.T) {
	t.Parallel()
	rows := concentrate(table(plantedSamples(50000, 0.02, 0.02, 2)), ConcentrationOptions{})
	if len(rows) != 0 {
		t.Fatalf("uniformly slow requests concentrate on %v", rows[0].Dims)
	}
}

func TestConcentrationPairsAddInformation(t *testing.T) {
	t.Parallel()
	// Slow only for tenant t1 on version v1: each alone is a weak signal,
	// the pair is the explanation.
	rng := rand.New(rand.NewPCG(3, 3))
	samples := plantedSamples(60000, 0.01, 0.01, 3)
	for i := range samples {
		s := &samples[i]
		if s.Tenant == "t1" && s.Version == "v1" && rng.Float64() < 0.4 {
			s.TotalMs = 700
		}
	}
	rows := concentrate(table(samples), ConcentrationOptions{})
	if len(rows) == 0 || rows[0].Dims["tenant"] != "t1" || rows[0].Dims["version"] != "v1" {
		t.Fatalf("top rows %v, want the pair tenant=t1 version=v1 first", rows)
	}
}

func TestStageAttribution(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	var samples []Sample
	ph := newPhases(t0.Add(time.Hour), time.Time{}, t0, t0.Add(2*time.Hour))
	for i := 0; i < 40000; i++ {
		ts := t0.Add(time.Duration(rng.IntN(int(90 * time.Minute))))
		s := Sample{RequestID: fmt.Sprint(i), Time: ts, Model: "m", SampleRate: 1}
		for k := range s.StagesMs {
			s.StagesMs[k] = 5 + 2*rng.NormFloat64()
		}
		s.StagesMs[StageExec] = 40 + 10*rng.NormFloat64()
		if ph.inDuring(ts) {
			s.StagesMs[StageBatchWait] += 120 + 20*rng.NormFloat64() // the batch window grew
		}
		s.StagesMs[StageDownstream] = math.NaN() // this model calls no dependency
		for _, v := range s.StagesMs {
			if !math.IsNaN(v) {
				s.TotalMs += v
			}
		}
		samples = append(samples, s)
	}
	ss := newSampleSet(samples, ph, func(string) (float64, bool) { return 0, false }, nil)
	st := stageAttributionFromSamples(ss, []string{"m"})
	byName := map[string]StageShare{}
	for _, s := range st {
		byName[s.Stage] = s
	}
	bw := byName["batch_wait"]
	if bw.Share < 0.8 || bw.DeltaMs < 100 || bw.DeltaLoMs > bw.DeltaMs || bw.DeltaHiMs < bw.DeltaMs || bw.DeltaHiMs-bw.DeltaLoMs > 20 {
		t.Errorf("batch_wait %+v, want ~+120 ms with a tight interval and most of the share", bw)
	}
	if _, ok := byName["downstream"]; ok {
		t.Errorf("a stage nobody reported should not appear: %+v", byName["downstream"])
	}
	if ex := byName["exec"]; math.Abs(ex.DeltaMs) > 10 {
		t.Errorf("exec moved %.1f ms, want ~0", ex.DeltaMs)
	}
}

// colinearSamples: model m1 runs only v3 behind entry /e1 and is slow a
// third of the time; m2 runs v1 behind /e2 and is fast. m1's version, model
// and entry select the same requests.
func colinearSamples() []Sample {
	var out []Sample
	for i := 0; i < 3000; i++ {
		s := Sample{RequestID: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Model: "m2", Version: "v1",
			Entry: "/e2", Tenant: fmt.Sprintf("t%d", i%4), Replica: fmt.Sprintf("r%d", i%6), TotalMs: 50, SampleRate: 1}
		if i%2 == 0 {
			s.Model, s.Version, s.Entry = "m1", "v3", "/e1"
			if i%3 == 0 {
				s.TotalMs = 500
			}
		}
		out = append(out, s)
	}
	return out
}

func TestConcentrationFoldsColinearRows(t *testing.T) {
	t.Parallel()
	rows := concentrate(table(colinearSamples()), ConcentrationOptions{})
	n := 0
	for _, r := range rows {
		if _, ok := r.value("version"); ok && len(r.Dims) == 1 {
			n++
			if r.Dims["version"] != "v3" || r.Also["model"] != "m1" || r.Also["entry"] != "/e1" {
				t.Errorf("folded row %+v", r)
			}
			if r.Label != "version=v3 ≡ model=m1 ≡ entry=/e1" {
				t.Errorf("label %q", r.Label)
			}
		}
		for _, dim := range []string{"model", "entry"} {
			if _, ok := r.Dims[dim]; ok && len(r.Dims) == 1 {
				t.Errorf("%s still has a row of its own: %+v", dim, r)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d rows for version v3, want one; rows %+v", n, rows)
	}
}

// TestP99WithoutWithinScope: removing a bad version is judged against its
// own model's P99, not against a window P99 that another, slower model
// sets.
func TestP99WithoutWithinScope(t *testing.T) {
	t.Parallel()
	var samples []Sample
	for i := 0; i < 6000; i++ {
		s := Sample{RequestID: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Model: "fast", Version: "v1",
			Replica: fmt.Sprintf("r%d", i%5), TotalMs: 100, SampleRate: 1}
		switch {
		case i%3 == 0:
			s.Model, s.Version, s.TotalMs = "slowpoke", "v9", 400+float64(i%7) // always slower, not the incident
		case i%3 == 1 && i%2 == 0:
			s.Version = "v2" // the bad release
			if i%4 == 0 {
				s.TotalMs = 1000
			}
		}
		samples = append(samples, s)
	}
	ss := &sampleSet{all: samples, slow: make([]bool, len(samples)), byModel: map[string]*sampleStats{}}
	for i := range samples {
		ss.during = append(ss.during, int32(i))
		ss.slow[i] = samples[i].TotalMs > 200 && samples[i].Model == "fast"
	}
	rows := concentrate(ss.concentrationTable(nil), ConcentrationOptions{})
	for _, r := range rows {
		if r.Dims["version"] != "v2" || len(r.Dims) != 1 {
			continue
		}
		if !slices.Equal(r.Models, []string{"fast"}) {
			t.Errorf("scope %v, want the model the version belongs to", r.Models)
		}
		if r.P99WithoutMs != 100 || r.P99Ms != 1000 || r.P99DeltaMs != 900 {
			t.Errorf("P99 %.0f, without %.0f (Δ %.0f); want 1000 → 100 within model fast", r.P99Ms, r.P99WithoutMs, r.P99DeltaMs)
		}
		return
	}
	t.Fatalf("no row for version v2: %+v", rows)
}

// Five slow samples, all on one replica, are a coincidence the table must
// not present as a finding: below minSlowToJudge no row is formed (the
// checklist says too few were sampled); ten or more are judged.
func TestConcentrationNeedsEnoughSlowSamples(t *testing.T) {
	t.Parallel()
	build := func(slow int) []Sample {
		var out []Sample
		for i := range 400 {
			s := Sample{RequestID: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Model: "m",
				Replica: fmt.Sprintf("r-%d", i%8), Status: "ok", TotalMs: 50, SampleRate: 1}
			if i%8 == 3 && i/8 < slow {
				s.TotalMs = 900
			}
			out = append(out, s)
		}
		return out
	}
	if rows := concentrate(table(build(minSlowToJudge-1)), ConcentrationOptions{}); len(rows) != 0 {
		t.Errorf("%d slow samples formed rows: %v", minSlowToJudge-1, rows[0].Dims)
	}
	if rows := concentrate(table(build(minSlowToJudge)), ConcentrationOptions{}); len(rows) == 0 || rows[0].Dims["replica"] != "r-3" {
		t.Errorf("%d slow samples on r-3: rows %v, want r-3 first", minSlowToJudge, rows)
	}
}
