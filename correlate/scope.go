package correlate

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// modelImpact is how much one model's latency rose, from curves and samples.
type modelImpact struct {
	model     string
	before    float64 // P99 median before (ms), curves or samples
	during    float64 // P99 median during
	ratio     float64 // during / before
	dev       float64 // robust deviation of the P99 curve (NaN without curves)
	slowFrac  float64 // weighted share of requests over the threshold during (NaN without samples)
	slowBase  float64 // the same before
	affected  bool
	fromCurve bool
	quantile  string // "P99", "P95" when only a P95 curve measured it, "mean" when only a mean curve did
}

// Thresholds for "this model carries the spike". They are deliberately
// generic: a 20 % rise that is also 3 IQRs away from the baseline, or three
// times the usual share of slow requests.
const (
	affectedRatio    = 1.2
	affectedDev      = 3
	affectedSlowLift = 3
	affectedSlowMin  = 0.03
)

// modelImpacts measures every model's latency change.
func modelImpacts(cs *curveSet, ss *sampleSet, ph phases) []modelImpact {
	seen := map[string]*modelImpact{}
	var order []string
	get := func(m string) *modelImpact {
		if mi := seen[m]; mi != nil {
			return mi
		}
		mi := &modelImpact{model: m, quantile: "P99", before: math.NaN(), during: math.NaN(), ratio: math.NaN(), dev: math.NaN(), slowFrac: math.NaN(), slowBase: math.NaN()}
		seen[m] = mi
		order = append(order, m)
		return mi
	}
	for _, role := range []Role{RoleLatencyP99, RoleLatencyP95} {
		for _, c := range cs.get(role, LevelModel, Scope{}, "") {
			mi := get(c.Scope.Model)
			if mi.fromCurve {
				continue // P99 preferred; P95 only where P99 is missing
			}
			d := deviation(c, ph)
			if math.IsNaN(d.Before) {
				continue
			}
			mi.before, mi.during, mi.dev, mi.fromCurve = d.Before, d.During, d.Deviation, true
			if role == RoleLatencyP95 {
				mi.quantile = "P95"
			}
			mi.ratio = safeRatio(mi.during, mi.before)
		}
	}
	for _, m := range ss.models() {
		st := ss.byModel[m]
		mi := get(m)
		mi.slowFrac, mi.slowBase = st.slowFracDuring(), st.slowFracBefore()
		if !mi.fromCurve && !math.IsNaN(st.p99Before) {
			mi.before, mi.during = st.p99Before, st.p99During
			mi.ratio = safeRatio(mi.during, mi.before)
		}
	}
	// The mean, where no quantile curve measured the model (Triton without
	// its summary): named "mean" wherever quoted. A curve is the fuller
	// picture, so it wins over the samples' P99 as a quantile curve does.
	for _, c := range cs.get(RoleLatencyMean, LevelModel, Scope{}, "") {
		mi := get(c.Scope.Model)
		if mi.fromCurve {
			continue
		}
		d := deviation(c, ph)
		if math.IsNaN(d.Before) {
			continue
		}
		mi.before, mi.during, mi.dev, mi.fromCurve, mi.quantile = d.Before, d.During, d.Deviation, true, "mean"
		mi.ratio = safeRatio(mi.during, mi.before)
	}
	out := make([]modelImpact, 0, len(order))
	for _, m := range order {
		mi := seen[m]
		byCurve := mi.fromCurve && mi.ratio >= affectedRatio && mi.dev >= affectedDev
		bySamples := !math.IsNaN(mi.slowFrac) && mi.slowFrac >= affectedSlowMin &&
			mi.slowFrac >= affectedSlowLift*math.Max(mi.slowBase, 0.01)
		if mi.fromCurve {
			// Curves are the fuller picture; samples only confirm.
			mi.affected = byCurve || (bySamples && mi.ratio >= 1.1)
		} else {
			mi.affected = bySamples || (!math.IsNaN(mi.ratio) && mi.ratio >= 1.5)
		}
		out = append(out, *mi)
	}
	sort.Slice(out, func(i, j int) bool { return impactScore(out[i]) > impactScore(out[j]) })
	return out
}

// noRise says why no model carries the spike when their latency cannot
// be judged: no latency curve or sample at all, or latency data that
// starts after the first half of the baseline period, too little before
// the onset to compare with (a curve pulled from the onset on, a P99 that
// rose two minutes after its first point — the detector, without
// history, finds no spike and the analysis compares the spike with
// itself). Such data must not read as "no rise, nothing to explain".
// "" when some model is affected, or when every model was judged and none
// rose.
func (f *facts) noRise() string {
	if len(f.affected) > 0 {
		return ""
	}
	// An incident scoped to one model is judged on that model alone:
	// the others' flat curves say nothing of one never seen.
	models := f.models
	if m := f.scope.Model; m != "" {
		models = nil
		for _, mi := range f.models {
			if mi.model == m {
				models = append(models, mi)
			}
		}
		if len(models) == 0 {
			return fmt.Sprintf("No latency curve or request sample of %s covers this window, so whether its latency rose cannot be judged.", m)
		}
	}
	if len(models) == 0 {
		return "No latency curve or request sample covers this window, so whether latency rose cannot be judged."
	}
	// Half the baseline, not the phases' shortest one (earliestBefore):
	// without a spike found the onset is a guess inside the window, and a
	// short baseline before it may be the spike itself. Refusing a verdict
	// on 25 flat minutes costs less than "no rise" over a spike.
	enough := f.ph.BeforeFrom.Add(f.ph.BeforeTo.Sub(f.ph.BeforeFrom) / 2)
	var unjudged []string
	first := time.Time{}
	for _, m := range models {
		from, ok := f.latencyFrom(m)
		if math.IsNaN(m.before) && math.IsNaN(m.slowBase) || ok && from.After(enough) {
			unjudged = append(unjudged, m.model)
			// Where the data begins is the reason only when it begins
			// late; data reaching far back at a coarse step (hourly
			// points, one in the baseline hour) lacks points, not history.
			if ok && from.After(enough) && (first.IsZero() || from.Before(first)) {
				first = from
			}
		}
	}
	since := ""
	if !first.IsZero() {
		since = " (it starts at " + first.UTC().Format("15:04") + " UTC)"
	}
	switch {
	case len(unjudged) == 0:
		return f.latencyHole(models)
	case len(unjudged) == len(models):
		return fmt.Sprintf("Whether latency rose cannot be judged: %s %s too little latency data before the onset to compare with%s.", list(unjudged), verbFor(len(unjudged), "has", "have"), since)
	}
	return fmt.Sprintf("No judged model's latency clearly rose; %s %s too little latency data before the onset%s, so %s cannot be judged.", list(unjudged), verbFor(len(unjudged), "has", "have"), since, pronoun(len(unjudged)))
}

// latencyHole says, when a judged model's latency curve has no points
// for a stretch of the incident window (a scrape outage, a pull that
// failed), that "no rise" holds only where the curve has data: a spike
// inside the hole is not seen. "" when every curve covers the window.
func (f *facts) latencyHole(models []modelImpact) string {
	if f.window.From.IsZero() {
		return ""
	}
	from, to := f.window.From.UnixMilli(), f.window.To.UnixMilli()
	var holed []string
	var holeFrom, holeTo int64
	for _, m := range models {
		var c *Curve
		for _, role := range []Role{RoleLatencyP99, RoleLatencyP95, RoleLatencyMean} {
			if c = f.cs.model(role, m.model, ""); c != nil {
				break
			}
		}
		if c == nil || len(c.Points) < 3 {
			continue
		}
		minHole := holeMin(c)
		for i := 1; i < len(c.Points); i++ {
			a, b := c.Points[i-1].T, c.Points[i].T
			if b <= from || a >= to || b-a <= minHole {
				continue
			}
			if !containsStr(holed, m.model) {
				holed = append(holed, m.model)
			}
			if b-a > holeTo-holeFrom {
				holeFrom, holeTo = a, b
			}
		}
	}
	if len(holed) == 0 {
		return ""
	}
	whose := fmt.Sprintf("%s's latency curve has", holed[0])
	if len(holed) > 1 {
		whose = fmt.Sprintf("the latency curves of %s have", list(holed))
	}
	return fmt.Sprintf("No model's latency clearly rose where the curves have data, but %s no points from %s to %s UTC: a rise then cannot be seen.",
		whose, time.UnixMilli(holeFrom).UTC().Format("15:04"), time.UnixMilli(holeTo).UTC().Format("15:04"))
}

// holeMin is how long a stretch without points must be to be a hole in
// c: longer than five minutes and than three of the curve's own steps
// (hourly points are no hole).
func holeMin(c *Curve) int64 {
	var steps []float64
	for i := 1; i < len(c.Points); i++ {
		steps = append(steps, float64(c.Points[i].T-c.Points[i-1].T))
	}
	return max(int64(5*time.Minute/time.Millisecond), int64(3*median(steps)))
}

// onsetGap is the last point before the onset of the located spike's
// latency curve when that curve has a hole ending at the onset (a scrape
// outage, a pull that failed): the rise happened somewhere in the hole,
// and the onset is only when it was first seen. ok is false otherwise.
func onsetGap(cs *curveSet, spikes []Spike, onset time.Time) (from time.Time, ok bool) {
	at := onset.UnixMilli()
	for _, s := range spikes {
		if !s.Onset.Equal(onset) {
			continue
		}
		for _, c := range cs.get(s.Role, s.Level, s.Scope, "") {
			if c.Scope != s.Scope || len(c.Points) < 3 {
				continue
			}
			last := int64(math.MinInt64)
			for _, p := range c.Points {
				if p.T < at && p.T > last && !math.IsNaN(p.V) {
					last = p.T
				}
			}
			if last == math.MinInt64 || at-last <= holeMin(c) {
				continue
			}
			if t := time.UnixMilli(last).UTC(); !ok || t.Before(from) {
				from, ok = t, true
			}
		}
	}
	return from, ok
}

// latencyFrom is the first point of the model-level latency curves that
// judged a model (P99, P95, P50; the mean where it stood in), or of its
// samples when it has no curve. A mean that reaches further back lends a
// quantile no baseline: the quantile was what was compared.
func (f *facts) latencyFrom(m modelImpact) (time.Time, bool) {
	model := m.model
	roles := []Role{RoleLatencyP99, RoleLatencyP95, RoleLatencyP50}
	if m.quantile == "mean" || !hasQuantile(f.cs, model) {
		roles = []Role{RoleLatencyMean}
	}
	var from time.Time
	for _, r := range roles {
		if c := f.cs.model(r, model, ""); c != nil && len(c.Points) > 0 {
			if t := c.Points[0].Time(); from.IsZero() || t.Before(from) {
				from = t
			}
		}
	}
	if !from.IsZero() {
		return from, true
	}
	for i := range f.ss.all {
		if s := &f.ss.all[i]; s.Model == model && (from.IsZero() || s.Time.Before(from)) {
			from = s.Time
		}
	}
	return from, !from.IsZero()
}

// pronoun is "it" or "they".
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "they"
}

// impactScore orders models by how hard they were hit.
func impactScore(m modelImpact) float64 {
	s := 0.0
	if m.affected {
		s += 100
	}
	if !math.IsNaN(m.ratio) {
		s += math.Min(m.ratio, 50)
	}
	return s
}

// replicaImpact is one replica's latency and traffic change.
type replicaImpact struct {
	replica, model, version, node string
	before, during                float64 // P99 medians (ms)
	ceiling                       float64 // the top bucket its P99 sat at during the spike (QuantileCeiling), 0: none
	ratio                         float64
	crossZ                        float64 // robust z of its during P99 against the other replicas of its model
	peerMedian                    float64 // the other replicas' median P99 during
	qpsBefore, qpsDuring          float64
	loadBefore, loadDuring        float64 // its QPS over the mean QPS of the replicas live at the same instant (median over the period)
	queueDev                      float64
	queue                         CurveDeviation // the replica's queue length before → during
	young                         bool
	outlier                       bool
}

// replicaImpacts compares every replica of a model with its peers at the
// same time (methods §7F "cross-sectional robust z"), from replica-level
// curves, or from samples when there are no curves.
func replicaImpacts(cs *curveSet, ss *sampleSet, ph phases, model string) []replicaImpact {
	byRep := map[string]*replicaImpact{}
	var order []string
	get := func(sc Scope) *replicaImpact {
		r := byRep[sc.Replica]
		if r == nil {
			r = &replicaImpact{replica: sc.Replica, model: model, before: math.NaN(), during: math.NaN(), ratio: math.NaN(),
				qpsBefore: math.NaN(), qpsDuring: math.NaN(), loadBefore: math.NaN(), loadDuring: math.NaN(), queueDev: math.NaN()}
			byRep[sc.Replica] = r
			order = append(order, sc.Replica)
		}
		if sc.Version != "" {
			r.version = sc.Version
		}
		if sc.Node != "" {
			r.node = sc.Node
		}
		return r
	}
	for _, c := range cs.get(RoleLatencyP99, LevelReplica, Scope{Model: model}, "") {
		r := get(c.Scope)
		r.before, r.during = periodMedian(c, ph.BeforeFrom, ph.BeforeTo), periodMedian(c, ph.Onset, ph.DuringTo)
		if top, ok := QuantileCeiling(pointsIn(c.Points, ph.Onset, ph.DuringTo), r.before); ok {
			r.ceiling = top
		}
	}
	qpsCurves := cs.get(RoleQPS, LevelReplica, Scope{Model: model}, "")
	for _, c := range qpsCurves {
		r := get(c.Scope)
		r.qpsBefore, r.qpsDuring = periodMedian(c, ph.BeforeFrom, ph.BeforeTo), periodMedian(c, ph.Onset, ph.DuringTo)
	}
	loads := relativeLoads(qpsCurves)
	for _, c := range qpsCurves {
		r := get(c.Scope)
		r.loadBefore = periodMedian(loads[c.Scope.Replica], ph.BeforeFrom, ph.BeforeTo)
		r.loadDuring = periodMedian(loads[c.Scope.Replica], ph.Onset, ph.DuringTo)
	}
	for _, c := range cs.get(RoleQueue, LevelReplica, Scope{Model: model}, "") {
		r := get(c.Scope)
		r.queue = deviation(c, ph)
		r.queueDev = r.queue.Deviation
	}
	if len(order) == 0 && ss != nil {
		samplesReplicaImpacts(ss, ph, model, get)
	}
	out := make([]replicaImpact, 0, len(order))
	for _, name := range order {
		r := byRep[name]
		r.ratio = safeRatio(r.during, r.before)
		if ss != nil {
			if st, ok := ss.started[name]; ok && st.After(ph.Onset.Add(-youngAge)) && st.Before(ph.DuringTo) {
				r.young = true
			}
		}
	}
	for _, name := range order {
		out = append(out, *byRep[name])
	}
	markOutliers(out)
	sort.Slice(out, func(i, j int) bool { return out[i].crossZ > out[j].crossZ })
	return out
}

// judgedReplicas counts the replicas whose latency during the spike is
// known: only those can stand out, or be peers.
func judgedReplicas(reps []replicaImpact) int {
	n := 0
	for _, r := range reps {
		if !math.IsNaN(r.during) {
			n++
		}
	}
	return n
}

// peersRise is the median P99 ratio (during / before) of a model's
// replicas that do not stand out and are not new: how much the model
// slowed apart from its outliers. NaN with fewer than two such peers.
func peersRise(reps []replicaImpact) float64 {
	var xs []float64
	for _, r := range reps {
		if !r.outlier && !r.young && !math.IsNaN(r.ratio) {
			xs = append(xs, r.ratio)
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	return median(xs)
}

// peersCarry says whether a model's ordinary replicas slowed by most of
// its own rise (in log terms): its outliers are then the worst of a
// broad slowdown, not the place it happened. modelRatio NaN or ≤ 1
// leaves it to the peers' own rise.
func peersCarry(peers, modelRatio float64) bool {
	if math.IsNaN(peers) || peers < peersSlowedRatio {
		return false
	}
	if math.IsNaN(modelRatio) || modelRatio <= 1 {
		return true
	}
	return math.Log(peers) >= 0.5*math.Log(modelRatio)
}

// peersSlowedRatio is the peers' P99 rise from which they count as slowed
// too: above what a sick replica's spilled load does to them.
const peersSlowedRatio = 1.3

// minQuantileSamples is the fewest samples a replica or a version needs
// in a phase for its P99 and its share of traffic to be read from
// samples: below it the "P99" is one or two requests' latency. Ten, as
// for a concentration (minSlowToJudge): an incident's first analysis, a
// minute into a rollout, has a dozen or two per version.
const minQuantileSamples = 10

// samplesReplicaImpacts fills replica latencies from samples when no
// replica curves exist: the weighted P99 of each replica before and during.
func samplesReplicaImpacts(ss *sampleSet, ph phases, model string, get func(Scope) *replicaImpact) {
	type acc struct{ b, d []weighted }
	per := map[string]*acc{}
	scope := map[string]Scope{}
	st := ss.byModel[model]
	if st == nil {
		return
	}
	for phase, list := range st.phase {
		for _, i := range list {
			s := &ss.all[i]
			if s.Replica == "" {
				continue
			}
			a := per[s.Replica]
			if a == nil {
				a = &acc{}
				per[s.Replica] = a
				scope[s.Replica] = Scope{Model: s.Model, Version: s.Version, Replica: s.Replica, Node: s.Node}
			}
			w := weighted{s.TotalMs, s.SampleRate}
			if phase == 0 {
				a.b = append(a.b, w)
			} else {
				a.d = append(a.d, w)
			}
		}
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	var totB, totD float64
	var nB, nD int
	for _, n := range names {
		r := get(scope[n])
		a := per[n]
		r.before, r.during = math.NaN(), math.NaN()
		if len(a.b) >= minQuantileSamples {
			r.before = weightedQuantile(a.b, 0.99)
		}
		if len(a.d) >= minQuantileSamples {
			r.during = weightedQuantile(a.d, 0.99)
		}
		var wb, wd float64
		for _, x := range a.b {
			wb += x.W
		}
		for _, x := range a.d {
			wd += x.W
		}
		// Every replica's traffic counts in the pool's mean; a replica of
		// few samples (one scaled up during the spike) has no load of its
		// own, as its rate is then a handful of requests.
		qb, qd := wb/ss.ph.BeforeTo.Sub(ss.ph.BeforeFrom).Seconds(), wd/ss.ph.DuringTo.Sub(ss.ph.Onset).Seconds()
		r.qpsBefore, r.qpsDuring = math.NaN(), math.NaN()
		if len(a.b) >= minQuantileSamples {
			r.qpsBefore = qb
		}
		if len(a.d) >= minQuantileSamples {
			r.qpsDuring = qd
		}
		if wb > 0 {
			totB += qb
			nB++
		}
		if wd > 0 {
			totD += qd
			nD++
		}
	}
	for _, n := range names {
		r := get(scope[n])
		if r.qpsBefore > 0 {
			r.loadBefore = r.qpsBefore / (totB / float64(nB))
		}
		if r.qpsDuring > 0 {
			r.loadDuring = r.qpsDuring / (totD / float64(nD))
		}
	}
}

// relativeLoads turns per-replica QPS curves into relative-load curves: at
// each instant, a replica's QPS over the mean QPS of the replicas that
// reported at that instant. Computing it per instant, among the replicas
// alive then, keeps rollouts (replicas coming and going) from looking like
// traffic shifts.
func relativeLoads(qps []*Curve) map[string]*Curve {
	type agg struct {
		sum float64
		n   int
	}
	at := map[int64]*agg{}
	for _, c := range qps {
		for _, p := range c.Points {
			if math.IsNaN(p.V) {
				continue
			}
			a := at[p.T]
			if a == nil {
				a = &agg{}
				at[p.T] = a
			}
			a.sum += p.V
			a.n++
		}
	}
	out := make(map[string]*Curve, len(qps))
	for _, c := range qps {
		lc := &Curve{Role: c.Role, Level: c.Level, Scope: c.Scope, Points: make([]Point, 0, len(c.Points))}
		for _, p := range c.Points {
			a := at[p.T]
			if a == nil || a.n < 2 || a.sum <= 0 || math.IsNaN(p.V) {
				continue
			}
			lc.Points = append(lc.Points, Point{T: p.T, V: p.V / (a.sum / float64(a.n))})
		}
		out[c.Scope.Replica] = lc
	}
	return out
}

// imbalance returns, for a model, the median over each period of the
// busiest live replica's relative load (1 = perfectly even).
func imbalance(cs *curveSet, ph phases, model string) (before, during float64) {
	loads := relativeLoads(cs.get(RoleQPS, LevelReplica, Scope{Model: model}, ""))
	maxAt := map[int64]float64{}
	for _, c := range loads {
		for _, p := range c.Points {
			if p.V > maxAt[p.T] {
				maxAt[p.T] = p.V
			}
		}
	}
	pts := make([]Point, 0, len(maxAt))
	for t, v := range maxAt {
		pts = append(pts, Point{T: t, V: v})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].T < pts[j].T })
	return median(values(pts, ph.BeforeFrom, ph.BeforeTo)), median(values(pts, ph.Onset, ph.DuringTo))
}

// markOutliers compares every replica with its peers of the same model at
// the same time, leaving the replica itself out of the reference (with two
// or three replicas a median that includes the suspect is no reference at
// all). A replica stands out when it got worse than its peers did and is
// now clearly above them: 1.5× their median P99, or 1.2× when its own P99
// rose 1.5× more than theirs (a mild fault on a replica that is usually
// faster than average); with enough peers to estimate a spread it must
// also sit 4 robust z above them.
func markOutliers(reps []replicaImpact) {
	for i := range reps {
		r := &reps[i]
		r.crossZ, r.peerMedian = math.NaN(), math.NaN()
		if math.IsNaN(r.during) {
			continue
		}
		var peers, peerRatios []float64
		for j := range reps {
			if j == i {
				continue
			}
			if !math.IsNaN(reps[j].during) {
				peers = append(peers, reps[j].during)
			}
			if !math.IsNaN(reps[j].ratio) {
				peerRatios = append(peerRatios, reps[j].ratio)
			}
		}
		if len(peers) == 0 {
			continue
		}
		ps := robust(peers, 0.1, 1)
		r.peerMedian = ps.Median
		r.crossZ = (r.during - ps.Median) / ps.Scale
		rel := safeRatio(r.during, ps.Median)
		spread := len(peers) < 4 || r.crossZ >= 4
		if math.IsNaN(r.ratio) {
			// New replica: only its level against the peers can tell.
			r.outlier = rel >= 1.5 && spread
			continue
		}
		// It got worse, and worse than its peers did: a replica that was
		// always slower (an older GPU, say) is not news.
		peerChange := 1.0
		if len(peerRatios) > 0 {
			peerChange = median(peerRatios)
		}
		grewAlone := r.ratio >= 1.3 && r.ratio >= 1.3*peerChange
		r.outlier = grewAlone && spread && (rel >= 1.5 || (rel >= 1.2 && r.ratio >= 1.5*peerChange))
	}
}
