package diagnose_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store/storetest"
)

// BenchmarkIncidentAnalysis measures an incident window holding 1,000,000
// samples and 1,000 curves (issue target: ready in ≤ 2 s), split into the
// Postgres part (LoadInput) and the Go part (correlate.Analyze).
func BenchmarkIncidentAnalysis(b *testing.B) {
	ctx := context.Background()
	st, pool := storetest.NewWithPool(b)
	from := t0
	onset := t0.Add(90 * time.Minute)
	to := t0.Add(135 * time.Minute)
	rng := rand.New(rand.NewPCG(3, 3))
	var curves []correlate.Curve
	for i := 0; i < 1000; i++ {
		model := fmt.Sprintf("m%d", i%10)
		c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
			Scope: correlate.Scope{Model: model, Replica: fmt.Sprintf("%s-r%d", model, i/4), Node: fmt.Sprintf("n%d", (i/4)%25)}}
		switch {
		case i < 10:
			c.Level, c.Scope = correlate.LevelModel, correlate.Scope{Model: model}
		case i%4 == 1:
			c.Role = correlate.RoleQPS
		case i%4 == 2:
			c.Role, c.Stage = correlate.RoleStageTime, correlate.Stage(i%correlate.NumStages).String()
		case i%4 == 3:
			c.Role = correlate.RoleQueue
		}
		for ts := from.Add(-70 * time.Minute); ts.Before(to); ts = ts.Add(15 * time.Second) {
			v := 100 * math.Exp(0.1*rng.NormFloat64())
			if !ts.Before(onset) && (c.Scope.Node == "n3" || c.Level == correlate.LevelModel) {
				v *= 2
			}
			c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v})
		}
		curves = append(curves, c)
	}
	storetest.WriteCurves(b, st, curves)
	const n = 1_000_000
	span := to.Sub(from)
	batch := make([]correlate.Sample, 0, 50000)
	for i := 0; i < n; i++ {
		ts := from.Add(time.Duration(float64(span) * float64(i) / n))
		rep := rng.IntN(400)
		node := fmt.Sprintf("n%d", rep%25)
		s := correlate.Sample{RequestID: fmt.Sprintf("req-%d", i), Time: ts, Model: fmt.Sprintf("m%d", rep%10), Version: "v1",
			Tenant: fmt.Sprintf("t%d", rng.IntN(20)), Replica: fmt.Sprintf("m%d-r%d", rep%10, rep/10), Node: node,
			Entry: "/v1/x", BatchSize: 1 + rng.IntN(16), Status: "ok", SampleRate: 1}
		for k := range s.StagesMs {
			s.StagesMs[k] = 10 * math.Exp(0.3*rng.NormFloat64())
		}
		if !ts.Before(onset) && node == "n3" {
			s.StagesMs[correlate.StageExec] *= 5
		}
		for _, v := range s.StagesMs {
			s.TotalMs += v
		}
		batch = append(batch, s)
		if len(batch) == cap(batch) || i == n-1 {
			if _, _, err := st.InsertSamples(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// What autovacuum does to freshly loaded data (hint bits, statistics),
	// so the figure is the steady state rather than the first read after a
	// bulk load.
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE samples`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE points`); err != nil {
		b.Fatal(err)
	}
	w := correlate.Window{From: from, To: to}
	// One read before timing: the window's pages in the OS cache, as they
	// are for an incident whose samples were just ingested.
	if _, err := diagnose.LoadInput(ctx, st, w, correlate.Scope{}, nil); err != nil {
		b.Fatal(err)
	}
	var load, analyze time.Duration
	var samples int
	b.ResetTimer()
	for b.Loop() {
		t1 := time.Now()
		in, err := diagnose.LoadInput(ctx, st, w, correlate.Scope{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		a := correlate.Analyze(in)
		t3 := time.Now()
		if a.Causes[0].Category != correlate.CatLocalReplica {
			b.Fatalf("top cause %s", a.Causes[0].Category)
		}
		load += t2.Sub(t1)
		analyze += t3.Sub(t2)
		samples = len(in.Samples)
	}
	b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "postgres-ms/op")
	b.ReportMetric(float64(analyze.Milliseconds())/float64(b.N), "go-ms/op")
	b.ReportMetric(float64(samples), "samples-read")
}
