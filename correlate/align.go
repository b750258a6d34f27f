package correlate

import (
	"math"
	"sort"
	"time"
)

// Event alignment (methods §7B): an event counts as a candidate cause when
// it comes shortly before the onset; its weight decays with the lead time,
// faster for kinds whose effect is immediate.
const (
	alignLookback = 60 * time.Minute // events earlier than this carry no weight
	alignSkew     = 60 * time.Second // events up to this long after the onset still count (clock skew, rollout start)
)

// decay returns the time constant of an event kind's weight.
func decay(k EventKind) time.Duration {
	switch k {
	case KindDeploy, KindRollback, KindConfigChange, KindRouteChange:
		return 10 * time.Minute
	case KindScaleUp, KindScaleDown, KindReplicaStart, KindReplicaRestart, KindNodeFault:
		return 5 * time.Minute
	}
	return 5 * time.Minute
}

// timeWeight is exp(−lead/τ) for events up to alignLookback before the
// onset and alignSkew after it, 0 otherwise.
func timeWeight(e Event, onset time.Time) float64 {
	lead := onset.Sub(e.Time)
	if lead > alignLookback || lead < -alignSkew {
		return 0
	}
	if lead < 0 {
		return 1
	}
	return math.Exp(-float64(lead) / float64(decay(e.Kind)))
}

// affectedScope is what carries the spike, for scope matching.
type affectedScope struct {
	models   map[string]bool
	replicas map[string]bool
	nodes    map[string]bool
}

// scopeMatch rates how well an event's scope fits what carries the spike:
// 1 for the same replica, node or model, 0.5 for an unscoped (fleet-wide)
// event, 0.1 for an event elsewhere.
func scopeMatch(e Event, a affectedScope) float64 {
	switch {
	case e.Replica != "":
		if a.replicas[e.Replica] {
			return 1
		}
		if e.Model != "" && a.models[e.Model] {
			return 0.7
		}
		if e.Node != "" && a.nodes[e.Node] {
			return 0.7
		}
		return 0.1
	case e.Node != "":
		if a.nodes[e.Node] {
			return 1
		}
		return 0.1
	case e.Model != "":
		if a.models[e.Model] {
			return 1
		}
		return 0.1
	}
	return 0.5
}

// alignEvents weights every event against the onset and the affected scope,
// strongest first. Alerts are symptoms, not causes, and are listed with
// zero weight. The same deploy seen twice — pushed by the CD system and
// derived from kube-state-metrics — is listed once.
//
// Over data coarser than alignSkew (5-minute or hourly steps) the onset is
// known to a step: an event within a step of it may have come before the
// rise or after it, so it counts half and is said to be at the onset.
func alignEvents(events []Event, onset time.Time, step time.Duration, a affectedScope) []AlignedEvent {
	events = dedupeDeploys(events)
	out := make([]AlignedEvent, 0, len(events))
	for _, e := range events {
		ae := AlignedEvent{Event: e, OffsetS: e.Time.Sub(onset).Seconds()}
		if step > alignSkew {
			ae.blurS = step.Seconds()
		}
		if e.Kind != KindAlert {
			ae.TimeWeight = timeWeight(e, onset)
			if ae.blurS > 0 && math.Abs(ae.OffsetS) < ae.blurS {
				ae.TimeWeight = 0.5 // before or after the rise: either
			}
			ae.ScopeMatch = scopeMatch(e, a)
		}
		out = append(out, ae)
	}
	sort.SliceStable(out, func(i, j int) bool {
		wi, wj := out[i].TimeWeight*out[i].ScopeMatch, out[j].TimeWeight*out[j].ScopeMatch
		if wi != wj {
			return wi > wj
		}
		return out[i].Time.Before(out[j].Time)
	})
	return out
}

// bestEvent returns the aligned event of the given kinds with the largest
// weight that passes keep (nil keep = all), and that weight.
func bestEvent(events []AlignedEvent, keep func(AlignedEvent) bool, kinds ...EventKind) (*AlignedEvent, float64) {
	var best *AlignedEvent
	var bw float64
	for i := range events {
		e := &events[i]
		ok := false
		for _, k := range kinds {
			if e.Kind == k {
				ok = true
				break
			}
		}
		if !ok || (keep != nil && !keep(*e)) {
			continue
		}
		if w := e.TimeWeight * e.ScopeMatch; w > bw {
			best, bw = e, w
		}
	}
	return best, bw
}

// firstEvent returns the earliest aligned event that passes keep, or nil.
func firstEvent(events []AlignedEvent, keep func(AlignedEvent) bool) *AlignedEvent {
	var first *AlignedEvent
	for i := range events {
		if keep(events[i]) && (first == nil || events[i].Time.Before(first.Time)) {
			first = &events[i]
		}
	}
	return first
}

// derivedSource marks events Waterline derived from kube-state-metrics.
const derivedSource = "kube-state-metrics"

// dedupeDeploys drops a derived deploy when a pushed deploy of the same
// model (and version, when both name one) lies within ten minutes of it:
// the pushed one carries the CD system's summary and id.
func dedupeDeploys(events []Event) []Event {
	var pushed []Event
	for _, e := range events {
		if (e.Kind == KindDeploy || e.Kind == KindRollback) && e.Source != derivedSource && e.Model != "" {
			pushed = append(pushed, e)
		}
	}
	if len(pushed) == 0 {
		return events
	}
	out := events[:0:0]
	for _, e := range events {
		if e.Kind == KindDeploy && e.Source == derivedSource && e.Model != "" {
			dup := false
			for _, p := range pushed {
				if p.Model == e.Model && (p.Version == "" || e.Version == "" || p.Version == e.Version) &&
					p.Time.Sub(e.Time).Abs() <= 10*time.Minute {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
