package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// warmup is how long the simulation runs before the window starts, so that
// queues are in steady state at the first scrape.
const warmup = 10 * 60.0

// Fleet is one simulated fleet with its injected cause. New builds the plan
// (topology, pods over time, events, the cause); the request-level
// simulation runs once, on first use of an output, and keeps only per-step
// aggregates and the kept samples in memory.
type Fleet struct {
	opts   Options
	seed   int64
	step   float64 // seconds
	dur    float64 // seconds
	nSteps int

	nodes   []*node
	models  []*model
	pods    []*pod // every pod of the window, in creation order
	tenants []string

	pick     *rand.Rand // target choices
	gateway  gatewayPlan
	depend   dependencyPlan
	events   []correlate.Event
	truth    Truth
	cause    cause
	measured measureScope

	once    sync.Once
	samples []sampleRec
	before  [][]float64 // per model: end-to-end seconds of measured requests before the onset
	during  [][]float64 // and during the effect
}

// node is a GPU node.
type node struct {
	idx      int
	name     string
	gpu      gpuType
	bootAge  float64  // seconds the node was up at the window start
	throttle effect   // GPU clock throttling (local_replica)
	slowdown float64  // exec multiplier at full throttle
	gpuUUIDs []string // per GPU index
	gpuUse   [gpusPerNode][]interval
}

// interval is a half-open span of time [from, to).
type interval struct{ from, to float64 }

// model is one deployment with its serving configuration over time.
type model struct {
	idx      int
	spec     modelSpec
	version  string // at the window start
	replicas int    // at the window start
	shares   []float64
	timeout  float64 // queue timeout, seconds

	headEvery, tailEvery int

	window     []stepValue // batch window changes (seconds)
	routes     []routeChange
	surge      effect  // capacity surge
	surgeTen   int     // tenant behind the surge
	surgeRPS   float64 // extra requests/s at the surge's full level
	measured   bool    // its requests count towards the truth's P99
	generation []stepValue
	spec2      []stepValue // deployment spec replicas
	hpa        []stepValue // HPA desired replicas

	rates [][]float64 // per tick (from −warmup) per tenant, requests/s
}

// routeChange switches a model's routing policy at time t. A nil hot pod
// means the default policy; otherwise the hot pod gets share of the traffic
// and the others split the rest (zone-aware routing preferring its zone).
type routeChange struct {
	t     float64
	hot   *pod
	share float64
}

// pod is one replica over its life.
type pod struct {
	idx     int
	model   *model
	name    string
	rs      string
	version string
	node    *node
	gpu     int

	created  float64 // scheduled and started (kube_pod_start_time)
	ready    float64 // receives traffic
	stop     float64 // removed from routing, terminating
	gone     float64 // deleted
	speed    float64 // static per-pod exec multiplier (silicon lottery)
	vfactor  float64 // exec multiplier of its version
	coldAmp  float64 // exec multiplier − 1 right after ready
	coldTau  float64 // seconds for the cold penalty to fall by e
	measured bool    // its requests count towards the truth's P99 (local_replica)

	agg *podAgg
}

// New plans a fleet from opts. It validates the options, lays out nodes,
// models, tenants and pods, injects the scenario and the confounders, and
// derives the pushed events and the truth. The request simulation itself
// runs lazily.
func New(opts Options) (*Fleet, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		opts:   o,
		seed:   o.Seed,
		step:   o.Step.Seconds(),
		dur:    o.Duration.Seconds(),
		nSteps: int(o.Duration / o.Step),
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), 0x706c616e))
	f.tenants = append([]string(nil), tenantNames[:o.Tenants]...)
	f.buildNodes(r)
	f.buildModels(r)
	if err := f.placeInitialPods(r); err != nil {
		return nil, err
	}
	if err := f.inject(r); err != nil {
		return nil, err
	}
	if o.Confounders {
		if err := f.confound(r); err != nil {
			return nil, err
		}
	}
	f.finishLocal()
	f.planTraffic(r)
	f.planGateway()
	sort.SliceStable(f.events, func(i, j int) bool { return f.events[i].Time.Before(f.events[j].Time) })
	for i, p := range f.pods {
		p.idx = i
	}
	return f, nil
}

// at converts seconds from the window start to a time.
func (f *Fleet) at(s float64) time.Time {
	return f.opts.Start.Add(time.Duration(math.Round(s*1000)) * time.Millisecond)
}

func (f *Fleet) buildNodes(r *rand.Rand) {
	nA100 := (2*f.opts.Nodes + 2) / 3
	for i := 0; i < f.opts.Nodes; i++ {
		g, k := gpuA100, i+1
		if i >= nA100 {
			g, k = gpuL40S, i-nA100+1
		}
		n := &node{
			idx:      i,
			name:     fmt.Sprintf("gpu-%s-%02d", g.short, k),
			gpu:      g,
			bootAge:  86400 * (3 + 20*r.Float64()),
			slowdown: 1,
		}
		for g := 0; g < gpusPerNode; g++ {
			n.gpuUUIDs = append(n.gpuUUIDs, gpuUUID(f.seed, n.name, g))
		}
		f.nodes = append(f.nodes, n)
	}
}

func (f *Fleet) buildModels(r *rand.Rand) {
	for i := 0; i < f.opts.Models; i++ {
		s := catalog[i]
		m := &model{
			idx:      i,
			spec:     s,
			version:  version(1+r.IntN(3), r.IntN(20), r.IntN(10)),
			replicas: s.replicas,
			timeout:  math.Max(2.5, 6*s.slo),
		}
		if f.opts.ReplicasPerModel > 0 {
			m.replicas = f.opts.ReplicasPerModel
		}
		// Tenant mix: Zipf-like with a per-model twist; a tenant may not
		// use a model at all, but every model keeps its two largest users.
		m.shares = make([]float64, len(f.tenants))
		tot := 0.0
		for j := range f.tenants {
			w := math.Pow(float64(j+1), -1.2) * (0.5 + r.Float64())
			if j >= 2 && r.Float64() < 0.2 {
				w = 0
			}
			m.shares[j] = w
			tot += w
		}
		for j := range m.shares {
			m.shares[j] /= tot
		}
		m.generation = []stepValue{{t: -inf, v: float64(1 + r.IntN(40))}}
		m.spec2 = []stepValue{{t: -inf, v: float64(m.replicas)}}
		m.hpa = []stepValue{{t: -inf, v: float64(m.replicas)}}
		m.window = []stepValue{{t: -inf, v: s.window}}
		f.models = append(f.models, m)
	}
}

// placeInitialPods schedules each model's replicas, spread over nodes
// (anti-affinity), all started well before the window.
func (f *Fleet) placeInitialPods(r *rand.Rand) error {
	for _, m := range f.models {
		rs := replicaSetName(f.seed, m.spec.name, m.version)
		for k := 0; k < m.replicas; k++ {
			created := -warmup - 3600*(2+200*r.Float64())
			p := &pod{
				model: m, rs: rs, version: m.version,
				created: created, ready: created + m.spec.loadSecs,
				stop: inf, gone: inf, vfactor: 1,
			}
			if err := f.schedule(p, r); err != nil {
				return err
			}
			p.name = podName(f.seed, rs, k)
			f.pods = append(f.pods, p)
		}
	}
	return nil
}

// schedule puts p on a GPU free over [p.created, p.gone), preferring nodes
// that do not run the same model yet, then the emptiest node.
func (f *Fleet) schedule(p *pod, r *rand.Rand) error {
	best, bestGPU, bestScore := -1, -1, math.Inf(1)
	off := r.IntN(len(f.nodes))
	for k := range f.nodes {
		n := f.nodes[(k+off)%len(f.nodes)]
		free, used := -1, 0
		for g := 0; g < gpusPerNode; g++ {
			if overlaps(n.gpuUse[g], p.created, p.gone) {
				used++
			} else if free < 0 {
				free = g
			}
		}
		if free < 0 {
			continue
		}
		score := float64(used)
		for _, q := range f.pods {
			if q.node == n && q.model == p.model && q.gone > p.created && q.created < p.gone {
				score += 10
			}
		}
		if score < bestScore {
			best, bestGPU, bestScore = (k+off)%len(f.nodes), free, score
		}
	}
	if best < 0 {
		return fmt.Errorf("no free GPU for a %s pod: %d nodes × %d GPUs are not enough, add nodes", p.model.spec.name, len(f.nodes), gpusPerNode)
	}
	n := f.nodes[best]
	p.node, p.gpu = n, bestGPU
	n.gpuUse[bestGPU] = append(n.gpuUse[bestGPU], interval{p.created, p.gone})
	p.speed = 0.96 + 0.08*r.Float64()
	return nil
}

// releaseGPU frees p's GPU from t on (the pod terminates).
func (f *Fleet) releaseGPU(p *pod, t float64) {
	use := p.node.gpuUse[p.gpu]
	for i := range use {
		if use[i].from == p.created {
			use[i].to = t
		}
	}
}

func overlaps(use []interval, from, to float64) bool {
	for _, u := range use {
		if u.from < to && from < u.to {
			return true
		}
	}
	return false
}

// modelPods returns every pod m has over the window, in creation order.
func (f *Fleet) modelPods(m *model) []*pod {
	var out []*pod
	for _, p := range f.pods {
		if p.model == m {
			out = append(out, p)
		}
	}
	return out
}

// modelByName finds a model of the fleet.
func (f *Fleet) modelByName(name string) *model {
	for _, m := range f.models {
		if m.spec.name == name {
			return m
		}
	}
	return nil
}
