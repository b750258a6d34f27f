package correlate

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Input is everything one analysis reads. Curves and events should reach
// back at least an hour before the window so the baseline is complete;
// samples may cover the same range.
type Input struct {
	Window  Window   // the incident window
	Scope   Scope    // restricts the spikes considered (zero = whole fleet)
	Curves  []Curve  // curves of any role and level
	Events  []Event  // events, pushed and derived
	Samples []Sample // request samples
	Step    time.Duration
	// SLO returns a model's latency SLO in ms; nil or false = unknown.
	SLO func(model string) (float64, bool)
}

// Analyze runs the whole pipeline on one incident window: spikes and onset,
// scope (article step 1), alignment of events and curves (step 2), sample
// analysis (step 3), and ranked hypotheses with evidence and actions. It
// is deterministic for a given input.
func Analyze(in Input) Analysis {
	if in.SLO == nil {
		in.SLO = func(string) (float64, bool) { return 0, false }
	}
	if in.Step <= 0 {
		in.Step = 15 * time.Second
	}
	cs := newCurveSet(in.Curves)
	spikes, onset, spikeEnd, found := locate(cs, in)
	dataFrom := in.Window.From.Add(-beforeSpan)
	ph := newPhases(onset, spikeEnd, dataFrom, in.Window.To)

	started := replicaStarts(in.Events, cs, dataFrom, in.Step)
	sph := ph
	if found {
		sph = ph.startingAt(samplesOnset(in.Samples, spikes, onset, in.SLO))
	}
	ss := newSampleSetWith(in.Samples, sph, in.SLO, started, curveP99Before(cs, sph))
	f := newFacts(cs, ss, ph, started, in.Scope)
	f.window = in.Window

	scope := f.scopeReport()
	aff := affectedScope{models: f.affectedSet, replicas: map[string]bool{}, nodes: map[string]bool{}}
	for _, r := range scope.Replicas {
		aff.replicas[r] = true
	}
	for _, n := range scope.Nodes {
		aff.nodes[n] = true
	}
	f.events = alignEvents(eventsIn(in.Events, ph.Onset.Add(-alignLookback), in.Window.To), onset, in.Step, aff)
	gapFrom, gapped := time.Time{}, false
	if found {
		gapFrom, gapped = onsetGap(cs, spikes, onset)
	}
	if gapped {
		for i := range f.events {
			f.events[i].gapFrom = gapFrom
		}
	}

	a := Analysis{
		Window:        in.Window,
		Spikes:        spikes,
		Scope:         scope,
		Stages:        f.stages,
		StageSource:   f.stageSource,
		StageModels:   stageModels(f),
		Concentration: f.conc,
		Events:        f.events,
		Deviations:    topDeviations(cs, ph, 50),
		Replicas:      replicaComparisons(f),
		Samples:       sampleSummary(ss, f.affectedSet),
	}
	f.data.events = len(f.events)
	f.slo = in.SLO
	a.Causes, a.NotAssessable = rankCauses(f)
	a.Coverage = f.coverage(a.NotAssessable)
	if found {
		t := onset
		a.Onset = &t
	}
	if gapped {
		a.OnsetGapFrom = &gapFrom
	}
	a.Impact = f.impacts(scope.Models, in.Window.To)
	a.Pools = pools(cs, ph, in.Window.To, scope.Models)
	a.RequestLengths = f.requestLengths()
	withPoolActions(a.Causes, a.Pools, ph.Onset, in.Window.To)
	if len(a.Impact) > 0 {
		a.P99BeforeMs, a.P99DuringMs = a.Impact[0].BaselineP99Ms, a.Impact[0].DuringP99Ms
	}
	a.Headline = headline(a.Impact, a.Causes[0], f.noRise())
	if top := topCause(a.Causes); top != nil {
		a.Reconciliation = f.reconcile(*top)
	}
	a.Checklist = checklist(a, f)
	if a.Spikes == nil {
		a.Spikes = []Spike{}
	}
	if a.Stages == nil {
		a.Stages = []StageShare{}
	}
	if a.Concentration == nil {
		a.Concentration = []Concentration{}
	}
	if a.Events == nil {
		a.Events = []AlignedEvent{}
	}
	if a.Impact == nil {
		a.Impact = []Impact{}
	}
	return a
}

// newFacts measures what the hypotheses read: every model's impact (the
// affected ones restricted to scope), every model's replicas, the
// concentration over the affected models' traffic, and the stage
// attribution (from samples, else from stage curves).
func newFacts(cs *curveSet, ss *sampleSet, ph phases, started map[string]time.Time, scope Scope) *facts {
	f := &facts{ph: ph, scope: scope, cs: cs, ss: ss, started: started, reps: map[string][]replicaImpact{}, allReps: map[string][]replicaImpact{}, affectedSet: map[string]bool{}}
	f.models = modelImpacts(cs, ss, ph)
	for _, m := range f.models {
		if m.affected {
			f.slowed = append(f.slowed, m.model)
		}
		if m.affected && (scope.Model == "" || scope.Model == m.model) {
			f.affected = append(f.affected, m.model)
			f.affectedSet[m.model] = true
		}
	}
	for _, m := range f.models {
		// Every model's replicas, not only the affected ones': a sick node
		// slows every pod on it, including those of models whose overall
		// P99 barely moved.
		f.allReps[m.model] = replicaImpacts(cs, ss, ph, m.model)
	}
	for _, m := range f.affected {
		f.reps[m] = f.allReps[m]
	}
	f.conc = concentrate(ss.concentrationTable(f.affectedSet), ConcentrationOptions{})
	fillTailShares(f.conc, ss)
	f.data = indexData(cs, ss)
	if st := stageAttributionFromSamples(ss, f.affected); len(st) > 0 {
		f.stages, f.stageSource = st, "samples"
	} else if st := stageAttributionFromCurves(cs, f.affected, ph); len(st) > 0 {
		f.stages, f.stageSource = st, "curves"
	}
	return f
}

// stageModels are the models the stage attribution pooled (none without
// one).
func stageModels(f *facts) []string {
	if f.stageSource == "" {
		return nil
	}
	return slices.Clone(f.affected)
}

// SampleSpan says which samples an analysis of in will use, judging from
// its curves alone: the hour before the onset to the end of the spike's
// main part. ok is false when the curves do not locate a spike; then all
// samples of the window are needed (the spike is looked for in them).
// Loading only this span keeps a large window's analysis fast.
func SampleSpan(in Input) (from, to time.Time, ok bool) {
	if len(in.Curves) == 0 {
		return time.Time{}, time.Time{}, false
	}
	in.Samples = nil
	if in.SLO == nil {
		in.SLO = func(string) (float64, bool) { return 0, false }
	}
	_, onset, end, found := locate(newCurveSet(in.Curves), in)
	if !found {
		return time.Time{}, time.Time{}, false
	}
	ph := newPhases(onset, end, in.Window.From.Add(-beforeSpan), in.Window.To)
	return ph.BeforeFrom, ph.DuringTo, true
}

// locate finds the spikes of the window and the onset: from the latency
// curves, or from the samples when no curve was pulled; without a spike,
// two thirds into the window.
func locate(cs *curveSet, in Input) (spikes []Spike, onset, end time.Time, found bool) {
	// Models no latency curve measures (traced over OTLP, or a fleet
	// without latency metrics) are looked at in their samples' quantiles.
	var traced []Sample
	measured := map[string]bool{}
	for _, s := range in.Samples {
		m, ok := measured[s.Model]
		if !ok {
			m = hasModelLatency(cs, s.Model)
			measured[s.Model] = m
		}
		if !m {
			traced = append(traced, s)
		}
	}
	detect := func(loose bool) []Spike {
		spikes := latencySpikes(cs, in, loose)
		if len(traced) > 0 {
			spikes = append(spikes, latencySpikes(newCurveSet(sampleLatencyCurves(traced, time.Minute)), Input{Window: in.Window, Scope: in.Scope, Step: time.Minute, SLO: in.SLO}, loose)...)
			sort.SliceStable(spikes, func(i, j int) bool { return spikes[i].Onset.Before(spikes[j].Onset) })
		}
		return spikes
	}
	spikes = detect(false)
	onset, end, found = pickOnset(spikes, in)
	if !found {
		// Someone opened an incident on this window and nothing lasting
		// rose: the best lead is then a short bump or a small clean step
		// near where the window puts the incident (a weak cold start's
		// P99 ×1.7 for two minutes; a throttled node's ×1.2 on a calm
		// model), though the detector would not raise either.
		spikes = detect(true)
		onset, end, found = pickOnset(nearAnchor(spikes, fallbackOnset(in)), in)
	}
	if !found {
		onset = fallbackOnset(in)
	}
	return spikes, onset, end, found
}

// anchorReach is how far from the window's anchor (fallbackOnset) a
// loose lead may lie to be taken for the incident's start.
const anchorReach = 20 * time.Minute

// nearAnchor keeps the spikes whose onset lies within anchorReach of the
// anchor, or all of them when none does: without a spike that lasted, the
// window's own placement is the best clue to which bump it is about.
func nearAnchor(spikes []Spike, anchor time.Time) []Spike {
	var near []Spike
	for _, s := range spikes {
		if d := s.Onset.Sub(anchor); d >= -anchorReach && d <= anchorReach {
			near = append(near, s)
		}
	}
	if len(near) == 0 {
		return spikes
	}
	return near
}

// looseMinRatio is the ratio a loose lead (latencySpikes' loose pass)
// needs, of any length: ×1.15, with the usual robust z against the
// curve's own noise (so only a calm curve's small step qualifies).
const looseMinRatio = 1.15

// latencySpikes detects spikes on every model-level latency quantile within
// the window (and scope). loose keeps short bumps and small clean steps
// (see looseMinRatio), for a window where nothing lasting rose.
func latencySpikes(cs *curveSet, in Input, loose bool) []Spike {
	var out []Spike
	for _, role := range []Role{RoleLatencyP99, RoleLatencyP95, RoleLatencyP50, RoleLatencyMean} {
		for _, c := range cs.get(role, LevelModel, Scope{}, "") {
			if in.Scope.Model != "" && c.Scope.Model != in.Scope.Model {
				continue
			}
			if role == RoleLatencyMean && hasQuantile(cs, c.Scope.Model) {
				continue // the mean stands in only where no quantile is measured
			}
			opt := SpikeOptions{Step: in.Step, Locate: true}
			if loose {
				opt.MinDuration, opt.MinRatio, opt.StrongRatio = time.Nanosecond, looseMinRatio, looseMinRatio
			}
			if v, ok := in.SLO(c.Scope.Model); ok && role != RoleLatencyP50 && role != RoleLatencyMean {
				opt.SLO = v
			}
			for _, s := range DetectSpikes(c.Points, opt) {
				if s.Onset.Before(in.Window.From) || !s.Onset.Before(in.Window.To) {
					continue
				}
				s.Role, s.Level, s.Scope = role, LevelModel, c.Scope
				if role != RoleLatencyMean {
					MarkCeiling(&s, c.Points)
				}
				out = append(out, s)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Onset.Before(out[j].Onset) })
	return out
}

// hasModelLatency says whether a model has a model-level latency curve
// that detection reads (P99, P95, or the mean standing in): only without
// one are its samples' own quantiles looked at for the spike.
func hasModelLatency(cs *curveSet, model string) bool {
	return hasQuantile(cs, model) || cs.model(RoleLatencyMean, model, "") != nil
}

// hasQuantile says whether a model has a model-level P99 or P95 curve.
func hasQuantile(cs *curveSet, model string) bool {
	return cs.model(RoleLatencyP99, model, "") != nil || cs.model(RoleLatencyP95, model, "") != nil
}

// pickOnset chooses the incident's onset: the strongest P99 spike (P95 if
// there is no P99 spike) sets the time, and the earliest P99/P95 onset of
// another model within five minutes of it wins when that spike is part of
// the same incident, because a cause must come before every symptom.
func pickOnset(spikes []Spike, in Input) (onset, end time.Time, ok bool) {
	var primary *Spike
	for _, role := range []Role{RoleLatencyP99, RoleLatencyP95, RoleLatencyMean} {
		for i := range spikes {
			s := &spikes[i]
			if s.Role != role {
				continue
			}
			if primary == nil || spikeWeight(*s) > spikeWeight(*primary) {
				primary = s
			}
		}
		if primary != nil {
			break
		}
	}
	if primary == nil {
		return time.Time{}, time.Time{}, false
	}
	head := episodeStart(*primary, spikes)
	onset, end = head.Onset, primary.End
	for _, s := range spikes {
		if s.Role == RoleLatencyP50 || !sameIncident(head, s) || releasedAlone(s, head, in.Events) {
			continue
		}
		if d := head.Onset.Sub(s.Onset); d > 0 && d <= 5*time.Minute && s.Onset.Before(onset) {
			onset = s.Onset
		}
	}
	return onset, end, true
}

// episodeGap is the longest lull between two spikes of one curve that
// still makes them one episode.
const episodeGap = 5 * time.Minute

// episodeStart is the first spike of the episode the primary spike ends:
// earlier spikes of the same curve (role and model) that each ended at
// most episodeGap before the next began and are not minor wiggles next to
// the primary (a third of its weight). A sustained rise that dipped for a
// minute, or climbed in two steps, is split by the detector's end rule
// into spikes of which the later is often the stronger; the incident
// began with the first.
func episodeStart(primary Spike, spikes []Spike) Spike {
	head := primary
	for {
		prev, found := Spike{}, false
		for _, s := range spikes {
			if s.Role != head.Role || s.Scope.Model != head.Scope.Model || !s.Onset.Before(head.Onset) ||
				s.End.After(head.Onset) || head.Onset.Sub(s.End) > episodeGap || spikeWeight(s) < spikeWeight(primary)/3 {
				continue
			}
			if !found || s.Onset.After(prev.Onset) {
				prev, found = s, true
			}
		}
		if !found {
			return head
		}
		head = prev
	}
}

// sameIncident reports whether an earlier spike of another model belongs
// to the primary one's incident: it still runs when the primary begins,
// and it is not a minor wiggle next to it (a third of its weight). In a
// large fleet under bursty load some model always spikes a little a few
// minutes earlier; moving the onset there would put every real cause
// "after the onset".
func sameIncident(primary, s Spike) bool {
	return !s.End.Before(primary.Onset) && spikeWeight(s) >= spikeWeight(primary)/3
}

// releasedAlone reports whether an earlier spike of another model has a
// release of its own that the primary lacks: a deploy or rollback of its
// model in the quarter hour before it began, and none of the primary's
// model before the primary's onset. That spike is a separate incident
// overlapping this one (another team's rollout), not its start; merging
// it would move the onset minutes early and put the primary's real cause
// after it.
func releasedAlone(s, primary Spike, events []Event) bool {
	if s.Scope.Model == "" || s.Scope.Model == primary.Scope.Model {
		return false
	}
	released := func(model string, onset time.Time) bool {
		for _, e := range events {
			if (e.Kind == KindDeploy || e.Kind == KindRollback) && e.Model == model &&
				!e.Time.After(onset) && onset.Sub(e.Time) <= 15*time.Minute {
				return true
			}
		}
		return false
	}
	return released(s.Scope.Model, s.Onset) && !released(primary.Scope.Model, primary.Onset)
}

// samplesOnset is when the onset model's request samples began their
// rise, if that is more than the phases' guard minute before the curves'
// onset (and at most samplesLead before it): the samples' times are
// exact, while a curve built with rate() over coarse scrapes lags the
// change. Otherwise, and without samples, it is the onset itself.
func samplesOnset(samples []Sample, spikes []Spike, onset time.Time, slo func(string) (float64, bool)) time.Time {
	model := ""
	for _, s := range spikes {
		if s.Onset.Equal(onset) && (s.Role == RoleLatencyP99 || s.Role == RoleLatencyP95 || s.Role == RoleLatencyMean) {
			model = s.Scope.Model
			break
		}
	}
	if model == "" {
		return onset
	}
	from, to := onset.Add(-beforeSpan-samplesLead), onset.Add(duringMinSpan)
	var own []Sample
	for _, s := range samples {
		if s.Model == model && !s.Time.Before(from) && s.Time.Before(to) {
			own = append(own, s)
		}
	}
	best := onset
	for _, c := range sampleLatencyCurves(own, time.Minute) {
		if c.Role != RoleLatencyP99 && c.Role != RoleLatencyP95 {
			continue
		}
		opt := SpikeOptions{Step: time.Minute, Locate: true}
		if v, ok := slo(model); ok {
			opt.SLO = v
		}
		for _, s := range DetectSpikes(c.Points, opt) {
			if lead := onset.Sub(s.Onset); lead > beforeGuard && lead <= samplesLead && s.Onset.Before(best) {
				best = s.Onset
			}
		}
	}
	return best
}

// samplesLead bounds how much earlier than the curves the samples may
// place the rise: two scrapes at two minutes and the rate window's lag.
const samplesLead = 8 * time.Minute

// spikeWeight ranks spikes: relative height, capped so one clipped
// histogram does not dwarf everything, times log duration up to a quarter
// of an hour. Past that, length says how long a spike lasted, not how bad
// it was (and its peak already grows with it): uncapped, a mild shift that
// runs to the end of the window outweighed the sharp incident inside it.
func spikeWeight(s Spike) float64 {
	r := math.Min(safeRatio(s.PeakValue, s.Baseline), 20)
	if math.IsNaN(r) {
		r = 1
	}
	d := math.Min(s.End.Sub(s.Start).Minutes(), 15)
	return r * math.Log1p(math.Max(d, 0.25))
}

// fallbackOnset is used when no spike is found: two thirds into the window,
// where incident windows opened around an alert put the alert.
func fallbackOnset(in Input) time.Time {
	return in.Window.From.Add(in.Window.To.Sub(in.Window.From) * 2 / 3).Truncate(in.Step)
}

// replicaStarts maps replicas to the time they started: from replica_start
// events, and — for clusters without kube-state-metrics — from the first
// point of a replica's curves (of any role: a pod's GPU curve starts with
// it too) when that comes well after the data begins.
func replicaStarts(events []Event, cs *curveSet, dataFrom time.Time, step time.Duration) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == KindReplicaStart && e.Replica != "" {
			if t, ok := out[e.Replica]; !ok || e.Time.Before(t) {
				out[e.Replica] = e.Time
			}
		}
	}
	first := map[string]int64{}
	for _, role := range Roles {
		for _, c := range cs.get(role, LevelReplica, Scope{}, "") {
			if len(c.Points) == 0 || c.Scope.Replica == "" {
				continue
			}
			if t, ok := first[c.Scope.Replica]; !ok || c.Points[0].T < t {
				first[c.Scope.Replica] = c.Points[0].T
			}
		}
	}
	// Curves start a few steps after the pod (rate() needs two scrapes),
	// and every curve starts where the data does: a curve that begins with
	// the data, however late that is, is no new replica.
	if f := cs.firstPoint(); f.After(dataFrom) {
		dataFrom = f
	}
	// The pod started within the two scrapes before its first point: two
	// steps at fine steps, but a coarse step is an aggregate, its first
	// point at most a step and a minute after the start (backdated two
	// 5-minute steps, a pod 8 minutes old at the onset fell outside the
	// cold-start window).
	cutoff := dataFrom.Add(4 * step).UnixMilli()
	back := min(2*step, step+time.Minute)
	for rep, t := range first {
		if _, ok := out[rep]; !ok && t > cutoff {
			out[rep] = time.UnixMilli(t).Add(-back).UTC()
		}
	}
	return out
}

// curveP99Before is each model's P99 before the onset from its
// model-level P99 curve, NaN without one (or too few points before).
func curveP99Before(cs *curveSet, ph phases) func(string) float64 {
	return func(m string) float64 {
		if c := cs.model(RoleLatencyP99, m, ""); c != nil {
			return deviation(c, ph).Before
		}
		return math.NaN()
	}
}

// eventsIn returns the events in [from, to].
func eventsIn(events []Event, from, to time.Time) []Event {
	var out []Event
	for _, e := range events {
		if !e.Time.Before(from) && !e.Time.After(to) {
			out = append(out, e)
		}
	}
	return out
}

// topDeviations scores every curve and keeps the n that moved most.
func topDeviations(cs *curveSet, ph phases, n int) []CurveDeviation {
	out := make([]CurveDeviation, 0, len(cs.all))
	for i := range cs.all {
		if cs.all[i].Role.PoolState() {
			continue
		}
		d := deviation(&cs.all[i], ph)
		if !math.IsNaN(d.Deviation) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return math.Abs(out[i].Deviation) > math.Abs(out[j].Deviation)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// topCause is the best real cause, nil when "unexplained" leads.
func topCause(causes []Cause) *Cause {
	if len(causes) == 0 || causes[0].Category == CatUnexplained {
		return nil
	}
	return &causes[0]
}

// sampleSummary counts the samples used, and the incident's slow requests:
// those of the affected models during the spike (all models' when none is
// affected).
func sampleSummary(ss *sampleSet, affected map[string]bool) SampleSummary {
	s := SampleSummary{Total: len(ss.before) + len(ss.during), SlowMs: map[string]float64{}}
	for m, st := range ss.byModel {
		s.SlowMs[m] = finite(st.slowMs)
	}
	for _, list := range [][]int32{ss.before, ss.during} {
		for _, i := range list {
			s.Weighted += ss.all[i].SampleRate
		}
	}
	during := 0
	s.During = &during
	bases := map[string]bool{}
	for _, i := range ss.during {
		if len(affected) > 0 && !affected[ss.all[i].Model] {
			continue
		}
		during++
		if ss.slow[i] {
			s.Slow++
			s.SlowRequests += ss.all[i].SampleRate
			if st := ss.byModel[ss.all[i].Model]; st != nil {
				bases[st.basis()] = true
			}
		}
	}
	s.SlowRequests = math.Round(s.SlowRequests)
	s.Tokens = sampleTokens(ss, affected)
	switch {
	case len(bases) > 1:
		s.SlowBasis = SlowBasisMixed
	case bases[SlowBasisSpikeTail]:
		s.SlowBasis = SlowBasisSpikeTail
	case bases[SlowBasisBaseline]:
		s.SlowBasis = SlowBasisBaseline
	}
	return s
}

// sampleTokens compares the generated tokens of the spike's slow requests
// with the others' of the same model (affected models, all when none is),
// nil unless both groups have minSlowToJudge samples that carry a count:
// too few say more about the sampler than about the requests. Models'
// lengths differ, so the groups are never pooled across models (a slow
// model of long answers beside a fast one of short answers would read as
// "the slow requests were the long ones"): of the models that can be
// judged, the one with most slow samples is compared.
func sampleTokens(ss *sampleSet, affected map[string]bool) *SampleTokens {
	type groups struct{ out, speed [2][]weighted } // [other, slow]
	byModel := map[string]*groups{}
	for _, i := range ss.during {
		s := &ss.all[i]
		if s.OutputTokens <= 0 || len(affected) > 0 && !affected[s.Model] {
			continue
		}
		g := 0
		if ss.slow[i] {
			g = 1
		}
		m := byModel[s.Model]
		if m == nil {
			m = &groups{}
			byModel[s.Model] = m
		}
		m.out[g] = append(m.out[g], weighted{float64(s.OutputTokens), s.SampleRate})
		m.speed[g] = append(m.speed[g], weighted{s.TotalMs / float64(s.OutputTokens), s.SampleRate})
	}
	best := ""
	for m, g := range byModel {
		if len(g.out[0]) < minSlowToJudge || len(g.out[1]) < minSlowToJudge {
			continue
		}
		if b := byModel[best]; best == "" || len(g.out[1]) > len(b.out[1]) || len(g.out[1]) == len(b.out[1]) && m < best {
			best = m
		}
	}
	if best == "" {
		return nil
	}
	g := byModel[best]
	out := &SampleTokens{Model: best, Slow: len(g.out[1]), Other: len(g.out[0]),
		SlowOutputTokens: weightedQuantile(g.out[1], 0.5), OtherOutputTokens: weightedQuantile(g.out[0], 0.5),
		SlowMsPerToken: weightedQuantile(g.speed[1], 0.5), OtherMsPerToken: weightedQuantile(g.speed[0], 0.5)}
	// The speed of requests of that length before the onset.
	var ref []weighted
	lo, hi := out.SlowOutputTokens/2, out.SlowOutputTokens*2
	for _, i := range ss.before {
		s := &ss.all[i]
		if s.Model == best && float64(s.OutputTokens) >= lo && float64(s.OutputTokens) <= hi {
			ref = append(ref, weighted{s.TotalMs / float64(s.OutputTokens), s.SampleRate})
		}
	}
	if len(ref) >= minSlowToJudge {
		out.Before, out.BeforeMsPerToken = len(ref), weightedQuantile(ref, 0.5)
	}
	return out
}

// sampleLatencyCurves builds per-model P50/P95/P99 curves from samples in
// buckets of step, weighting each sample by its sample_rate. Buckets with
// fewer than 20 samples are left out: their quantiles are noise.
func sampleLatencyCurves(samples []Sample, step time.Duration) []Curve {
	type key struct {
		model  string
		bucket int64
	}
	buckets := map[key][]weighted{}
	for _, s := range samples {
		k := key{s.Model, s.Time.Truncate(step).UnixMilli()}
		buckets[k] = append(buckets[k], weighted{s.TotalMs, s.SampleRate})
	}
	byModel := map[string][]key{}
	for k, v := range buckets {
		if len(v) >= 20 {
			byModel[k.model] = append(byModel[k.model], k)
		}
	}
	var out []Curve
	for m, ks := range byModel {
		sort.Slice(ks, func(i, j int) bool { return ks[i].bucket < ks[j].bucket })
		for _, q := range []struct {
			role Role
			q    float64
		}{{RoleLatencyP50, 0.5}, {RoleLatencyP95, 0.95}, {RoleLatencyP99, 0.99}} {
			c := Curve{Role: q.role, Level: LevelModel, Scope: Scope{Model: m}}
			for _, k := range ks {
				c.Points = append(c.Points, Point{T: k.bucket, V: weightedQuantile(buckets[k], q.q)})
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// replicaComparisons lists the affected models' replicas against their
// peers, outliers first.
func replicaComparisons(f *facts) []ReplicaComparison {
	out := []ReplicaComparison{}
	for _, m := range f.affected {
		for _, r := range f.reps[m] {
			out = append(out, ReplicaComparison{
				Replica: r.replica, Model: r.model, Version: r.version, Node: r.node,
				P99BeforeMs: finite(r.before), P99DuringMs: finite(r.during), PeerP99Ms: finite(r.peerMedian), PeerZ: finite(r.crossZ),
				LoadBefore: finite(r.loadBefore), LoadDuring: finite(r.loadDuring), Young: r.young, Outlier: r.outlier,
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Outlier != out[j].Outlier {
			return out[i].Outlier
		}
		return out[i].PeerZ > out[j].PeerZ
	})
	return out
}
