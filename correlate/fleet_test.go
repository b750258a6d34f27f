package correlate_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// testFleet is a compact fleet generator for correlate's tests: every
// request of every replica is drawn stage by stage, and the curves are
// aggregated from the same requests, so curves and samples always agree.
// An effect changes the fleet's inputs (traffic, exec time, routing…) from
// the onset on, the way a real cause would; nothing is painted onto the
// outputs.
type testFleet struct {
	start    time.Time
	steps    int
	step     time.Duration
	onset    int // step index of the cause
	models   []testModel
	effect   func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest)
	traffic  func(m *testModel, r *testReplica, step int) float64 // requests per step per replica
	events   []correlate.Event
	rng      *rand.Rand
	noSample bool
}

type testModel struct {
	name       string
	replicas   []*testReplica
	downstream float64 // mean downstream ms (0: does not call one)
	exec       float64 // mean exec ms
	version    string
}

type testReplica struct {
	name, node, version string
	startStep           int // first step it serves (0 = before the window)
	share               float64
}

type testRequest struct {
	stages [correlate.NumStages]float64
	batch  int
	tenant string
}

// newTestFleet builds 3 models × 3 replicas on 4 nodes, 150 minutes at 15 s,
// with the cause two hours in.
func newTestFleet(seed uint64) *testFleet {
	f := &testFleet{
		start: time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC),
		steps: 600, step: 15 * time.Second, onset: 480,
		rng: rand.New(rand.NewPCG(seed, 7)),
	}
	specs := []struct {
		name       string
		exec, down float64
	}{{"chat", 60, 0}, {"rerank", 20, 10}, {"vision", 110, 0}}
	node := 0
	for _, s := range specs {
		m := testModel{name: s.name, exec: s.exec, downstream: s.down, version: "v1"}
		for i := 0; i < 3; i++ {
			m.replicas = append(m.replicas, &testReplica{
				name: fmt.Sprintf("%s-%d", s.name, i), node: fmt.Sprintf("node-%d", node%4+1), version: "v1", share: 1.0 / 3,
			})
			node++
		}
		f.models = append(f.models, m)
	}
	f.traffic = func(m *testModel, r *testReplica, step int) float64 { return 40 * r.share * 3 }
	return f
}

func (f *testFleet) at(step int) time.Time { return f.start.Add(time.Duration(step) * f.step) }

// lognormal draws a positive value with the given mean and ~20 % spread.
func (f *testFleet) lognormal(mean float64) float64 {
	if mean <= 0 {
		return 0
	}
	const sigma = 0.35
	return mean * math.Exp(sigma*f.rng.NormFloat64()-sigma*sigma/2)
}

// build draws the requests and returns curves, samples and events.
func (f *testFleet) build() correlate.Input {
	var samples []correlate.Sample
	type acc struct {
		totals []float64
		stage  [correlate.NumStages]float64
		n      int
	}
	modelAcc := map[string][]acc{}
	repAcc := map[string][]acc{}
	repInfo := map[string]correlate.Scope{}
	tenants := []string{"t-a", "t-b", "t-c"}
	id := 0
	for mi := range f.models {
		m := &f.models[mi]
		modelAcc[m.name] = make([]acc, f.steps)
		for _, r := range m.replicas {
			repAcc[r.name] = make([]acc, f.steps)
			repInfo[r.name] = correlate.Scope{Model: m.name, Version: r.version, Replica: r.name, Node: r.node}
			for step := 0; step < f.steps; step++ {
				if step < r.startStep {
					continue
				}
				n := int(f.traffic(m, r, step) + 0.5)
				for k := 0; k < n; k++ {
					rq := testRequest{batch: 1 + f.rng.IntN(4), tenant: tenants[f.rng.IntN(len(tenants))]}
					rq.stages[correlate.StageGateway] = f.lognormal(2)
					rq.stages[correlate.StageAuth] = f.lognormal(1)
					rq.stages[correlate.StageRoute] = f.lognormal(0.3)
					rq.stages[correlate.StageQueue] = f.lognormal(15)
					rq.stages[correlate.StageBatchWait] = f.lognormal(4)
					rq.stages[correlate.StageExec] = f.lognormal(m.exec)
					rq.stages[correlate.StagePostprocess] = f.lognormal(1.5)
					rq.stages[correlate.StageDownstream] = f.lognormal(m.downstream)
					if f.effect != nil && step >= f.onset {
						f.effect(f, r, m, step, &rq)
					}
					var total float64
					for _, v := range rq.stages {
						total += v
					}
					for _, a := range []*acc{&modelAcc[m.name][step], &repAcc[r.name][step]} {
						a.totals = append(a.totals, total)
						for s, v := range rq.stages {
							a.stage[s] += v
						}
						a.n++
					}
					id++
					// Head-sample 1 in 10 plus every request over 2.5× the model's usual exec.
					rate := 0.0
					switch {
					case id%10 == 0:
						rate = 10
					case total > 2.5*(m.exec+40):
						rate = 1
					}
					if rate == 0 || f.noSample {
						continue
					}
					ts := f.at(step).Add(time.Duration(f.rng.IntN(15000)) * time.Millisecond)
					samples = append(samples, correlate.Sample{
						RequestID: fmt.Sprintf("r%d", id), Time: ts, Model: m.name, Version: r.version, Tenant: rq.tenant,
						Replica: r.name, Node: r.node, Entry: "/v1/" + m.name, BatchSize: rq.batch, Status: "ok",
						TotalMs: total, StagesMs: rq.stages, SampleRate: rate,
					})
				}
			}
		}
	}
	var curves []correlate.Curve
	add := func(role correlate.Role, level correlate.Level, sc correlate.Scope, stage string, accs []acc, v func(a acc) float64) {
		c := correlate.Curve{Role: role, Level: level, Scope: sc, Stage: stage}
		for step, a := range accs {
			if a.n == 0 {
				continue
			}
			c.Points = append(c.Points, correlate.Point{T: f.at(step).UnixMilli(), V: v(a)})
		}
		curves = append(curves, c)
	}
	q := func(p float64) func(a acc) float64 {
		return func(a acc) float64 {
			t := append([]float64(nil), a.totals...)
			sort.Float64s(t)
			return t[int(p*float64(len(t)-1))]
		}
	}
	qps := func(a acc) float64 { return float64(a.n) / f.step.Seconds() }
	for _, m := range f.models {
		sc := correlate.Scope{Model: m.name}
		add(correlate.RoleLatencyP50, correlate.LevelModel, sc, "", modelAcc[m.name], q(0.5))
		add(correlate.RoleLatencyP95, correlate.LevelModel, sc, "", modelAcc[m.name], q(0.95))
		add(correlate.RoleLatencyP99, correlate.LevelModel, sc, "", modelAcc[m.name], q(0.99))
		add(correlate.RoleQPS, correlate.LevelModel, sc, "", modelAcc[m.name], qps)
		for s := 0; s < correlate.NumStages; s++ {
			add(correlate.RoleStageTime, correlate.LevelModel, sc, correlate.Stage(s).String(), modelAcc[m.name],
				func(a acc) float64 { return a.stage[s] / float64(a.n) })
		}
		for _, r := range m.replicas {
			rs := repInfo[r.name]
			add(correlate.RoleLatencyP99, correlate.LevelReplica, rs, "", repAcc[r.name], q(0.99))
			add(correlate.RoleQPS, correlate.LevelReplica, rs, "", repAcc[r.name], qps)
			add(correlate.RoleQueue, correlate.LevelReplica, rs, "", repAcc[r.name],
				func(a acc) float64 { return a.stage[correlate.StageQueue] / float64(a.n) / 10 })
		}
	}
	return correlate.Input{
		Window:  correlate.Window{From: f.at(f.onset).Add(-90 * time.Minute), To: f.at(f.steps)},
		Curves:  curves,
		Events:  f.events,
		Samples: samples,
		Step:    f.step,
	}
}

// model returns the named model.
func (f *testFleet) model(name string) *testModel {
	for i := range f.models {
		if f.models[i].name == name {
			return &f.models[i]
		}
	}
	panic("no model " + name)
}
