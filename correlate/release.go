package correlate

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// releaseCause: a new version of one model made it slower. Like Datadog's
// faulty-deployment detection it wants three things at once — a deploy
// shortly before the onset (temporal), the new version slower than the old
// one in the same window (impact), and the slow requests concentrated on
// it — and it is argued against when other models slowed down too or when
// something else (a node, a replica) explains the slow requests better.
func releaseCause(f *facts) Cause {
	c := bestOverModels(f, CatRelease, releaseFor)
	c.Actions = f.releaseActions(c)
	return c
}

// releaseActions are the release's actions, the comparison before
// resuming naming only stage times the data has: without any, the
// new version's latency is what can be compared.
func (f *facts) releaseActions(c Cause) []string {
	models := f.affected
	if c.Target.Model != "" {
		models = []string{c.Target.Model}
	} else if len(models) == 0 {
		for _, m := range f.models { // nothing rose: any model's
			models = append(models, m.model)
		}
	}
	var timed []string
	for _, k := range []Stage{StageExec, StagePostprocess} {
		if before, during := f.stageTimedWhen(models, k); before || during {
			timed = append(timed, k.String())
		}
	}
	out := slices.Clone(c.Actions[:1])
	if len(timed) > 0 {
		return append(out, fmt.Sprintf("Compare the new version's stage times (%s) with the previous one before resuming", strings.Join(timed, ", ")))
	}
	return append(out, "Compare the new version's latency with the previous one's on a canary before resuming (no stage times are measured to show where it is slower)")
}

func releaseFor(f *facts, m string) Cause {
	b := newCause(CatRelease)
	ev, w := bestEvent(f.events, func(e AlignedEvent) bool { return e.Model == m }, KindDeploy, KindRollback)
	vs := f.versionStats(m)
	newVer := ""
	if ev != nil {
		// A version the data does not measure (the CD system's commit or
		// image tag where the metrics label a release number) tells no
		// requests apart: the version that took traffic is looked for
		// below, as without one.
		if len(vs) == 0 || slices.ContainsFunc(vs, func(v versionStat) bool { return v.version == ev.Version }) {
			newVer = ev.Version
		}
		b.support("deploy_before_onset", -ev.OffsetS, w, 0.30, "%s of %s%s at %s, %s.", capitalize(string(ev.Kind)), m, verSuffix(ev.Version), ev.Time.Format("15:04:05"), ago(*ev)).restsOn(ev.ID, "", nil)
	}
	// No deploy lines up with the onset: one pushed minutes after it (or
	// long before) was pushed all the same, and is said so, not denied.
	var late *AlignedEvent
	unpushed, when := "no deploy event was pushed", "around the onset"
	if ev == nil {
		late = firstEvent(f.events, func(e AlignedEvent) bool {
			return e.Model == m && (e.Kind == KindDeploy || e.Kind == KindRollback) && e.OffsetS > alignSkew.Seconds()
		})
		switch {
		case late != nil:
			unpushed = fmt.Sprintf("no deploy event lines up with it: %s's deploy came %s", m, ago(*late))
			when = "during the spike"
		case f.hasEvent(m, KindDeploy, KindRollback):
			unpushed = fmt.Sprintf("no deploy event of %s lines up with it", m)
		}
	}
	// The version that gained traffic around the onset is the new one, even
	// when nobody pushed a deploy event — if it gained at least 10 points of
	// share: two versions serving side by side always trade a few.
	if gainer := trafficGainer(vs); newVer == "" && gainer.version != "" && gainer.shareDuring-gainer.shareBefore >= minTrafficGain {
		newVer = gainer.version
		gain := gainer.shareDuring - gainer.shareBefore
		if ev == nil {
			b.support("new_version_took_traffic", gain, 0.8*ramp(gain, 0.1, 0.5), 0.30,
				"%s %s went from %.0f%% to %.0f%% of the model's traffic %s (%s).",
				m, gainer.version, 100*gainer.shareBefore, 100*gainer.shareDuring, when, unpushed)
		}
	}
	// Without version request rates, a version whose latency is measured
	// only from the onset on (while another's is before it) is new.
	if newcomer := versionNewcomer(vs); newVer == "" && newcomer != "" {
		newVer = newcomer
		if ev == nil {
			b.support("new_version_appeared", 1, 0.6, 0.30,
				"%s %s is first measured %s; before it only other versions served (%s, and the traffic by version is not measured).", m, newcomer, when, unpushed)
		}
	}
	if newVer == "" && ev != nil {
		// A deploy that names no version, and no version of the samples
		// took over: it happened, but nothing tells its requests apart.
		f.releaseScope(b, m, "")
		if ev.Version != "" {
			return f.done(b, fmt.Sprintf("%s %s was deployed %s, but no measured version of %s carries that name: its requests cannot be told from the previous version's.", m, ev.Version, ago(*ev), m), Target{Model: m})
		}
		return f.done(b, fmt.Sprintf("%s was deployed %s; which version it brought is unknown, so its requests cannot be compared with the previous version's.", m, ago(*ev)), Target{Model: m})
	}
	// No change event at all in the window is no sign that nothing was
	// deployed: the CD system may not send any (the timeline step says so).
	// Alerts, annotations and what the pull derives (scaling, replica
	// starts, node faults) say nothing of whether deploys reach Waterline.
	noEvents := !changeFeedSeen(f.events)
	if newVer == "" && !versionTrafficKnown(vs) && len(vs) > 0 {
		if noEvents {
			return b.done(fmt.Sprintf("No change event was received for this window and %s's traffic by version is not measured: a release can be neither seen nor ruled out.", m), Target{Model: m})
		}
		b.oppose("no_deploy", 0, 1, 0.1, "No deploy of %s near the onset; its traffic by version is not measured.", m)
		return b.done(fmt.Sprintf("No deploy of %s was found; its traffic by version is not measured, so a rollout without a deploy event cannot be ruled out.", m), Target{Model: m})
	}
	if newVer == "" && noEvents && versionTrafficKnown(vs) {
		b.oppose("no_new_version", 0, 1, 0.2, "No new version of %s took traffic near the onset (no change event was received for this window).", m)
		return b.done(fmt.Sprintf("No new version of %s took traffic near the onset; no deploy events were received, so only its versions' traffic could be checked.", m), Target{Model: m})
	}
	if newVer == "" && noEvents {
		return b.done(fmt.Sprintf("No change event was received for this window and no version of %s is measured: a release can be neither seen nor ruled out.", m), Target{Model: m})
	}
	if newVer == "" {
		b.oppose("no_new_version", 0, 1, 0.2, "No deploy of %s and no new version taking traffic near the onset.", m)
		return b.done(fmt.Sprintf("No recent release of %s was found.", m), Target{Model: m})
	}
	nv, cmp, bothCapped := releaseImpact(b, vs, newVer)
	// Slow requests concentrated on the new version count when it is a
	// version among others of the model; once it is all of the model's
	// requests in the window the row is the model's (version ≡ model), and
	// says which model is slow, not which version.
	if c, ok := f.concentrationOf("version", newVer); ok && !sameAsModel(c, m) {
		b.support("slow_requests_on_new_version", c.RiskRatio, concStrength(c), 0.15,
			"%.0f%% of slow requests ran on %s (%.0f%% of the others): %s.", c.SelectionPct, newVer, c.BaselinePct, likelier(c.RiskRatio)).restsOn("", "", c.Dims)
	}
	f.releaseScope(b, m, newVer)
	if b.shown("new_version_slower") >= claimed {
		f.queueFollowsRelease(b, m)
	}
	if late != nil {
		b.oppose("deploy_after_onset", late.OffsetS, 1, 0.1, "%s's deploy came %s, too late to have caused it.", m, ago(*late))
	}
	var sum string
	switch {
	case b.shownAgainst("new_version_fine_before_onset") >= claimed:
		sum = fmt.Sprintf("%s %s ran at its predecessor's latency before the onset (P99 %s); it slowed down with the spike, not with its deploy.", m, newVer, fmtMs(nv.p99Before))
	case bothCapped && b.shown("new_version_slower") < claimed:
		sum = fmt.Sprintf("%s %s and the version it replaces both had their P99 at the histogram's top bucket (≥ %s and ≥ %s): which is slower is not measured.",
			m, newVer, fmtMs(nv.p99During), fmtMs(cmp))
	case b.shown("new_version_slower") >= claimed:
		sum = fmt.Sprintf("%s %s is slower than the version it replaces (P99 %s against %s).", m, newVer, msAtLeast(nv.p99During, nv.p99Ceiling), fmtMs(cmp))
	case math.IsNaN(cmp) && ev != nil:
		// Nothing was compared: no earlier version's latency is measured.
		sum = fmt.Sprintf("%s %s was deployed %s; no earlier version's latency is measured to compare it with, so whether it is slower is unknown.", m, newVer, ago(*ev))
	case math.IsNaN(cmp):
		sum = fmt.Sprintf("%s %s took traffic %s; no earlier version's latency is measured to compare it with, so whether it is slower is unknown.", m, newVer, when)
	case ev != nil:
		sum = fmt.Sprintf("%s %s was deployed %s, but its requests are not measured slower than the previous version's.", m, newVer, ago(*ev))
	default:
		sum = fmt.Sprintf("%s %s took traffic %s, but its requests are not measured slower than the previous version's.", m, newVer, when)
	}
	return f.done(b, sum, Target{Model: m, Version: newVer})
}

// queueFollowsRelease explains a queue that grew with a slower version
// while traffic stayed flat — each request holds the server longer, so
// the ones behind it wait — lest the stage table read as a capacity
// shortage next to a release verdict. Nothing unless both are measured.
func (f *facts) queueFollowsRelease(b *causeBuilder, m string) {
	qs := stageShare(f.stagesOf([]string{m}), "queue")
	q := f.qpsRatio(m)
	if qs < 0.3 || math.IsNaN(q) || q >= 1.15 {
		return
	}
	// Both figures are m's alone: the stage table and capacity's queue
	// and traffic sentences pool every affected model, and read "43%" and
	// "×1.01" beside an unnamed "44%" and "×1.03" (release demo).
	b.corroborate("queue_follows_release", qs, ramp(qs, 0.2, 0.5), 0.05,
		"Queueing is %.0f%% of %s's tail growth with its traffic flat (×%.2f): slower requests hold the servers longer, so the ones behind them wait; the queue follows the release, not a surge.", 100*qs, m, q)
}

// sameAsModel reports whether a concentration row is also the model's.
func sameAsModel(c Concentration, m string) bool {
	v, ok := c.value("model")
	return ok && v == m
}

// versionTrafficKnown reports whether the versions' shares of traffic
// were measured (samples or version request-rate curves).
func versionTrafficKnown(vs []versionStat) bool {
	for _, v := range vs {
		if !math.IsNaN(v.shareDuring) && !math.IsNaN(v.shareBefore) {
			return true
		}
	}
	return false
}

// versionNewcomer is, when the traffic by version is unknown, the one
// version measured during the spike but not before it while another was
// measured before: the version a rollout brought in. "" otherwise.
func versionNewcomer(vs []versionStat) string {
	if versionTrafficKnown(vs) {
		return ""
	}
	newcomer, before := "", false
	for _, v := range vs {
		switch {
		case !math.IsNaN(v.p99Before):
			before = true
		case !math.IsNaN(v.p99During):
			if newcomer != "" {
				return "" // two newcomers: which one is unknown
			}
			newcomer = v.version
		}
	}
	if !before {
		return ""
	}
	return newcomer
}

// minTrafficGain is the share of a model's traffic a version must gain to
// count as a rollout without a deploy event.
const minTrafficGain = 0.1

// trafficGainer is the version whose share of the model's traffic grew most.
func trafficGainer(vs []versionStat) versionStat {
	var gainer versionStat
	for _, v := range vs {
		if g := v.shareDuring - v.shareBefore; g > gainer.shareDuring-gainer.shareBefore {
			gainer = v
		}
	}
	return gainer
}

// releaseImpact weighs the new version against the old one in the same
// window (or, once the rollout is complete, against the previous version
// before the onset, which a coincident traffic change can also explain,
// so it counts less). It returns the new version and the P99 it was
// compared with, and whether both versions' P99 sat at their histograms'
// top bucket (neither is then measured: no item either way).
func releaseImpact(b *causeBuilder, vs []versionStat, newVer string) (nv versionStat, ref float64, bothCapped bool) {
	// Without version request rates, a version with a P99 during the spike
	// served requests then (a quantile of no requests is no point): the
	// comparison holds, weaker, for how much each served is unknown.
	known := versionTrafficKnown(vs)
	served := func(v versionStat) float64 {
		if known {
			return v.weightDur
		}
		if math.IsNaN(v.p99During) {
			return 0
		}
		if !math.IsNaN(v.p99Before) {
			return 2 // served before too: the predecessor
		}
		return 1
	}
	unknownTraffic, trust := "", 1.0
	if !known {
		unknownTraffic, trust = " (traffic by version is not measured)", 0.8
	}
	var old versionStat
	var oldW float64
	for _, v := range vs {
		if v.version == newVer {
			nv = v
		} else if w := served(v); w > oldW {
			old, oldW = v, w
		}
	}
	ref = math.NaN()
	switch {
	case served(nv) > 0 && oldW > 0 && !math.IsNaN(nv.p99During) && !math.IsNaN(old.p99During) &&
		AtCeiling(nv.p99During, nv.p99Ceiling) && AtCeiling(old.p99During, old.p99Ceiling):
		// Both versions' P99 sat at their histograms' top bucket: each is
		// a lower bound, and which version is slower is not measured.
		ref, bothCapped = old.p99During, true
	case served(nv) > 0 && oldW > 0 && !math.IsNaN(nv.p99During) && !math.IsNaN(old.p99During):
		ref = old.p99During
		r := safeRatio(nv.p99During, old.p99During)
		// A new version pinned at its top bucket is at least that slow.
		ratio := ratioAtLeast(fmt.Sprintf("×%.2f", r), nv.p99During, nv.p99Ceiling)
		fr := safeRatio(nv.slowFracDuring()+0.005, old.slowFracDuring()+0.005)
		if math.IsNaN(fr) {
			b.support("new_version_slower", r, trust*ramp(r, 1.1, 1.6), 0.35,
				"%s P99 is %s against %s on %s in the same window (%s)%s.", newVer, msAtLeast(nv.p99During, nv.p99Ceiling), fmtMs(old.p99During), old.version, ratio, unknownTraffic)
		} else {
			b.support("new_version_slower", r, math.Max(ramp(r, 1.1, 1.6), ramp(fr, 1.5, 4)), 0.35,
				"%s P99 is %s against %s on %s in the same window (%s); %.0f%% vs %.0f%% of their requests are slow.",
				newVer, msAtLeast(nv.p99During, nv.p99Ceiling), fmtMs(old.p99During), old.version, ratio, 100*nv.slowFracDuring(), 100*old.slowFracDuring())
		}
		if r < 1.1 && !(fr >= 1.5) {
			b.oppose("new_version_not_slower", r, trust*ramp(1.15-r, 0, 0.15), 0.5,
				"The new version's requests are no slower than the old version's in the same window (P99 %s vs %s).", fmtMs(nv.p99During), fmtMs(old.p99During))
		}
	case served(nv) > 0 && !math.IsNaN(nv.p99During):
		prev, ok := previousVersion(vs, newVer)
		if !ok {
			break
		}
		ref = prev.p99Before
		if r := safeRatio(nv.p99During, ref); !math.IsNaN(r) {
			b.support("new_version_slower", r, trust*0.7*ramp(r, 1.2, 2), 0.35,
				"%s P99 during the spike is %s against %s for the previous version before (%s)%s.", newVer, msAtLeast(nv.p99During, nv.p99Ceiling), fmtMs(ref),
				ratioAtLeast(fmt.Sprintf("×%.2f", r), nv.p99During, nv.p99Ceiling), unknownTraffic)
		}
		servedFine(b, nv, prev)
	}
	return nv, ref, bothCapped
}

// previousVersion is the version other than newVer that served most of
// the model's requests before the onset (with a P99 there).
func previousVersion(vs []versionStat, newVer string) (prev versionStat, ok bool) {
	for _, v := range vs {
		if v.version != newVer && !math.IsNaN(v.p99Before) && (!ok || v.weightBefore > prev.weightBefore) {
			prev, ok = v, true
		}
	}
	return prev, ok
}

// Thresholds of servedFine: the new version served at least minSoakShare
// of the model's requests in the hour before the onset (minSoakSamples of
// them when they are samples), its P99 there within soakSame of its
// predecessor's, and it then slowed down by soakSlowed.
const (
	minSoakShare   = 0.05
	minSoakSamples = 50
	soakSame       = 1.2
	soakSlowed     = 1.5
)

// servedFine argues against a release whose new version ran at its
// predecessor's latency between its deploy and the onset, and slowed down
// only with the spike: the deploy preceded the spike (the classic red
// herring of "what changed?"), it did not make the model slower. Once a
// rollout is complete, the before/after comparison above cannot tell the
// two apart; the new version's own minutes before the onset can.
func servedFine(b *causeBuilder, nv, prev versionStat) {
	if !(nv.shareBefore >= minSoakShare) || (nv.samplesBefore > 0 && nv.samplesBefore < minSoakSamples) {
		return
	}
	same := safeRatio(nv.p99Before, prev.p99Before)
	if math.IsNaN(same) || same >= soakSame || !(safeRatio(nv.p99During, nv.p99Before) >= soakSlowed) {
		return
	}
	b.oppose("new_version_fine_before_onset", same, ramp(soakSame-same, 0, 0.15), 0.4,
		"%s served %.0f%% of the requests of the hour before the onset at P99 %s, like %s's %s; it slowed down with the spike, not with its deploy (unless it degrades with time, as a leak does).",
		nv.version, 100*nv.shareBefore, fmtMs(nv.p99Before), prev.version, fmtMs(prev.p99Before))
}

// releaseScope: a bad release hits its own model; other models slowing
// down at the same time, or slow requests concentrated on a node or
// replica rather than the version, point elsewhere.
func (f *facts) releaseScope(b *causeBuilder, m, newVer string) {
	// The other models that slowed down without a release of their own,
	// and those of them whose own traffic surged meanwhile: a surge
	// explains its model's slowdown, and says nothing against this
	// release (a release of one model during another's surge had the
	// surging model counted against it, and capacity ranked first).
	others, released, surged := 0, 0, 0
	for _, a := range f.slowed {
		if a == m {
			continue
		}
		if _, dw := bestEvent(f.events, func(e AlignedEvent) bool { return e.Model == a }, KindDeploy, KindRollback); dw >= 0.2 {
			released++
			continue
		}
		if q := f.qpsRatio(a); ramp(q, 1.15, 1.8) >= claimed {
			surged++
			continue
		}
		others++
	}
	if n := f.modelsWithData() - 1; n > 0 {
		frac := float64(others) / float64(n)
		switch {
		case others == 0 && len(f.slowed) == 1:
			b.corroborate("only_this_model", 1, 1, 0.10, "Only %s slowed down; %s did not.", m, othersPhrase(n))
		case others == 0 && surged == 0:
			// The others that slowed down had releases of their own: a
			// release train, which neither clears nor blames this one.
			if released == 1 {
				b.corroborate("other_slowed_models_released", 1, 0.5, 0.10, "The other model that slowed down had a release of its own.")
			} else {
				b.corroborate("other_slowed_models_released", 1, 0.5, 0.10, "The %d other models that slowed down each had a release of their own.", released)
			}
		case others == 0:
			b.corroborate("other_slowed_models_explained", 1, 0.5, 0.10, "%s", othersExplained(surged, released))
		default:
			b.oppose("other_models_slowed", frac, ramp(frac, 0, 0.5), 0.35, "%s without a release slowed down at the same time.", capitalize(plural(others, "other model")))
		}
	}
	if loc, ok := f.topLocal(); ok && newVer != "" {
		vc, _ := f.concentrationOf("version", newVer)
		if d := concStrength(loc) - concStrength(vc); d > 0.2 {
			b.oppose("localised_elsewhere", loc.RiskRatio, d, 0.3, "Slow requests concentrate on %s (%s) more than on the new version.", dimString(loc), likelier(loc.RiskRatio)).restsOn("", "", loc.Dims)
		}
	}
}

// othersExplained says that the other models that slowed down had causes
// of their own: surged of them a traffic surge, released a release.
func othersExplained(surged, released int) string {
	what := "a traffic surge"
	if released > 0 {
		what = "a release or a traffic surge"
	}
	if surged+released == 1 {
		return "The other model that slowed down had " + what + " of its own."
	}
	return fmt.Sprintf("The %d other models that slowed down each had %s of their own.", surged+released, what)
}

func verSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " to " + v
}

// topLocal returns the strongest replica or node concentration.
func (f *facts) topLocal() (Concentration, bool) { return f.topLocalIn(nil) }

// topLocalIn is topLocal among the rows of some models' traffic (all rows
// for nil).
func (f *facts) topLocalIn(models []string) (Concentration, bool) {
	r, okR := f.topConcentrationIn("replica", models)
	n, okN := f.topConcentrationIn("node", models)
	switch {
	case okR && okN:
		if concStrength(n) >= concStrength(r) {
			return n, true
		}
		return r, true
	case okN:
		return n, true
	}
	return r, okR
}

func dimString(c Concentration) string {
	s := ""
	for _, k := range []string{"model", "version", "tenant", "replica", "node", "entry", "status", "batch_size", "replica_age",
		"dependency", "output_tokens", "input_tokens"} {
		if v, ok := c.Dims[k]; ok {
			if s != "" {
				s += " and "
			}
			s += k + " " + v
		}
	}
	return s
}

// mentions reports whether an event's summary or attributes talk about any
// of the words (config changes are free text).
func mentions(e Event, re *regexp.Regexp) bool {
	if re.MatchString(e.Summary) {
		return true
	}
	for k, v := range e.Attrs {
		if re.MatchString(k) || re.MatchString(fmt.Sprint(v)) {
			return true
		}
	}
	return false
}

// changeFeedSeen reports whether any event of the kinds a CD or config
// system pushes (deploys, rollbacks, config and route changes, custom
// events) reached the analysis: without one, the absence of a deploy is
// no sign that nothing was deployed.
func changeFeedSeen(events []AlignedEvent) bool {
	for _, e := range events {
		switch e.Kind {
		case KindDeploy, KindRollback, KindConfigChange, KindRouteChange, KindCustom:
			return true
		}
	}
	return false
}
