package correlate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkConcentrate1M: all dimensions (9) and pairs over 1,000,000
// samples, the counterfactual P99 included (issue target ≤ 0.5 s).
func BenchmarkConcentrate1M(b *testing.B) {
	samples := plantedSamples(1_000_000, 0.3, 0.01, 1)
	started := map[string]time.Time{"r-3": t0}
	b.ResetTimer()
	for b.Loop() {
		ss := &sampleSet{all: samples, slow: make([]bool, len(samples)), byModel: map[string]*sampleStats{}, started: started}
		ss.during = make([]int32, len(samples))
		for i := range samples {
			ss.during[i] = int32(i)
			ss.slow[i] = samples[i].TotalMs > 200
		}
		rows := concentrate(ss.concentrationTable(nil), ConcentrationOptions{})
		if len(rows) == 0 {
			b.Fatal("nothing found")
		}
	}
}

// BenchmarkDetectSpikes50Models24h: P50, P95 and P99 of 50 models over 24 h
// at 15 s, each with the history the baseline reads before the window
// (SpikeOptions.History: 50 h at 15 s, for the seasonal baseline and the
// tail model) — 150 series × 17,760 points; issue target ≤ 1 s of Go time.
func BenchmarkDetectSpikes50Models24h(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var curves, loads [][]Point
	hist := int(SpikeOptions{Step: 15 * time.Second}.History() / (15 * time.Second))
	n := hist + 5760
	for m := 0; m < 150; m++ {
		pts, load := make([]Point, n), make([]Point, n)
		for i := range pts {
			daily := 1 + 0.2*math.Sin(2*math.Pi*float64(i)/5760)
			v := 200 * daily * math.Exp(0.1*rng.NormFloat64())
			if i > hist+3000 && i < hist+3100 && m%10 == 0 {
				v *= 4
			}
			pts[i] = Point{T: t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli(), V: v}
			load[i] = Point{T: pts[i].T, V: 40 * daily * math.Exp(0.05*rng.NormFloat64())}
		}
		curves, loads = append(curves, pts), append(loads, load)
	}
	b.ResetTimer()
	for b.Loop() {
		n := 0
		// As the detector judges stored latency curves: quantiles, with
		// their model's traffic.
		for i, c := range curves {
			n += len(DetectSpikes(c, SpikeOptions{Step: 15 * time.Second, Quantile: true, Load: loads[i/3]}))
		}
		if n < 15 {
			b.Fatalf("found %d spikes, want the 15 planted ones", n)
		}
	}
}

// BenchmarkAnalyzeGo is the Go side of an incident analysis: 1,000 curves
// of 540 points (135 min at 15 s) and the samples of a generated fleet
// scaled to about a million.
func BenchmarkAnalyzeGo(b *testing.B) {
	in := benchInput(1_000_000, 1000)
	b.ReportMetric(float64(len(in.Samples)), "samples")
	b.ResetTimer()
	for b.Loop() {
		a := Analyze(in)
		if len(a.Causes) == 0 {
			b.Fatal("no causes")
		}
	}
}

// benchInput makes an input with n samples and c curves over a 135-minute
// window whose last 45 minutes have one slow node.
func benchInput(n, c int) Input {
	rng := rand.New(rand.NewPCG(2, 2))
	from := t0
	onset := t0.Add(90 * time.Minute)
	to := t0.Add(135 * time.Minute)
	span := to.Sub(from.Add(-60 * time.Minute))
	in := Input{Window: Window{From: from, To: to}, Step: 15 * time.Second}
	for i := 0; i < c; i++ {
		model := fmt.Sprintf("m%d", i%10)
		cur := Curve{Role: RoleLatencyP99, Level: LevelReplica, Scope: Scope{Model: model, Replica: fmt.Sprintf("%s-r%d", model, i/10%40), Node: fmt.Sprintf("n%d", i%25)}}
		switch {
		case i < 10:
			cur.Level, cur.Scope = LevelModel, Scope{Model: model}
		case i%4 == 1:
			cur.Role = RoleQPS
		case i%4 == 2:
			cur.Role, cur.Stage = RoleStageTime, Stage(i%NumStages).String()
		}
		for t := from.Add(-60 * time.Minute); t.Before(to); t = t.Add(15 * time.Second) {
			v := 100 * math.Exp(0.1*rng.NormFloat64())
			if !t.Before(onset) && (cur.Scope.Node == "n3" || cur.Level == LevelModel) {
				v *= 2
			}
			cur.Points = append(cur.Points, Point{T: t.UnixMilli(), V: v})
		}
		in.Curves = append(in.Curves, cur)
	}
	in.Samples = make([]Sample, n)
	for i := range in.Samples {
		ts := from.Add(-60 * time.Minute).Add(time.Duration(rng.Int64N(int64(span))))
		rep := rng.IntN(400)
		node := fmt.Sprintf("n%d", rep%25)
		s := Sample{RequestID: fmt.Sprint(i), Time: ts, Model: fmt.Sprintf("m%d", rep%10), Version: "v1",
			Tenant: fmt.Sprintf("t%d", rng.IntN(20)), Replica: fmt.Sprintf("m%d-r%d", rep%10, rep/10), Node: node,
			Entry: "/v1/x", BatchSize: 1 + rng.IntN(16), Status: "ok", SampleRate: 1}
		for k := range s.StagesMs {
			s.StagesMs[k] = 10 * math.Exp(0.3*rng.NormFloat64())
		}
		if !ts.Before(onset) && node == "n3" {
			s.StagesMs[StageExec] *= 5
		}
		for _, v := range s.StagesMs {
			s.TotalMs += v
		}
		in.Samples[i] = s
	}
	return in
}
