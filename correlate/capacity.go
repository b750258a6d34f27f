package correlate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// capacityCause: more traffic than the pool can serve. Signature: request
// rate up, queues (the queue stage) growing, GPUs busy, and the slow
// requests spread over the pool rather than concentrated on a few replicas.
// A tenant whose traffic jumped is named as the source.
//
// Each model has its own pool, so when several models slowed down the case
// is made per model too: a surge on one model does not explain another
// model that slowed at the same time for its own reason (a compound
// incident). The target is the models whose own case is strong, all of
// them when the whole fleet ran short.
func capacityCause(f *facts) Cause {
	models := f.assessableModels(CatCapacity)
	if len(models) <= 1 {
		return capacityFor(f, models)
	}
	joint := capacityFor(f, models)
	var strong []string
	best := Cause{}
	for _, m := range models {
		c := capacityFor(f, []string{m})
		if c.Score >= 0.5 {
			strong = append(strong, m)
		}
		if best.Category == "" || c.Score > best.Score {
			best = c
		}
	}
	switch {
	case len(strong) == len(models):
		return joint
	case len(strong) >= 2:
		return capacityFor(f, strong)
	case len(strong) == 1:
		return capacityFor(f, strong)
	}
	if best.Score > joint.Score {
		return best
	}
	return joint
}

// capacityFor makes the capacity case for a set of models.
func capacityFor(f *facts, models []string) Cause {
	b := newCause(CatCapacity)
	if len(models) == 0 {
		return b.done("No model carries a spike.", Target{})
	}
	q := f.qpsRatioOf(models)
	// An LLM pool's work is tokens: requests that got longer are more work
	// at the same request rate.
	l, lengthKnown := f.requestLength(models)
	longer := 0.0
	if lengthKnown {
		longer = ramp(l.ratio, lengthFlat, 1.8)
		if longer > 0 {
			b.support("requests_longer", l.ratio, longer, 0.30, "%s, so the pool had more tokens to serve per request.", l.sentence()).restsOn("", l.key, nil)
		}
	}
	if !math.IsNaN(q) {
		e := b.support("traffic_up", q, ramp(q, 1.15, 1.8), 0.30, "Traffic of %s rose ×%.2f against the hour before.", list(models), q)
		if c := f.cs.model(RoleQPS, models[0], ""); c != nil && len(models) == 1 {
			e.restsOn("", c.Key(), nil)
		}
		// From ×1.1 down, continuously: ×1.05 is as flat as ×1.04.
		if q < 1.1 && longer < 1 {
			b.oppose("traffic_flat", q, ramp(1.1-q, 0, 0.1)*(1-longer), 0.45, "Traffic did not rise (×%.2f), so the pool had no more requests than before.", q)
		}
	}
	stages := f.stagesOf(models)
	queueKnown := stageMeasured(stages, "queue")
	qs := stageShare(stages, "queue")
	if qs > 0 {
		b.support("queue_growth", qs, ramp(qs, 0.3, 0.7), 0.20, "Queueing explains %.0f%% of the tail's growth.", 100*qs)
	}
	if !queueKnown {
		// No queue stage time: the waiting requests (vLLM's, SGLang's,
		// TGI's queue, Triton's pending) say whether requests queue. A
		// queue that rose was "not shown" before, beside the very curve.
		if d, ok := f.queueRise(models); ok {
			queueKnown = true
			if r := (d.During + 0.5) / (d.Before + 0.5); d.During-d.Before >= 1 && d.Score >= 0.5 {
				b.support("queue_growth", r, ramp(r, 1.5, 4), 0.20, "%s's waiting requests rose from %s to %s (its queue length; no queue time is measured).",
					d.Scope.Model, trimZero(fmt.Sprintf("%.1f", d.Before)), trimZero(fmt.Sprintf("%.1f", d.During))).restsOn("", d.Key, nil)
			}
		}
	}
	front := stageShare(stages, "gateway") + stageShare(stages, "auth") + stageShare(stages, "route")
	// The sentence names the one stage it quotes: "Most of the growth is
	// outside the model queue (40% in batching, a dependency or the
	// gateway)" called 40% most, and left the reader to guess which.
	other, where := front, "the gateway, auth and route stages"
	if bw := stageShare(stages, "batch_wait"); bw > other {
		other, where = bw, "waiting for batches"
	}
	if ds := stageShare(stages, "downstream"); ds > other {
		other, where = ds, "the downstream call"
	}
	if other > 0.3 {
		b.oppose("other_stage_grew", other, ramp(other, 0.3, 0.6), 0.3, "%.0f%% of the tail's growth is in %s, outside the model queue.", 100*other, where)
	}
	// Slow requests piled on the replicas that just started (a scale-up's
	// cold pods), or on one version (a rollout's pods: the release demo's
	// 96% of them on v3.2.0, half of the replicas), are on part of the
	// pool, though no single replica or node stands out: no spread is
	// claimed.
	partCarry := slices.ContainsFunc(f.conc, func(c Concentration) bool {
		v, isVersion := c.value("version")
		part := isVersion && c.Also["model"] == "" // a model's only version is all of its pool
		if !part {
			v, _ = c.value("replica_age")
			part = v == "young"
		}
		return part && len(c.Dims) == 1 && concStrength(c) > 0.5 && slices.ContainsFunc(c.Models, func(m string) bool { return slices.Contains(models, m) })
	})
	loc, locOK := f.topLocalIn(models)
	switch {
	case locOK:
		s := concStrength(loc)
		if s <= 0.5 && !partCarry { // else the counter item says the opposite
			b.corroborate("spread_over_pool", 1-s, 1-s, 0.15, "Slow requests are spread over the pool (strongest concentration: %s, %s).", dimString(loc), likelier(loc.RiskRatio)).restsOn("", "", loc.Dims)
		}
		if s > 0.5 {
			b.oppose("concentrated", loc.RiskRatio, s, 0.3, "Slow requests concentrate on %s (%s), which a pool-wide shortage would not do.", dimString(loc), likelier(loc.RiskRatio)).restsOn("", "", loc.Dims)
		}
	case !partCarry && f.samplesNameReplicas() && f.localKnown() && f.slowSamples(models) >= minSlowToJudge &&
		!tooFewOthers(f.slowSamples(models), f.duringSamples(models)): // else no row could have stood out (release demo, seed 3: 95% slow)
		b.corroborate("spread_over_pool", 1, 1, 0.15, "No replica or node stands out among the slow requests.")
	}
	// The sentence says how many replicas the GPU figure covers: some
	// replicas' exporters may be missing.
	gpu, n := f.gpuUtilCount(models)
	if !math.IsNaN(gpu) {
		reps := 0
		for _, m := range models {
			reps += judgedReplicas(f.allReps[m])
		}
		covered := kOfN(n, n, "affected replica")
		if reps > n {
			covered = fmt.Sprintf("%d of the %d affected replicas (those with GPU data)", n, reps)
		}
		b.support("gpu_busy", gpu, ramp(gpu, 70, 92), 0.10, "Median GPU utilisation of %s is %.0f%%.", covered, gpu)
	} else if g, nodes := f.nodeGPUUtil(models); !math.IsNaN(g) {
		// GPUs measured per node only: the nodes the affected replicas
		// run on, whose average may include other models' GPUs.
		gpu = g
		b.support("gpu_busy", gpu, ramp(gpu, 70, 92), 0.10, "Median GPU utilisation of %s %s, which the affected replicas run on, is %.0f%% (measured per node).",
			verbFor(len(nodes), "node", "nodes"), list(nodes), gpu)
	}
	// An LLM server whose KV cache is full makes requests wait for cache
	// blocks, or preempts and recomputes them: a capacity limit its GPU
	// utilisation need not show.
	kv, kvN, kvBefore := f.kvCacheUse(models)
	if !math.IsNaN(kv) {
		was := ""
		if !math.IsNaN(kvBefore) {
			was = fmt.Sprintf(", against %.0f%% before the onset", 100*kvBefore)
		}
		b.support("kv_cache_full", kv, ramp(kv, 0.85, 0.97), 0.10, "The KV cache of %s is %.0f%% used during the spike (median%s).", kOfN(kvN, kvN, "measured replica"), 100*kv, was)
	}
	if len(models) >= 2 {
		br := safeRatio(float64(len(models)), float64(f.modelsWithData()))
		b.corroborate("several_models", br, ramp(br, 0.3, 0.8), 0.10, "%d models slowed down together.", len(models))
	}
	t, r, share := f.tenantSurge(models)
	if t != "" {
		e := b.support("tenant_surge", r, ramp(r, 1.3, 3), 0.15, "Tenant %s's traffic rose ×%.1f and is now %.0f%% of the requests of %s.", t, r, 100*share, list(models))
		if c, ok := f.concentrationOf("tenant", t); ok {
			e.restsOn("", "", c.Dims)
		}
	}
	target := Target{}
	if len(models) >= 2 {
		target.Models = append([]string(nil), models...)
		sort.Strings(target.Models)
	} else {
		target.Model = models[0]
	}
	return f.done(b, capacitySummary(b, capacityFacts{q: q, gpu: gpu, saturationKnown: queueKnown || !math.IsNaN(kv),
		tenant: t, tenantRatio: r, length: l, queueRose: f.queueRose(models, stages), scaledUp: f.scaledUpOnly(models)}), target)
}

// capacityFacts are the figures capacity's summary words besides its
// evidence.
type capacityFacts struct {
	q, gpu float64 // traffic ratio; GPU utilisation (NaN: not measured)
	// saturationKnown: a queue (time or length) or a KV cache is
	// measured, so "no queue or GPU data" would deny it.
	saturationKnown bool
	tenant          string
	tenantRatio     float64
	length          lengthChange // requests that got longer, when its evidence is shown
	queueRose       string       // a queue that at least doubled (queueRose), "" if none
	scaledUp        bool         // the models' pools scaled up near the onset and none scaled down
}

// scaledUpOnly reports whether a scale-up of the models came within the
// cold-start window before the onset or after it, and no scale-down in
// the window: their pools grew, they did not shrink.
func (f *facts) scaledUpOnly(models []string) bool {
	up := false
	for _, e := range f.events {
		if !slices.Contains(models, e.Model) {
			continue
		}
		switch e.Kind {
		case KindScaleDown:
			return false
		case KindScaleUp:
			up = up || e.OffsetS >= -youngAge.Seconds()
		}
	}
	return up
}

// capacitySummary says what the evidence shows: the traffic change (and
// the tenant behind it), and that the pool saturated only when queues or
// GPUs show it.
//
// Requests that got longer are more demand at the same request rate: an
// LLM pool's work is tokens. A queue that rose several-fold but explains
// little of the tail's growth (beside execution that grew more) is still
// a queue: "queues do not show" would deny it.
func capacitySummary(b *causeBuilder, cf capacityFacts) string {
	q, gpu, tenant, tenantRatio, l := cf.q, cf.gpu, cf.tenant, cf.tenantRatio, cf.length
	var sat []string
	if b.shown("queue_growth") >= claimed {
		sat = append(sat, "requests queue")
	}
	if b.shown("gpu_busy") >= 0.5 {
		sat = append(sat, fmt.Sprintf("GPUs run at %.0f%%", gpu))
	}
	if b.shown("kv_cache_full") >= 0.5 {
		sat = append(sat, "the KV cache is full")
	}
	surge, outgrew := fmt.Sprintf("Traffic rose ×%.2f", q), " and outgrew"
	longer := b.shown("requests_longer") >= claimed && b.shown("traffic_up") < claimed
	switch {
	case tenant != "":
		surge, outgrew = fmt.Sprintf("A traffic surge (tenant %s ×%.1f)", tenant, tenantRatio), " outgrew"
	case longer && math.IsNaN(q):
		surge = fmt.Sprintf("Requests got longer (×%.2f %s each; the request rate is not known)", l.ratio, l.what())
	case longer:
		surge = fmt.Sprintf("Requests got longer (×%.2f %s each, at ×%.2f the request rate)", l.ratio, l.what(), q)
	}
	switch {
	case math.IsNaN(q) && (tenant == "" || b.shown("tenant_surge") < claimed) && !longer:
		return "The traffic change is unknown (no request-rate curve or samples), so capacity cannot be judged from it."
	case b.shown("traffic_up") < claimed && b.shown("tenant_surge") < claimed && !longer && len(sat) > 0:
		// Queues (or busy GPUs) without more demand: each request took
		// longer, or fewer replicas served. "No sign" would deny the
		// queue the stage table shows.
		// "Or shrank" of a pool that scaled up (a cold start's) said what
		// the scale events deny.
		how := "the pool served more slowly or shrank"
		if cf.scaledUp {
			how = "the pool served more slowly (it was scaled up, not shrunk)"
		}
		return fmt.Sprintf("Traffic did not rise much (×%.2f against the hour before), though %s: %s; demand did not outgrow it.", q, strings.Join(sat, " and "), how)
	case b.shown("traffic_up") < claimed && b.shown("tenant_surge") < claimed && !longer:
		return fmt.Sprintf("Traffic did not rise much (×%.2f against the hour before): no sign that demand outgrew the pool.", q)
	case len(sat) > 0:
		return surge + outgrew + " the serving capacity: " + strings.Join(sat, " and ") + "."
	case !cf.saturationKnown && math.IsNaN(gpu):
		return surge + "; no queue or GPU data shows whether the pool saturated."
	case cf.queueRose != "":
		return surge + "; " + cf.queueRose + ", though queueing explains little of the tail's growth."
	}
	return surge + ", but queues and GPUs do not show the pool saturating."
}

// tenantSurge finds the tenant whose request rate grew most across the
// models (from sample weights, at least minQuantileSamples samples of it
// in each phase), if it carries at least 10 % of the models' traffic
// during the spike — of all their sampled requests, tenant or not.
func (f *facts) tenantSurge(models []string) (tenant string, ratio, shareDuring float64) {
	type acc struct {
		b, d   float64
		nb, nd int
	}
	per := map[string]*acc{}
	var totD float64
	for _, m := range models {
		if st := f.ss.byModel[m]; st != nil {
			totD += st.duringW
		}
		for t, w := range f.tenantWeights(m) {
			a := per[t]
			if a == nil {
				a = &acc{}
				per[t] = a
			}
			a.b += w.w[0]
			a.d += w.w[1]
			a.nb += w.n[0]
			a.nd += w.n[1]
		}
	}
	// The weights were split at the samples' own phases (see newSampleSet),
	// which may start earlier than the curves'; rates divide by the part
	// of those the samples cover.
	bs, ds := f.ss.beforeSpanS, f.ss.duringSpanS
	if bs <= 0 || ds <= 0 || totD == 0 {
		return "", 0, 0
	}
	for _, t := range sortedKeys(per) {
		a := per[t]
		if a.nb < minQuantileSamples || a.nd < minQuantileSamples || a.d/totD < 0.1 {
			continue
		}
		r := (a.d / ds) / (a.b / bs)
		if r > ratio {
			tenant, ratio, shareDuring = t, r, a.d/totD
		}
	}
	if ratio < 1.3 {
		return "", 0, 0
	}
	return tenant, ratio, shareDuring
}

// tenantTally is one tenant's requests (sample weights) and samples
// before and during the spike.
type tenantTally struct {
	w [2]float64
	n [2]int
}

// tenantWeights is a model's requests per tenant before and during the
// spike (from sample weights), counted once per analysis.
func (f *facts) tenantWeights(m string) map[string]tenantTally {
	if w, ok := f.tenantCache[m]; ok {
		return w
	}
	out := map[string]tenantTally{}
	if st := f.ss.byModel[m]; st != nil {
		var tenants smallIndex
		var per []tenantTally
		for phase, list := range st.phase {
			for _, i := range list {
				s := &f.ss.all[i]
				if s.Tenant == "" {
					continue
				}
				ti := tenants.get(s.Tenant)
				if ti == len(per) {
					per = append(per, tenantTally{})
				}
				per[ti].w[phase] += s.SampleRate
				per[ti].n[phase]++
			}
		}
		for i, t := range tenants.vals {
			out[t] = per[i]
		}
	}
	if f.tenantCache == nil {
		f.tenantCache = map[string]map[string]tenantTally{}
	}
	f.tenantCache[m] = out
	return out
}

// queueRise is, of models, the model-level queue-length curve that rose
// most (its deviation), false without any.
func (f *facts) queueRise(models []string) (CurveDeviation, bool) {
	var best CurveDeviation
	found := false
	for _, m := range models {
		d := f.modelDeviation(RoleQueue, m, "")
		if math.IsNaN(d.Before) || math.IsNaN(d.During) {
			continue
		}
		if !found || d.During-d.Before > best.During-best.Before {
			best, found = d, true
		}
	}
	return best, found
}

// kvCacheUse is the median KV-cache use (0..1) of models' replicas during
// the spike (their model-level curves where no replica has one), how many
// curves it is the median of, and their median before the onset (NaN where
// unknown); NaN without KV-cache curves.
func (f *facts) kvCacheUse(models []string) (during float64, n int, before float64) {
	var ds, bs []float64
	for _, level := range []Level{LevelReplica, LevelModel} {
		for _, m := range models {
			for _, c := range f.cs.get(RoleKVCache, level, Scope{Model: m}, "") {
				if v := periodMedian(c, f.ph.Onset, f.ph.DuringTo); !math.IsNaN(v) {
					ds = append(ds, v)
					if w := periodMedian(c, f.ph.BeforeFrom, f.ph.Onset); !math.IsNaN(w) {
						bs = append(bs, w)
					}
				}
			}
		}
		if len(ds) > 0 {
			break
		}
	}
	if len(ds) == 0 {
		return math.NaN(), 0, math.NaN()
	}
	before = math.NaN()
	if len(bs) > 0 {
		before = median(bs)
	}
	return median(ds), len(ds), before
}

// queueRose words a queue that at least doubled — its time (stages) or,
// unmeasured, its waiting requests — "" when none did.
func (f *facts) queueRose(models []string, stages []StageShare) string {
	for _, s := range stages {
		if s.Stage == "queue" && s.BeforeMs > 0 && s.DuringMs >= 2*s.BeforeMs {
			return fmt.Sprintf("the queue time rose from %s to %s", fmtMs(s.BeforeMs), fmtMs(s.DuringMs))
		}
	}
	if d, ok := f.queueRise(models); ok && d.During-d.Before >= 1 && d.During+0.5 >= 2*(d.Before+0.5) && d.Score >= 0.5 {
		return fmt.Sprintf("the waiting requests rose from %s to %s", trimZero(fmt.Sprintf("%.1f", d.Before)), trimZero(fmt.Sprintf("%.1f", d.During)))
	}
	return ""
}
