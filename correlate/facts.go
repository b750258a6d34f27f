package correlate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// facts is everything the hypotheses read: impacts, stages, concentration,
// aligned events and curve deviations, computed once per analysis.
type facts struct {
	ph       phases
	scope    Scope // the incident's (zero = the whole fleet)
	cs       *curveSet
	ss       *sampleSet
	models   []modelImpact
	affected []string // models carrying the spike, most impacted first
	// slowed is every model that slowed, in or out of the incident's
	// scope: what "only m slowed" and "k of n models" are about (the
	// fleet's facts, which a scope does not change).
	slowed      []string
	affectedSet map[string]bool
	reps        map[string][]replicaImpact // per affected model
	allReps     map[string][]replicaImpact // per model
	stages      []StageShare
	stageSource string // "samples", "curves" or ""
	conc        []Concentration
	events      []AlignedEvent
	started     map[string]time.Time // replica → start time
	data        *dataIndex           // which signals each model has
	stageCache  map[string][]StageShare
	slo         func(model string) (float64, bool)
	window      Window                            // the incident window (zero in hand-built facts)
	tenantCache map[string]map[string]tenantTally // model → tenant → requests before, during
	ceilings    map[string]float64                // model → its latency quantile's ceiling (facts.ceiling)
}

// modelsWithData counts the models the analysis could judge.
func (f *facts) modelsWithData() int {
	n := 0
	for _, m := range f.models {
		if !math.IsNaN(m.ratio) || !math.IsNaN(m.slowFrac) {
			n++
		}
	}
	return n
}

// breadth is the share of judged models that slowed (in the scope or not).
func (f *facts) breadth() float64 {
	n := f.modelsWithData()
	if n == 0 {
		return 0
	}
	return float64(len(f.slowed)) / float64(n)
}

// impact returns a model's impact record.
func (f *facts) impact(model string) (modelImpact, bool) {
	for _, m := range f.models {
		if m.model == model {
			return m, true
		}
	}
	return modelImpact{}, false
}

// modelRatio is a model's P99 (or P95) ratio during / before; NaN when
// it was not measured.
func (f *facts) modelRatio(model string) float64 {
	if mi, ok := f.impact(model); ok {
		return mi.ratio
	}
	return math.NaN()
}

// qpsRatio is a model's request rate during the spike over before, from
// its QPS curve, else the sum of its replicas' (a replica absent from a
// period adds nothing to it: new replicas share the traffic they took),
// else sample weights.
func (f *facts) qpsRatio(model string) float64 {
	// As deviation: three points before and two during at least. A rate
	// curve starting just before the onset (its first point a partial
	// rate() window) made "traffic rose ×2.5" of one point.
	ratio := func(c *Curve) float64 {
		before, during := values(c.Points, f.ph.BeforeFrom, f.ph.BeforeTo), values(c.Points, f.ph.Onset, f.ph.DuringTo)
		if len(before) < 3 || len(during) < 2 {
			return math.NaN()
		}
		return safeRatio(median(during), median(before))
	}
	if c := f.cs.model(RoleQPS, model, ""); c != nil {
		if r := ratio(c); !math.IsNaN(r) {
			return r
		}
	}
	// The replicas' rates summed at each instant, then the median of
	// each phase: replicas replaced during it (a rolling restart) count
	// only while they served.
	sum := map[int64]float64{}
	for _, c := range f.cs.get(RoleQPS, LevelReplica, Scope{Model: model}, "") {
		for _, p := range c.Points {
			if !math.IsNaN(p.V) {
				sum[p.T] += p.V
			}
		}
	}
	if len(sum) > 0 {
		total := Curve{Points: make([]Point, 0, len(sum))}
		for t, v := range sum {
			total.Points = append(total.Points, Point{T: t, V: v})
		}
		sort.Slice(total.Points, func(i, j int) bool { return total.Points[i].T < total.Points[j].T })
		if r := ratio(&total); !math.IsNaN(r) {
			return r
		}
	}
	// No sample during the spike says the feed stopped (or only slow
	// requests are kept), not that traffic fell to zero.
	// A handful of samples is no rate: at least minQuantileSamples a phase.
	if st := f.ss.byModel[model]; st != nil && st.beforeN >= minQuantileSamples && st.duringN >= minQuantileSamples &&
		st.beforeW > 0 && st.duringW > 0 && st.beforeSpanS > 0 && st.duringSpanS > 0 {
		return (st.duringW / st.duringSpanS) / (st.beforeW / st.beforeSpanS)
	}
	return math.NaN()
}

// trafficNotUp words a traffic ratio below the "rose" thresholds: only
// ×0.85–×1.15 is "steady"; a drop is said as one.
func trafficNotUp(q float64) string {
	switch {
	case q < 0.85:
		return fmt.Sprintf("fell (×%.2f)", q)
	case q <= 1.15:
		return fmt.Sprintf("is steady (×%.2f)", q)
	}
	return fmt.Sprintf("rose only ×%.2f", q)
}

// slowSamples counts the slow samples of some models during the spike.
func (f *facts) slowSamples(models []string) int {
	n := 0
	for _, i := range f.ss.during {
		if f.ss.slow[i] && slices.Contains(models, f.ss.all[i].Model) {
			n++
		}
	}
	return n
}

// duringSamples counts the samples of some models during the spike.
func (f *facts) duringSamples(models []string) int {
	n := 0
	for _, i := range f.ss.during {
		if slices.Contains(models, f.ss.all[i].Model) {
			n++
		}
	}
	return n
}

// affectedQPSRatio is the traffic change over the affected models.
func (f *facts) affectedQPSRatio() float64 { return f.qpsRatioOf(f.affected) }

// qpsRatioOf is the traffic change over some models: the median model's.
func (f *facts) qpsRatioOf(models []string) float64 {
	var rs []float64
	for _, m := range models {
		if r := f.qpsRatio(m); !math.IsNaN(r) {
			rs = append(rs, r)
		}
	}
	return median(rs)
}

// stagesOf is the stage attribution over some models (from samples, else
// from stage curves); over the affected models it is f.stages.
func (f *facts) stagesOf(models []string) []StageShare {
	if slices.Equal(models, f.affected) {
		return f.stages
	}
	key := strings.Join(models, "\x00")
	if st, ok := f.stageCache[key]; ok {
		return st
	}
	st := stageAttributionFromSamples(f.ss, models)
	if len(st) == 0 {
		st = stageAttributionFromCurves(f.cs, models, f.ph)
	}
	if f.stageCache == nil {
		f.stageCache = map[string][]StageShare{}
	}
	f.stageCache[key] = st
	return st
}

// curveDeviation returns the deviation of the model-level curve of role
// (and stage), NaN when absent.
func (f *facts) modelDeviation(role Role, model, stage string) CurveDeviation {
	c := f.cs.model(role, model, stage)
	if c == nil {
		return CurveDeviation{Deviation: math.NaN(), Before: math.NaN(), During: math.NaN()}
	}
	return deviation(c, f.ph)
}

// topConcentration returns the strongest single-dimension concentration row
// of dim (largest support × log RR), or false.
func (f *facts) topConcentration(dim string) (Concentration, bool) {
	return f.topConcentrationIn(dim, nil)
}

// topConcentrationIn is topConcentration among the rows whose requests
// all belong to the given models (every row for nil).
func (f *facts) topConcentrationIn(dim string, models []string) (Concentration, bool) {
	var best Concentration
	var bs float64
	for _, c := range f.conc {
		v, ok := c.value(dim)
		if !ok || len(c.Dims) != 1 || v == "" {
			continue
		}
		if models != nil && !subset(c.Models, models) {
			continue
		}
		s := c.Support * math.Log(math.Max(c.RiskRatio, 1))
		if s > bs {
			best, bs = c, s
		}
	}
	return best, bs > 0
}

// subset reports whether every element of xs is in of (xs non-empty).
func subset(xs, of []string) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return len(xs) > 0
}

// concentrationOf returns the row for dim=value alone, if it passed the
// concentration filters.
func (f *facts) concentrationOf(dim, value string) (Concentration, bool) {
	for _, c := range f.conc {
		if v, ok := c.value(dim); ok && len(c.Dims) == 1 && v == value {
			return c, true
		}
	}
	return Concentration{}, false
}

// concStrength maps a concentration row onto 0..1: it needs both a high
// risk ratio and a large share of the slow requests.
func concStrength(c Concentration) float64 {
	return strength(c.RiskRatio-1, 4) * ramp(c.Support, 0.1, 0.5)
}

// versionStat is one version's traffic and tail in the analysis window.
type versionStat struct {
	version                 string
	weightBefore, weightDur float64 // requests represented
	slowDur, slowBefore     float64 // weighted slow requests
	p99During, p99Before    float64
	// p99Ceiling is the top bucket the version's P99 curve was pinned at
	// during the spike (QuantileCeiling), 0 when it was not: a p99During
	// at it is a lower bound. Samples measure each request and have none.
	p99Ceiling               float64
	shareBefore, shareDuring float64
	samplesBefore            int // samples behind p99Before (0: from curves)
}

func (v versionStat) slowFracDuring() float64 { return safeRatio(v.slowDur, v.weightDur) }

// versionStats splits one model's traffic by version: from samples when
// they cover the model, else from version-level curves.
func (f *facts) versionStats(model string) []versionStat {
	vs := f.versionStatsFromSamples(model)
	if len(vs) > 0 && slices.ContainsFunc(vs, func(v versionStat) bool { return !math.IsNaN(v.p99During) }) {
		return vs
	}
	// Too few samples per version for a P99 (sparse tail sampling):
	// version curves, when there are any, say more.
	if cs := f.versionStatsFromCurves(model); len(cs) > 0 {
		return cs
	}
	return vs
}

// versionStatsFromCurves reads each version's P99 and traffic from
// version-level curves (slow fractions stay unknown).
func (f *facts) versionStatsFromCurves(model string) []versionStat {
	per := map[string]*versionStat{}
	get := func(v string) *versionStat {
		if per[v] == nil {
			per[v] = &versionStat{version: v, p99Before: math.NaN(), p99During: math.NaN(), slowDur: math.NaN(), slowBefore: math.NaN()}
		}
		return per[v]
	}
	for _, c := range f.cs.get(RoleLatencyP99, LevelVersion, Scope{Model: model}, "") {
		if c.Scope.Version == "" {
			continue
		}
		v := get(c.Scope.Version)
		v.p99Before, v.p99During = periodMedian(c, f.ph.BeforeFrom, f.ph.BeforeTo), periodMedian(c, f.ph.Onset, f.ph.DuringTo)
		// A version new at the onset rose from the model's level.
		base := v.p99Before
		if math.IsNaN(base) {
			base = periodMedian(f.latencyCurve(model), f.ph.BeforeFrom, f.ph.BeforeTo)
		}
		if top, ok := QuantileCeiling(pointsIn(c.Points, f.ph.Onset, f.ph.DuringTo), base); ok {
			v.p99Ceiling = top
		}
	}
	var tb, td float64
	for _, c := range f.cs.get(RoleQPS, LevelVersion, Scope{Model: model}, "") {
		if c.Scope.Version == "" {
			continue
		}
		v := get(c.Scope.Version)
		// Mean rate × span: requests in each phase (missing points = no traffic).
		v.weightBefore = sum(values(c.Points, f.ph.BeforeFrom, f.ph.BeforeTo))
		v.weightDur = sum(values(c.Points, f.ph.Onset, f.ph.DuringTo))
		tb += v.weightBefore
		td += v.weightDur
	}
	// Without version request rates the shares stay unknown (NaN): a
	// version's traffic is not 0 % because nobody measured it.
	out := make([]versionStat, 0, len(per))
	for _, v := range per {
		v.shareBefore, v.shareDuring = safeRatio(v.weightBefore, tb), safeRatio(v.weightDur, td)
		if tb > 0 && math.IsNaN(v.shareBefore) {
			v.shareBefore = 0
		}
		if td > 0 && math.IsNaN(v.shareDuring) {
			v.shareDuring = 0
		}
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// versionStatsFromSamples splits one model's samples by version.
func (f *facts) versionStatsFromSamples(model string) []versionStat {
	type acc struct {
		v    versionStat
		b, d []weighted
	}
	per := map[string]*acc{}
	var tb, td float64
	st := f.ss.byModel[model]
	if st == nil {
		return nil
	}
	for phase, list := range st.phase {
		for _, i := range list {
			s := &f.ss.all[i]
			if s.Version == "" {
				continue
			}
			a := per[s.Version]
			if a == nil {
				a = &acc{v: versionStat{version: s.Version}}
				per[s.Version] = a
			}
			w := weighted{s.TotalMs, s.SampleRate}
			if phase == 0 {
				a.b = append(a.b, w)
				a.v.weightBefore += s.SampleRate
				tb += s.SampleRate
				if f.ss.slow[i] {
					a.v.slowBefore += s.SampleRate
				}
			} else {
				a.d = append(a.d, w)
				a.v.weightDur += s.SampleRate
				td += s.SampleRate
				if f.ss.slow[i] {
					a.v.slowDur += s.SampleRate
				}
			}
		}
	}
	out := make([]versionStat, 0, len(per))
	for _, a := range per {
		// A P99 of a handful of samples is one request's latency.
		a.v.p99Before, a.v.p99During = math.NaN(), math.NaN()
		if len(a.b) >= minQuantileSamples {
			a.v.p99Before = weightedQuantile(a.b, 0.99)
		}
		if len(a.d) >= minQuantileSamples {
			a.v.p99During = weightedQuantile(a.d, 0.99)
		}
		a.v.samplesBefore = len(a.b)
		// Shares of a phase with a handful of samples are those few
		// requests' versions ("v2 went from 0 % to 50 %" on two): unknown.
		a.v.shareBefore, a.v.shareDuring = math.NaN(), math.NaN()
		if len(st.phase[0]) >= minQuantileSamples {
			a.v.shareBefore = safeRatio(a.v.weightBefore, tb)
		}
		if len(st.phase[1]) >= minQuantileSamples {
			a.v.shareDuring = safeRatio(a.v.weightDur, td)
		}
		out = append(out, a.v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// gpuUtilDuring is the median GPU utilisation (%) during the spike over the
// replicas of the affected models (NaN without GPU curves).
func (f *facts) gpuUtilDuring() float64 { return f.gpuUtilOf(f.affected) }

// gpuUtilOf is the same over the replicas of some models.
func (f *facts) gpuUtilOf(models []string) float64 {
	u, _ := f.gpuUtilCount(models)
	return u
}

// gpuUtilCount is gpuUtilOf and how many replicas' GPU curves it rests on.
func (f *facts) gpuUtilCount(models []string) (float64, int) {
	var vs []float64
	for _, m := range models {
		for _, c := range f.cs.get(RoleGPUUtil, LevelReplica, Scope{Model: m}, "") {
			if v := periodMedian(c, f.ph.Onset, f.ph.DuringTo); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
	}
	return median(vs), len(vs)
}

// nodeGPUUtil is the median GPU utilisation (%) during the spike of the
// node-level GPU curves of the nodes the models' replicas run on (from
// replica curves and samples), and those nodes; NaN when none is known.
func (f *facts) nodeGPUUtil(models []string) (float64, []string) {
	on := map[string]bool{}
	for _, m := range models {
		for _, r := range f.allReps[m] {
			if r.node != "" {
				on[r.node] = true
			}
		}
		if st := f.ss.byModel[m]; st != nil {
			for _, i := range st.phase[1] {
				if n := f.ss.all[i].Node; n != "" {
					on[n] = true
				}
			}
		}
	}
	var vs []float64
	var nodes []string
	for _, c := range f.cs.get(RoleGPUUtil, LevelNode, Scope{}, "") {
		if !on[c.Scope.Node] {
			continue
		}
		if v := periodMedian(c, f.ph.Onset, f.ph.DuringTo); !math.IsNaN(v) {
			vs = append(vs, v)
			nodes = append(nodes, c.Scope.Node)
		}
	}
	sort.Strings(nodes)
	return median(vs), slices.Compact(nodes)
}

// startedNear lists replicas of model that started in [onset − window,
// onset + alignSkew].
func (f *facts) startedNear(model string, window time.Duration) []string {
	var out []string
	for rep, t := range f.started {
		if f.replicaModel(rep) != model {
			continue
		}
		if t.After(f.ph.Onset.Add(-window)) && !t.After(f.ph.Onset.Add(alignSkew)) {
			out = append(out, rep)
		}
	}
	sort.Strings(out)
	return out
}

// startedSince is the set of the model's replicas that started at or
// after from (before or after the onset alike).
func (f *facts) startedSince(model string, from time.Time) map[string]bool {
	out := map[string]bool{}
	for rep, t := range f.started {
		if !t.Before(from) && f.replicaModel(rep) == model {
			out[rep] = true
		}
	}
	return out
}

// replicaModel finds which model a replica serves, from curves or samples.
func (f *facts) replicaModel(rep string) string {
	for m, rs := range f.allReps {
		for _, r := range rs {
			if r.replica == rep {
				return m
			}
		}
	}
	for _, e := range f.events {
		if e.Replica == rep && e.Model != "" {
			return e.Model
		}
	}
	// Replicas known only by other curves (GPU, memory) carry their model.
	for i := range f.cs.all {
		if c := &f.cs.all[i]; c.Level == LevelReplica && c.Scope.Replica == rep && c.Scope.Model != "" {
			return c.Scope.Model
		}
	}
	return ""
}

// frontShare is the share of the growth in the stages before the model
// server (gateway, auth, route).
func (f *facts) frontShare() float64 {
	return stageShare(f.stages, "gateway") + stageShare(f.stages, "auth") + stageShare(f.stages, "route")
}

// nodeImpact says how much the replicas on one node worsened against their
// own models' other replicas.
type nodeImpact struct {
	node     string
	replicas []replicaImpact // on this node, with a before and a during
	excess   float64         // median of (replica's P99 change / its peers' change)
	worse    int             // replicas whose change exceeds their peers' by 20 %
	models   int             // distinct models among them
}

// nodeImpacts compares nodes by how much more their replicas' P99 rose
// than the same models' replicas elsewhere. A node fault shows as every
// pod on it getting worse, whatever the model; aggregating over the node
// catches faults too mild to make any single replica an outlier.
func (f *facts) nodeImpacts() []nodeImpact {
	per := map[string]*nodeImpact{}
	models := map[string]map[string]bool{}
	var excess = map[string][]float64{}
	for m, reps := range f.allReps {
		for i, r := range reps {
			if r.node == "" || math.IsNaN(r.ratio) {
				continue
			}
			var peer []float64
			for j, o := range reps {
				if j != i && o.node != r.node && !math.IsNaN(o.ratio) {
					peer = append(peer, o.ratio)
				}
			}
			if len(peer) == 0 {
				continue
			}
			rel := r.ratio / median(peer)
			n := per[r.node]
			if n == nil {
				n = &nodeImpact{node: r.node}
				per[r.node] = n
				models[r.node] = map[string]bool{}
			}
			n.replicas = append(n.replicas, r)
			excess[r.node] = append(excess[r.node], rel)
			if rel >= 1.2 {
				n.worse++
			}
			models[r.node][m] = true
		}
	}
	out := make([]nodeImpact, 0, len(per))
	for name, n := range per {
		n.excess = median(excess[name])
		n.models = len(models[name])
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].excess != out[j].excess {
			return out[i].excess > out[j].excess
		}
		return out[i].node < out[j].node
	})
	return out
}
