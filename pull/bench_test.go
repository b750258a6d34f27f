package pull

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// benchBundle is the bundle BenchmarkPullBundle pulls:
// $WATERLINE_BENCH_BUNDLE, or 01-release among the shared scenarios.
func benchBundle(b *testing.B) string {
	if d := os.Getenv("WATERLINE_BENCH_BUNDLE"); d != "" {
		return d
	}
	root := os.Getenv("WATERLINE_SCENARIOS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "scenarios")
	}
	return filepath.Join(root, "01-release")
}

// BenchmarkPullBundle pulls one public bundle (3 h at 15 s) into a fresh
// database per iteration and, in the same run, times Prometheus answering
// the very same range queries (same chunks, same parallelism) without
// Waterline writing anything. It reports both rates in samples/s and
// their ratio (goal ≥ 0.5).
func BenchmarkPullBundle(b *testing.B) {
	dir := benchBundle(b)
	f, err := os.Open(filepath.Join(dir, "metrics.om.gz"))
	if err != nil {
		b.Skipf("no bundle at %s (set WATERLINE_BENCH_BUNDLE): %v", dir, err)
	}
	defer f.Close()
	var sc struct{ Start, End time.Time }
	if raw, err := os.ReadFile(filepath.Join(dir, "scenario.json")); err != nil || json.Unmarshal(raw, &sc) != nil {
		b.Fatalf("scenario.json: %v", err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	prom := promtest.Run(b, zr)
	ctx := context.Background()
	benchPull(b, prom, sc.Start, sc.End, "")
	_ = ctx
}

// benchPull measures History over [from, to] against prom, and the raw
// query_range rate of the same queries.
func benchPull(b *testing.B, prom *promtest.Prometheus, from, to time.Time, yaml string) {
	ctx := context.Background()
	var pullSecs, promSecs float64
	var points, samples int64
	for b.Loop() {
		b.StopTimer()
		st := store.New(storetest.NewPool(b))
		p := newPuller(b, st, prom.URL, yaml, to)
		b.StartTimer()
		start := time.Now()
		pr, err := p.History(ctx, from, to, nil)
		if err != nil {
			b.Fatal(err)
		}
		pullSecs += time.Since(start).Seconds()
		points += pr.Points
		b.StopTimer()
		start = time.Now()
		n, err := p.rawQueryRange(ctx, from, to)
		if err != nil {
			b.Fatal(err)
		}
		promSecs += time.Since(start).Seconds()
		samples += n
		b.StartTimer()
	}
	pullRate, promRate := float64(points)/pullSecs, float64(samples)/promSecs
	b.ReportMetric(pullSecs/float64(b.N), "pull-s/op")
	b.ReportMetric(float64(points)/float64(b.N), "points/op")
	b.ReportMetric(pullRate, "pull-samples/s")
	b.ReportMetric(promRate, "prom-query_range-samples/s")
	b.ReportMetric(pullRate/promRate, "ratio")
}

// rawQueryRange runs every source's range queries over [from, to] exactly
// as History chunks and parallelises them, decoding the answers but
// writing nothing, and returns how many samples came back.
func (p *Puller) rawQueryRange(ctx context.Context, from, to time.Time) (int64, error) {
	step := p.config().Step
	w := window{alignDown(from, step), alignDown(to, step).Add(step)}
	var mu sync.Mutex
	var n int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.config().Parallelism)
	for _, q := range p.config().Queries {
		g.Go(func() error {
			for _, c := range chunks(w.from, w.to, step, p.config().MaxChunk) {
				m, err := p.prom.rangeQuery(gctx, q.Name, q.Expr, c.from, c.last(step), step)
				if err != nil {
					return err
				}
				k := int64(0)
				for _, s := range m {
					k += int64(len(s.Values))
				}
				mu.Lock()
				n += k
				mu.Unlock()
			}
			return nil
		})
	}
	return n, g.Wait()
}

// BenchmarkPull24hFleet pulls 24 h of a generated fleet of 200 replicas
// (8 models × 25) on 40 nodes, every series of the inference preset, into
// a fresh database per iteration. The fleet is scraped every 60 s and
// pulled at a 60 s step, with the presets' rate window at 2m (two scrape
// intervals, as rate() needs); backfilling writes and converts one 2-hour
// window at a time, so promtool never re-reads the whole day.
func BenchmarkPull24hFleet(b *testing.B) {
	f := bigFleet(200, 40, 8, 24*time.Hour, time.Minute)
	prom := promtest.New(b)
	start := time.Now()
	prom.BackfillWindows(b, f.Start, f.Start.Add(time.Duration(f.Steps)*f.Step), f.WriteOpenMetricsWindow)
	prom.Start(b)
	b.Logf("generated and backfilled %d replicas × %d steps in %.1fs", len(f.Pods), f.Steps, time.Since(start).Seconds())
	b.ResetTimer()
	benchPull(b, prom, f.Start, f.End(), "step: 60s\nrate_window: 2m\n")
}

// bigFleet is a steady fleet: pods replicas of models models spread over
// nodes nodes, each model with an HPA, for span at step.
func bigFleet(pods, nodes, models int, span, step time.Duration) *sim.Script {
	f := &sim.Script{Start: t0, Step: step, Steps: int(span / step)}
	for n := 0; n < nodes; n++ {
		f.Nodes = append(f.Nodes, tnode(fmt.Sprintf("gpu-node-%02d", n+1)))
	}
	for m := 0; m < models; m++ {
		replicas := map[int]float64{0: float64(pods / models)}
		f.Deployments = append(f.Deployments, sim.ScriptDeployment{Name: fmt.Sprintf("model-%d", m),
			Generation: map[int]float64{0: 1}, Spec: replicas, HPA: replicas})
	}
	for i := 0; i < pods; i++ {
		m := i % models
		p := tpod(fmt.Sprintf("model-%d-%08x-%05d", m, 0x5eed+m, i), fmt.Sprintf("model-%d", m), "v1", f.Nodes[i%nodes].Name, 0, f.Steps)
		p.QPS = float64(5 + i%7)
		f.Pods = append(f.Pods, p)
	}
	return f
}
