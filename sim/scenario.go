package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/waterline-dev/waterline/correlate"
)

// cause is what inject decided, for the truth and the confounders.
type cause struct {
	action    float64 // when it was set off (s from start)
	effect    float64 // first request touched
	recovered float64 // +Inf when it lasts
	model     *model  // the hit model, if one
	node      *node   // the hit node (local_replica)
	event     *correlate.Event
}

// inject plants the scenario's root cause into the fleet's plan. Every
// cause changes an input of the simulation (a version's speed, a tenant's
// traffic, a node's clocks, a batch window, new cold pods, a dependency's
// latency, routing weights, the gateway's capacity), never an output.
func (f *Fleet) inject(r *rand.Rand) error {
	o := f.opts
	onset := o.Onset.Seconds()
	if onset == 0 {
		onset = math.Round(f.dur*0.66 + (r.Float64()-0.5)*600)
	}
	end := inf
	if o.EffectDuration > 0 {
		end = onset + o.EffectDuration.Seconds()
	}
	s := o.Strength
	// Targets are drawn from their own stream keyed by the scenario, so one
	// seed hits different models in different scenarios while the fleet
	// itself stays the same.
	f.pick = rand.New(rand.NewPCG(uint64(o.Seed), hashStr(o.Seed, "target", string(o.Scenario))))
	f.depend = dependencyPlan{median: 0.014, sigma: 0.35, mul: 1, sigma2: 0.35, timeout: 1}
	c := cause{action: onset, effect: onset, recovered: end}
	tr := &f.truth
	tr.Category, tr.Strength = string(o.Scenario), s
	u := math.Min(0.95, 0.6+0.2*s) // target share of full-batch capacity, load-driven causes
	var err error

	switch o.Scenario {
	case None:
		f.markAll()
	case Release:
		err = f.injectRelease(r, &c, s, end)
	case Capacity:
		err = f.injectCapacity(r, &c, u, end)
	case LocalReplica:
		err = f.injectLocal(r, &c, s, end)
	case Batching:
		err = f.injectBatching(r, &c, s, end)
	case ColdStart:
		err = f.injectColdStart(r, &c, s)
	case Downstream:
		err = f.injectDownstream(&c, s, end)
	case Routing:
		err = f.injectRouting(r, &c, u, end)
	case Ingress:
		f.gateway.cut = effect{from: onset, to: end, ramp: 60}
		f.gateway.cutTo = math.Min(0.93, 0.82+0.06*s)
		e := f.changeEvent(correlate.KindConfigChange, "platform-config", "",
			"ingress-gateway: cpu limit 4 -> 1.5 cores per replica", onset,
			map[string]any{"component": "ingress-gateway", "key": "resources.limits.cpu", "from": "4", "to": "1.5"})
		c.event = &e
		tr.Notes = append(tr.Notes, fmt.Sprintf("gateway capacity cut: utilisation to ~%.2f at onset, queueing in the gateway stage for every model", f.gateway.cutTo))
		f.markAll()
	}
	if err != nil {
		return err
	}
	f.cause = c
	if c.event != nil {
		tr.CauseEventID = c.event.ID
		if o.HideCauseEvent {
			tr.CauseEventHidden = true
		} else {
			f.events = append(f.events, *c.event)
		}
	}
	if o.Scenario != None {
		on := f.at(c.effect)
		ch := f.at(c.action)
		tr.Onset, tr.ChangeTime = &on, &ch
		if c.recovered < f.dur {
			rec := f.at(c.recovered)
			tr.Recovered = &rec
		}
	}
	f.measureWindows(c)
	return nil
}

// markAll measures the truth's P99 over every model.
func (f *Fleet) markAll() {
	for _, m := range f.models {
		m.measured = true
	}
	f.measured.what = "all models"
}

// measureWindows sets the before window (30 min up to the effect) and the
// during window (from 2 min after it for up to 18 min, or the first 6 min of
// a cold start, which fades by itself).
func (f *Fleet) measureWindows(c cause) {
	ms := &f.measured
	ms.from0, ms.to0 = math.Max(0, c.effect-1800), c.effect
	ms.from1, ms.to1 = c.effect+120, c.effect+1200
	if f.opts.Scenario == ColdStart {
		ms.from1, ms.to1 = c.effect, c.effect+360
	}
	ms.to1 = math.Min(math.Min(ms.to1, c.recovered), f.dur)
	if ms.to1 <= ms.from1 {
		ms.from1 = ms.to0
	}
}

// pickModel returns the model named by Options.Target, or a seeded choice
// among the models ok accepts.
func (f *Fleet) pickModel(r *rand.Rand, ok func(*model) bool) (*model, error) {
	if t := f.opts.Target; t != "" {
		m := f.modelByName(t)
		if m == nil {
			return nil, fmt.Errorf("target %q: no such model in this fleet", t)
		}
		if !ok(m) {
			return nil, fmt.Errorf("target %q: not eligible for %s", t, f.opts.Scenario)
		}
		return m, nil
	}
	var cand []*model
	for _, m := range f.models {
		if ok(m) {
			cand = append(cand, m)
		}
	}
	if len(cand) == 0 {
		return nil, fmt.Errorf("no model of this fleet is eligible for %s", f.opts.Scenario)
	}
	return cand[f.pick.IntN(len(cand))], nil
}

func anyModel(*model) bool { return true }

func (f *Fleet) markModel(m *model) {
	m.measured = true
	f.measured.what = "model " + m.spec.name
}

func (f *Fleet) injectRelease(r *rand.Rand, c *cause, s, end float64) error {
	m, err := f.pickModel(r, anyModel)
	if err != nil {
		return err
	}
	from := f.versionAt(m, c.action)
	to := bumpVersion(from)
	vf := 1 + 0.8*s
	pods, err := f.rollout(r, m, to, c.action, vf)
	if err != nil {
		return err
	}
	e := f.deployEvent(m, correlate.KindDeploy, from, to, c.action)
	c.event, c.model, c.effect = &e, m, pods[0].ready
	last := pods[len(pods)-1].ready
	if end < inf {
		end = math.Max(end, last+60)
		back, err := f.rollout(r, m, from, end, 1)
		if err != nil {
			return err
		}
		f.events = append(f.events, f.deployEvent(m, correlate.KindRollback, to, from, end))
		c.recovered = back[len(back)-1].ready
	}
	f.truth.Target = correlate.Target{Model: m.spec.name, Version: to}
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("rolling update of %s %s -> %s: the new version's exec is x%.2f (%d pods replaced over %.0f s)", m.spec.name, from, to, vf, len(pods), last-c.action))
	f.markModel(m)
	return nil
}

func (f *Fleet) injectCapacity(r *rand.Rand, c *cause, u, end float64) error {
	m, err := f.pickModel(r, anyModel)
	if err != nil {
		return err
	}
	// The surge comes from one of the model's three largest tenants.
	top := []int{}
	for j := range f.tenants {
		if m.shares[j] > 0 && len(top) < 3 {
			top = append(top, j)
		}
	}
	j := top[r.IntN(len(top))]
	capTot := 0.0
	for _, p := range f.livePods(m, c.action) {
		capTot += capacityPerReplica(m, p)
	}
	base := f.nominalRate(m, c.action)
	extra := math.Max(u*capTot-base, 0.3*base)
	m.surge = effect{from: c.action, to: end, ramp: 120}
	m.surgeTen, m.surgeRPS = j, extra
	c.model = m
	f.truth.Target = correlate.Target{Model: m.spec.name, Tenant: f.tenants[j]}
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("tenant %s surges by +%.0f req/s on %s (%.0f -> %.0f req/s, ~%.0f%% of the pool's full-batch capacity)", f.tenants[j], extra, m.spec.name, base, base+extra, 100*(base+extra)/capTot))
	f.markModel(m)
	return nil
}

func (f *Fleet) injectLocal(r *rand.Rand, c *cause, s, end float64) error {
	var cand []*node
	for _, n := range f.nodes {
		if f.opts.Target != "" && n.name != f.opts.Target {
			continue
		}
		if len(f.podsOn(n, c.action)) > 0 {
			cand = append(cand, n)
		}
	}
	if len(cand) == 0 {
		return fmt.Errorf("local_replica: no node named %q runs a pod at the onset", f.opts.Target)
	}
	n := cand[f.pick.IntN(len(cand))]
	n.throttle = effect{from: c.action, to: end, ramp: 60}
	n.slowdown = 1 + 0.9*s
	c.node = n
	f.measured.what = "pods on " + n.name
	return nil
}

// finishLocal names the throttled node's pods in the truth once every pod
// is planned (a confounder may have replaced pods on it before the onset).
func (f *Fleet) finishLocal() {
	n := f.cause.node
	if n == nil {
		return
	}
	t := correlate.Target{Node: n.name}
	for _, p := range f.podsOn(n, f.cause.action) {
		p.measured = true
		t.Replicas = append(t.Replicas, p.name)
	}
	if len(t.Replicas) == 1 {
		t.Replica = t.Replicas[0]
	}
	f.truth.Target = t
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("GPU thermal throttling on %s: exec x%.2f for its %d pods; the node stays Ready", n.name, n.slowdown, len(t.Replicas)))
}

// podsOn returns the pods on n serving at t.
func (f *Fleet) podsOn(n *node, t float64) []*pod {
	var out []*pod
	for _, p := range f.pods {
		if p.node == n && p.created <= t && t < p.stop {
			out = append(out, p)
		}
	}
	return out
}

func (f *Fleet) injectBatching(r *rand.Rand, c *cause, s, end float64) error {
	m, err := f.pickModel(r, anyModel)
	if err != nil {
		return err
	}
	old := m.spec.window
	nw := math.Round((old+0.5*s*m.spec.slo)*1000) / 1000
	// The serving runtime reloads the model config a few seconds after the push.
	m.window = append(m.window, stepValue{t: c.action + 5, v: nw})
	us := func(x float64) string { return fmt.Sprint(int(math.Round(x * 1e6))) }
	attrs := map[string]any{"key": "dynamic_batching.max_queue_delay_microseconds", "from": us(old), "to": us(nw)}
	e := f.changeEvent(correlate.KindConfigChange, "model-config", m.spec.name,
		fmt.Sprintf("%s dynamic_batching max_queue_delay_microseconds %s -> %s", m.spec.name, us(old), us(nw)), c.action, attrs)
	c.event, c.model, c.effect = &e, m, c.action+5
	if end < inf {
		m.window = append(m.window, stepValue{t: end + 5, v: old})
		f.events = append(f.events, f.changeEvent(correlate.KindConfigChange, "model-config", m.spec.name,
			fmt.Sprintf("%s dynamic_batching max_queue_delay_microseconds %s -> %s (revert)", m.spec.name, us(nw), us(old)), end,
			map[string]any{"key": attrs["key"], "from": us(nw), "to": us(old)}))
		c.recovered = end + 5
	}
	f.truth.Target = correlate.Target{Model: m.spec.name}
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("batch window of %s raised from %.0f ms to %.0f ms", m.spec.name, old*1000, nw*1000))
	f.markModel(m)
	return nil
}

func (f *Fleet) injectColdStart(r *rand.Rand, c *cause, s float64) error {
	m, err := f.pickModel(r, anyModel)
	if err != nil {
		return err
	}
	before := len(f.livePods(m, c.action))
	pods, err := f.scaleUp(r, m, c.action, 2, 4*s, 150)
	if err != nil {
		return err
	}
	t := correlate.Target{Model: m.spec.name}
	rec := 0.0
	for _, p := range pods {
		t.Replicas = append(t.Replicas, p.name)
		rec = math.Max(rec, coldRecovery(p))
	}
	c.model, c.effect, c.recovered = m, pods[0].ready, rec
	f.truth.Target = t
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("scheduled pre-scale of %s %d -> %d replicas; new pods pass readiness before their weights are resident: exec x%.1f at first, fading with tau %.0f s", m.spec.name, before, before+len(pods), 1+4*s, 150.0))
	f.markModel(m)
	return nil
}

func (f *Fleet) injectDownstream(c *cause, s, end float64) error {
	var names []string
	for _, m := range f.models {
		if m.spec.calls {
			names = append(names, m.spec.name)
			m.measured = true
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("downstream: no model of this fleet calls %s; use more models", dependencyName)
	}
	d := &f.depend
	d.slow = effect{from: c.action, to: end, ramp: 60}
	d.mul = 1 + 5*s
	d.sigma2 = d.sigma + 0.45*math.Min(s, 1.5)
	f.truth.Target = correlate.Target{Models: names}
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("%s degraded: median call latency x%.1f, spread %.2f -> %.2f; callers: %v", dependencyName, d.mul, d.sigma, d.sigma2, names))
	f.measured.what = "callers of " + dependencyName
	return nil
}

func (f *Fleet) injectRouting(r *rand.Rand, c *cause, u, end float64) error {
	// Piling traffic onto one replica only hurts if that replica then runs
	// near its capacity: prefer models where the skew can get there.
	reach := func(m *model) float64 {
		live := f.livePods(m, c.action)
		if len(live) < 2 {
			return 0
		}
		capMin := math.Inf(1)
		for _, p := range live {
			capMin = math.Min(capMin, capacityPerReplica(m, p))
		}
		return 0.92 * f.nominalRate(m, c.action) / capMin
	}
	best := 0.0
	for _, m := range f.models {
		best = math.Max(best, reach(m))
	}
	m, err := f.pickModel(r, func(m *model) bool {
		if f.opts.Target != "" {
			return reach(m) > 0
		}
		return reach(m) > 0 && reach(m) >= math.Min(u, best)
	})
	if err != nil {
		return err
	}
	live := f.livePods(m, c.action)
	hot := live[r.IntN(len(live))]
	n := float64(len(live))
	share := u * capacityPerReplica(m, hot) / f.nominalRate(m, c.action)
	share = math.Min(0.92, math.Max(share, 1/n+0.15))
	m.routes = append(m.routes, routeChange{t: c.action, hot: hot, share: share})
	pol := policyName(m)
	e := f.changeEvent(correlate.KindRouteChange, "gateway", m.spec.name,
		fmt.Sprintf("%s routing policy %s -> zone-aware (prefer zone of %s)", m.spec.name, pol, hot.node.name), c.action,
		map[string]any{"from": pol, "to": "zone_aware"})
	c.event, c.model = &e, m
	if end < inf {
		m.routes = append(m.routes, routeChange{t: end})
		f.events = append(f.events, f.changeEvent(correlate.KindRouteChange, "gateway", m.spec.name,
			fmt.Sprintf("%s routing policy zone-aware -> %s (revert)", m.spec.name, pol), end,
			map[string]any{"from": "zone_aware", "to": pol}))
	}
	f.truth.Target = correlate.Target{Model: m.spec.name, Replicas: []string{hot.name}}
	f.truth.Notes = append(f.truth.Notes,
		fmt.Sprintf("routing of %s piles %.0f%% of its traffic onto %s (was %.0f%%)", m.spec.name, 100*share, hot.name, 100/n))
	f.markModel(m)
	return nil
}

// policyName is m's default load-balancing policy as the gateway names it.
func policyName(m *model) string {
	if m.spec.leastReq {
		return "least_request"
	}
	return "random"
}
