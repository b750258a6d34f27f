package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Curves returns the curves Waterline's default preset ("inference", with
// its dcgm and node includes) would pull from this fleet's metrics, computed
// from the same per-scrape aggregates the OpenMetrics writer exports: rates
// over a one-minute window (the increments of the last 60 s of scrapes, as
// rate(…[1m]) sees them), histogram_quantile's linear interpolation within
// buckets, scopes filled as the pull joins kube-state-metrics. It lets
// tests of the analysis run on a simulated fleet without a Prometheus;
// the replay tests check the real path.
func (f *Fleet) Curves() []correlate.Curve {
	f.run()
	k := max(1, int(math.Round(60/f.step))-1) // intervals a 1m rate spans
	cb := &curveBuilder{f: f, k: k}
	for _, m := range f.models {
		var pods []*pod
		versions := map[string][]*pod{}
		for _, p := range f.pods {
			if p.model == m {
				pods = append(pods, p)
				versions[p.version] = append(versions[p.version], p)
			}
		}
		name := m.spec.name
		cb.server(correlate.LevelModel, correlate.Scope{Model: name}, pods, true)
		vs := make([]string, 0, len(versions))
		for v := range versions {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		for _, v := range vs {
			cb.server(correlate.LevelVersion, correlate.Scope{Model: name, Version: v}, versions[v], false)
		}
		for _, p := range pods {
			cb.server(correlate.LevelReplica, correlate.Scope{Model: name, Version: p.version, Replica: p.name, Node: p.node.name}, []*pod{p}, true)
		}
	}
	cb.gpu()
	cb.nodes()
	sort.SliceStable(cb.out, func(i, j int) bool { return cb.out[i].Key() < cb.out[j].Key() })
	return cb.out
}

// curveBuilder accumulates the curves of one fleet.
type curveBuilder struct {
	f   *Fleet
	k   int // scrape intervals a rate window spans
	out []correlate.Curve
}

// rateRange returns the increments a rate at scrape i sums over, for a
// series exported from scrape first on: none until two scrapes exist.
func (cb *curveBuilder) rateRange(i, first int) (lo int, ok bool) {
	lo = max(i-cb.k+1, first+1)
	return lo, lo <= i
}

// server adds the model-server curves of a group of pods (a model, one
// version, one replica): latency quantiles, traffic, and, where the preset
// has them at that level, queue, batch size and stage times.
func (cb *curveBuilder) server(level correlate.Level, sc correlate.Scope, pods []*pod, full bool) {
	f := cb.f
	quant := []struct {
		role correlate.Role
		q    float64
	}{{correlate.RoleLatencyP50, 0.5}, {correlate.RoleLatencyP95, 0.95}, {correlate.RoleLatencyP99, 0.99}}
	lat := make([]correlate.Curve, len(quant))
	for j, q := range quant {
		lat[j] = correlate.Curve{Role: q.role, Level: level, Scope: sc}
	}
	qps := correlate.Curve{Role: correlate.RoleQPS, Level: level, Scope: sc}
	queue := correlate.Curve{Role: correlate.RoleQueue, Level: level, Scope: sc}
	batch := correlate.Curve{Role: correlate.RoleBatchSize, Level: level, Scope: sc}
	var stages [correlate.NumStages]correlate.Curve
	for s := range stages {
		stages[s] = correlate.Curve{Role: correlate.RoleStageTime, Level: level, Scope: sc, Stage: correlate.Stage(s).String()}
	}
	hist := make([]float64, nBuckets)
	for i := 0; i < f.nSteps; i++ {
		t := f.at(f.stepTime(i)).UnixMilli()
		clear(hist)
		var count, batches, queued float64
		var stSum, stCnt [correlate.NumStages]float64
		live, rated := false, false
		for _, p := range pods {
			first, last := f.serverSteps(p)
			if i < first || i > last {
				continue
			}
			live = true
			queued += p.agg.queue[i] / f.step
			lo, ok := cb.rateRange(i, first)
			if !ok {
				continue
			}
			rated = true
			a := p.agg
			for s := lo; s <= i; s++ {
				for b, c := range a.buckets[s*nBuckets : (s+1)*nBuckets] {
					hist[b] += float64(c)
				}
				batches += float64(a.batches[s])
				for st := range stSum {
					stSum[st] += a.stageSum[st][s]
					stCnt[st] += float64(a.stageCnt[st][s])
				}
			}
		}
		if live && full {
			queue.Points = append(queue.Points, correlate.Point{T: t, V: round2(queued)})
		}
		if !rated {
			continue
		}
		for _, c := range hist {
			count += c
		}
		span := float64(cb.k) * f.step
		qps.Points = append(qps.Points, correlate.Point{T: t, V: count / span})
		if count == 0 {
			continue
		}
		for j, q := range quant {
			lat[j].Points = append(lat[j].Points, correlate.Point{T: t, V: 1000 * histogramQuantile(q.q, hist)})
		}
		if !full {
			continue
		}
		if batches > 0 {
			batch.Points = append(batch.Points, correlate.Point{T: t, V: count / batches})
		}
		for s := range stages {
			if stCnt[s] > 0 {
				stages[s].Points = append(stages[s].Points, correlate.Point{T: t, V: 1000 * stSum[s] / stCnt[s]})
			}
		}
	}
	cb.add(lat...)
	cb.add(qps)
	if full {
		cb.add(queue, batch)
		cb.add(stages[:]...)
	}
}

// add keeps the curves that have points.
func (cb *curveBuilder) add(cs ...correlate.Curve) {
	for _, c := range cs {
		if len(c.Points) > 0 {
			cb.out = append(cb.out, c)
		}
	}
}

// histogramQuantile is Prometheus' histogram_quantile over per-bucket (not
// cumulative) counts of the fleet's bucket layout: linear interpolation
// within the bucket holding the rank, the last finite bound for +Inf.
func histogramQuantile(q float64, counts []float64) float64 {
	var total float64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	var cum float64
	for b, c := range counts {
		if cum+c < rank || c == 0 {
			cum += c
			continue
		}
		if b >= len(bounds) {
			return bounds[len(bounds)-1]
		}
		lo := 0.0
		if b > 0 {
			lo = bounds[b-1]
		}
		return lo + (bounds[b]-lo)*(rank-cum)/c
	}
	return bounds[len(bounds)-1]
}

// gpu adds DCGM's per-pod (replica) and per-node utilisation and memory.
func (cb *curveBuilder) gpu() {
	f := cb.f
	list := f.gpuSeriesList()
	type nodeAcc struct{ sum, n []float64 }
	perNode := map[*node]*nodeAcc{}
	for k := range list {
		s := &list[k]
		na := perNode[s.n]
		if na == nil {
			na = &nodeAcc{sum: make([]float64, f.nSteps), n: make([]float64, f.nSteps)}
			perNode[s.n] = na
		}
		for _, i := range s.steps {
			na.sum[i] += f.gpuUtil(s, i)
			na.n[i]++
		}
		if s.p == nil {
			continue
		}
		sc := correlate.Scope{Model: s.p.model.spec.name, Version: s.p.version, Replica: s.p.name, Node: s.n.name}
		util := correlate.Curve{Role: correlate.RoleGPUUtil, Level: correlate.LevelReplica, Scope: sc}
		used := correlate.Curve{Role: correlate.RoleGPUMemUsed, Level: correlate.LevelReplica, Scope: sc}
		free := correlate.Curve{Role: correlate.RoleGPUMemFree, Level: correlate.LevelReplica, Scope: sc}
		for _, i := range s.steps {
			t := f.at(f.stepTime(i)).UnixMilli()
			u := f.gpuUsed(s, i)
			util.Points = append(util.Points, correlate.Point{T: t, V: f.gpuUtil(s, i)})
			used.Points = append(used.Points, correlate.Point{T: t, V: u})
			free.Points = append(free.Points, correlate.Point{T: t, V: s.n.gpu.memMiB - u})
		}
		cb.add(util, used, free)
	}
	for _, n := range f.nodes {
		na := perNode[n]
		if na == nil {
			continue
		}
		c := correlate.Curve{Role: correlate.RoleGPUUtil, Level: correlate.LevelNode, Scope: correlate.Scope{Node: n.name}}
		for i := 0; i < f.nSteps; i++ {
			if na.n[i] > 0 {
				c.Points = append(c.Points, correlate.Point{T: f.at(f.stepTime(i)).UnixMilli(), V: na.sum[i] / na.n[i]})
			}
		}
		cb.add(c)
	}
}

// nodes adds node_exporter's CPU, memory and network per node.
func (cb *curveBuilder) nodes() {
	f := cb.f
	loads := f.nodeLoads()
	for k, n := range f.nodes {
		l := &loads[k]
		sc := correlate.Scope{Node: n.name}
		cpu := correlate.Curve{Role: correlate.RoleNodeCPU, Level: correlate.LevelNode, Scope: sc}
		mem := correlate.Curve{Role: correlate.RoleNodeMemory, Level: correlate.LevelNode, Scope: sc}
		net := correlate.Curve{Role: correlate.RoleNodeNetwork, Level: correlate.LevelNode, Scope: sc}
		tot := n.gpu.memGiB * (1 << 30)
		for i := 0; i < f.nSteps; i++ {
			t := f.at(f.stepTime(i)).UnixMilli()
			avail := math.Max(tot-l.used[i]-(2<<30)*f.noise(uint64(n.idx)+91, i), 0.05*tot)
			mem.Points = append(mem.Points, correlate.Point{T: t, V: 1 - avail/tot})
			lo, ok := cb.rateRange(i, 0)
			if !ok {
				continue
			}
			var idle, rx float64
			for s := lo; s <= i; s++ {
				for c := 0; c < n.gpu.cpus; c++ {
					idle += f.cpuModeSeconds(l, n, c, uint64(n.idx)<<20|uint64(c), "idle", s)
				}
				rx += l.rx[s] * (0.97 + 0.06*f.noise(uint64(n.idx)+17, s))
			}
			span := float64(i-lo+1) * f.step
			cpu.Points = append(cpu.Points, correlate.Point{T: t, V: 1 - idle/span/float64(n.gpu.cpus)})
			net.Points = append(net.Points, correlate.Point{T: t, V: rx / span})
		}
		cb.add(cpu, mem, net)
	}
}

// KubeEvents returns the change events Waterline derives from this fleet's
// kube-state-metrics when it pulls them: a deploy per rollout (generation
// bump with the new version), a scale_up or scale_down per change of the
// HPA's desired replicas, and a replica_start per pod started in the
// window. Together with Events (what is pushed) and Curves they make the
// analysis input a pull would produce.
func (f *Fleet) KubeEvents() []correlate.Event {
	const source = "kube-state-metrics"
	var out []correlate.Event
	for _, m := range f.models {
		name := m.spec.name
		for _, g := range m.generation {
			if g.t < 0 || g.t >= f.dur {
				continue
			}
			// The version the rollout brought: the first pod created by it.
			from, ver := f.versionAt(m, g.t-1), ""
			for _, p := range f.pods {
				if p.model == m && p.created >= g.t && p.created <= g.t+60 && p.version != from {
					ver = p.version
					break
				}
			}
			out = append(out, correlate.Event{
				ID: fmt.Sprintf("sim-deploy-%s-%g", name, g.v), Kind: correlate.KindDeploy, Time: f.scrapeAfter(g.t),
				Scope: correlate.Scope{Model: name, Version: ver}, Source: source,
				Summary: fmt.Sprintf("rollout %s %s → %s (generation %g)", name, from, orDash(ver), g.v),
			})
		}
		prev := float64(m.replicas)
		for _, h := range m.hpa {
			if h.t < 0 || h.t >= f.dur || h.v == prev {
				prev = h.v
				continue
			}
			kind, verb := correlate.KindScaleUp, "scale up"
			if h.v < prev {
				kind, verb = correlate.KindScaleDown, "scale down"
			}
			out = append(out, correlate.Event{
				ID: fmt.Sprintf("sim-%s-%s-%g", kind, name, h.t), Kind: kind, Time: f.scrapeAfter(h.t),
				Scope: correlate.Scope{Model: name}, Source: source,
				Summary: fmt.Sprintf("%s %s %g → %g replicas (HPA desired replicas)", verb, name, prev, h.v),
			})
			prev = h.v
		}
	}
	for _, p := range f.pods {
		if p.created < 0 || p.created >= f.dur {
			continue
		}
		out = append(out, correlate.Event{
			ID: "sim-start-" + p.name, Kind: correlate.KindReplicaStart, Time: f.at(math.Floor(p.created)),
			Scope:  correlate.Scope{Model: p.model.spec.name, Version: p.version, Replica: p.name, Node: p.node.name},
			Source: source, Summary: fmt.Sprintf("replica %s started on %s", p.name, p.node.name),
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// scrapeAfter is the first scrape at or after t: when a gauge's change
// becomes visible to a pull.
func (f *Fleet) scrapeAfter(t float64) time.Time { return f.at(math.Ceil(t/f.step) * f.step) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
