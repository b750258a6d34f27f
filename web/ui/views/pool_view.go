package views

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// PoolFact is what acting on a capacity (or cold-start) cause needs to
// know about a model's pool: how many replicas serve it, what scaled it,
// and the autoscaler's limits. Each line comes from the analysis (its
// replica comparison and its events); what the data does not hold is
// said to be not known rather than guessed.
type PoolFact struct {
	Model    string
	Replicas string // "2 replicas served during the spike: a on gpu-l40s-01, b on gpu-a100-04"
	Scaling  string // what changed the desired replicas in the window, or that nothing did
	Limits   string // the autoscaler's min/max replicas and whether it is at its max
}

// kubeEventSource is the Source of the events the pull derives from
// kube-state-metrics (pull.EventSource): their presence says the scaling
// of the fleet was watched.
const kubeEventSource = "kube-state-metrics"

// poolLimits is said of a model none of whose scale events in the window
// carries its autoscaler's limits (the pull reads them from
// kube_horizontalpodautoscaler_spec_min_replicas and _max_replicas, which
// many exports lack).
const poolLimits = "not known: kube-state-metrics' kube_horizontalpodautoscaler_spec_min_replicas and _max_replicas are not in the data, so whether it is at its max is not known either"

// PoolFacts describes the pools of the models a capacity or cold-start
// cause targets, for the higher ranked of the two only; nil for other
// causes.
func PoolFacts(a *correlate.Analysis, c correlate.Cause) []PoolFact {
	pooled := func(cat correlate.Category) bool {
		return cat == correlate.CatCapacity || cat == correlate.CatColdStart
	}
	if a == nil || !pooled(c.Category) {
		return nil
	}
	// Once per analysis: under the higher ranked of the two.
	for _, x := range a.Causes {
		if pooled(x.Category) {
			if x.Category != c.Category {
				return nil
			}
			break
		}
	}
	models := c.Target.Models
	if c.Target.Model != "" {
		models = []string{c.Target.Model}
	}
	watched := false // kube-state-metrics events are in the data
	for _, e := range a.Events {
		if e.Source == kubeEventSource {
			watched = true
			break
		}
	}
	out := make([]PoolFact, 0, len(models))
	for _, m := range models {
		out = append(out, PoolFact{Model: m, Replicas: replicaLine(a, m), Scaling: scalingLine(a, m, watched), Limits: limitsLine(a, m)})
	}
	return out
}

// replicaLine counts the model's replicas that have data during the spike
// (the analysis' replica comparison).
func replicaLine(a *correlate.Analysis, m string) string {
	var reps []correlate.ReplicaComparison
	for _, r := range a.Replicas {
		// A replica measured only before the onset (a rollout's old pod,
		// stopped) did not serve during the spike: counted, it made "6
		// replicas served" of a pool that had 3 then, beside capacity's
		// "all 9 affected replicas" of two such pools.
		if r.Model == m && (r.P99DuringMs > 0 || r.LoadDuring > 0) {
			reps = append(reps, r)
		}
	}
	if len(reps) == 0 {
		return "not known: no per-replica latency of " + m + " during the spike"
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].Replica < reps[j].Replica })
	n := "1 replica"
	if len(reps) > 1 {
		n = fmt.Sprintf("%d replicas", len(reps))
	}
	s := n + " served during the spike"
	if len(reps) <= 4 {
		var names []string
		for _, r := range reps {
			name := r.Replica
			if r.Node != "" {
				name += " on " + r.Node
			}
			names = append(names, name)
		}
		s += ": " + strings.Join(names, ", ")
	}
	return s
}

// scalingLine lists what changed the model's desired replicas in the
// window, from the scale events (an HPA decision or a spec change).
func scalingLine(a *correlate.Analysis, m string, watched bool) string {
	scales := modelScales(a, m)
	if len(scales) == 0 {
		if !watched {
			return "not known: no kube-state-metrics events in the data"
		}
		return "kube-state-metrics shows no change of " + m + "'s desired replicas in the window: nothing scaled it"
	}
	var parts []string
	for _, e := range scales {
		what := e.Summary
		if from, to, ok := scaleCounts(e.Event); ok {
			what = fmt.Sprintf("%s → %s replicas", FmtNum(from), FmtNum(to))
			if via, _ := e.Attrs["via"].(string); via != "" {
				what += " (" + via + ")"
			}
		}
		when := clock(&e.Time)
		if a.Onset != nil {
			when += ", " + offsetWords(e.Time.Sub(*a.Onset).Round(time.Second).Seconds())
		}
		parts = append(parts, what+" at "+when)
	}
	return strings.Join(parts, "; ")
}

// modelScales is m's scale events (an HPA decision or a spec change),
// oldest first.
func modelScales(a *correlate.Analysis, m string) []correlate.AlignedEvent {
	var scales []correlate.AlignedEvent
	for _, e := range a.Events {
		if (e.Kind == correlate.KindScaleUp || e.Kind == correlate.KindScaleDown) && e.Model == m {
			scales = append(scales, e)
		}
	}
	sort.SliceStable(scales, func(i, j int) bool { return scales[i].Time.Before(scales[j].Time) })
	return scales
}

// limitsLine gives the autoscaler's limits and where the desired replicas
// stand against them: from the analysis' pool state (the curves
// kube-state-metrics exports) when it has m's, else from the scale events.
func limitsLine(a *correlate.Analysis, m string) string {
	for _, p := range a.Pools {
		if p.Model == m && (p.MaxReplicas > 0 || p.Desired > 0) {
			return poolLine(p, a.Onset)
		}
	}
	return eventLimitsLine(a, m)
}

// poolLine says the autoscaler's limits and whether the desired replicas
// are at the max (since when) or below it, and whether they grew since
// the onset: "below its max and unchanged" is the autoscaler not reacting.
func poolLine(p correlate.Pool, onset *time.Time) string {
	desired := fmt.Sprintf("%s desired", FmtNum(p.Desired))
	switch {
	case p.DesiredPeak > p.DesiredAtOnset:
		desired = fmt.Sprintf("desired replicas %s at the onset, %s by %s", FmtNum(p.DesiredAtOnset), FmtNum(p.Desired), clock(&p.Through))
	case p.Desired > 0 && onset != nil && p.Through.Sub(*onset) < 3*time.Minute:
		desired += " since before the onset, " + clock(&p.Through) + " (too early to say whether it will scale up)"
	case p.Desired > 0:
		// "During the spike": a scale-up just before the onset (a cold
		// start's) is in the scaling line above, so a bare "it did not
		// scale up" contradicted it.
		desired += " since before the onset: it did not scale up during the spike"
	}
	if p.MaxReplicas == 0 {
		return "no autoscaler limits in the data (kube-state-metrics' kube_horizontalpodautoscaler_spec_max_replicas); " + desired
	}
	s := fmt.Sprintf("autoscaler %s–%s replicas", FmtNum(p.MinReplicas), FmtNum(p.MaxReplicas))
	if p.MinReplicas == 0 {
		s = fmt.Sprintf("autoscaler up to %s replicas", FmtNum(p.MaxReplicas))
	}
	switch {
	case p.AtMaxSince != nil:
		return s + "; at its max since " + clock(p.AtMaxSince) + ": it cannot add replicas"
	case p.Desired > 0:
		return s + "; below its max (" + desired + ")"
	}
	return s
}

// eventLimitsLine gives the autoscaler's limits from the latest scale event of
// m that carries them (the pull's hpa_min_replicas / hpa_max_replicas
// attributes) and whether its desired replicas, as the latest scale event
// left them, are at the max: since the first event of the trailing run at
// it, or below it.
func eventLimitsLine(a *correlate.Analysis, m string) string {
	scales := modelScales(a, m)
	var lo, hi float64
	found := false
	for _, e := range scales {
		l, ok1 := number(e.Attrs["hpa_min_replicas"])
		h, ok2 := number(e.Attrs["hpa_max_replicas"])
		if ok1 && ok2 {
			lo, hi, found = l, h, true
		}
	}
	if !found {
		return poolLimits
	}
	s := fmt.Sprintf("autoscaler %s–%s replicas", FmtNum(lo), FmtNum(hi))
	last := len(scales) - 1
	_, to, ok := scaleCounts(scales[last].Event)
	switch {
	case !ok:
		return s
	case to >= hi:
		since := last
		for since > 0 {
			if _, prev, ok := scaleCounts(scales[since-1].Event); ok && prev >= hi {
				since--
				continue
			}
			break
		}
		return s + "; at its max since " + clock(&scales[since].Time)
	default:
		return fmt.Sprintf("%s; below its max (%s desired since %s)", s, FmtNum(to), clock(&scales[last].Time))
	}
}

// scaleCounts reads a scale event's from and to replica counts.
func scaleCounts(e correlate.Event) (from, to float64, ok bool) {
	f, ok1 := number(e.Attrs["from"])
	t, ok2 := number(e.Attrs["to"])
	return f, t, ok1 && ok2
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
