package correlate

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

var routingWords = regexp.MustCompile(`(?i)rout|weight|sticky|balanc|affinity|shard`)

// routingCause: traffic piles onto a few replicas. Signature: the imbalance
// index (busiest replica's share × replica count) jumps while the model's
// total traffic stays normal, the busy replicas are the slow ones and their
// queues grow; often a routing change came just before.
func routingCause(f *facts) Cause { return bestOverModels(f, CatRouting, routingFor) }

func routingFor(f *facts, m string) Cause {
	b := newCause(CatRouting)
	if n := len(f.allReps[m]); n == 1 {
		// One replica takes all the traffic by construction: its load
		// "×1.0 the average" is no finding about routing.
		return f.done(b, fmt.Sprintf("%s has one replica in the data, so routing has no spread to skew.", m), Target{Model: m})
	}
	ib, id := f.busiestLoad(m)
	var busy []string
	if !math.IsNaN(ib) && !math.IsNaN(id) {
		ratio := safeRatio(id, ib)
		b.support("traffic_skew", ratio, ramp(ratio, 1.2, 2), 0.35,
			"The busiest %s replica's load went from %.1f× to %.1f× the average.", m, ib, id)
		if ratio < 1.1 {
			if id < 1.5 {
				b.oppose("traffic_balanced", ratio, ramp(1.15-ratio, 0, 0.15), 0.3, "Traffic stayed balanced across %s's replicas (the busiest at %.1f× the average).", m, id)
			} else { // skewed already: it did not get worse, but "balanced" it is not
				b.oppose("traffic_balanced", ratio, ramp(1.15-ratio, 0, 0.15), 0.3, "The spread of %s's traffic did not change: the busiest replica carried %.1f× the average before and %.1f× during.", m, ib, id)
			}
		}
		busy = f.supportBusySlow(b, m)
	}
	ev, w := bestEvent(f.events, func(e AlignedEvent) bool {
		return (e.Model == "" || e.Model == m) && (e.Kind == KindRouteChange || mentions(e.Event, routingWords))
	}, KindRouteChange, KindConfigChange)
	if ev != nil {
		b.support("routing_change", -ev.OffsetS, w, 0.15, "%s %q at %s, %s.", capitalize(strings.ReplaceAll(string(ev.Kind), "_", " ")), ev.Summary, ev.Time.Format("15:04:05"), ago(*ev)).restsOn(ev.ID, "", nil)
	}
	if q := f.qpsRatio(m); !math.IsNaN(q) {
		b.corroborate("total_traffic_normal", q, ramp(1.3-q, 0, 0.15), 0.10, "%s's total traffic %s, so the pile-up is not more traffic.", m, trafficNotUp(q))
		if q > 1.25 {
			b.oppose("traffic_up", q, ramp(q, 1.25, 1.8), 0.3, "%s's total traffic rose ×%.2f.", m, q)
		}
	}
	if len(f.slowed) == 1 {
		b.corroborate("one_model", 1, 1, 0.05, "Only %s slowed down.", m)
	}
	sort.Strings(busy)
	sum := fmt.Sprintf("Routing piles %s's traffic onto %s.", m, list(busy))
	switch {
	case math.IsNaN(ib) || math.IsNaN(id):
		sum = fmt.Sprintf("How %s's traffic is spread over its replicas is unknown.", m)
	case (b.shown("traffic_skew") < claimed || len(busy) == 0) && b.shown("traffic_skew") > 0:
		// The busiest replica's share grew, too little (or on no replica
		// whose own share rose) for a pile-up: not "stayed spread".
		sum = fmt.Sprintf("%s's busiest replica went from %.1f× to %.1f× the average: a shift, not a pile-up onto one replica.", m, ib, id)
	case b.shown("traffic_skew") < claimed || len(busy) == 0:
		sum = fmt.Sprintf("%s's traffic stayed spread over its replicas (the busiest at %.1f× the average, from %.1f×).", m, id, ib)
	}
	return f.done(b, sum, Target{Model: m, Replicas: busy})
}

// busiestLoad is the busiest replica's load over the average, before and
// during: from replica curves, else from the relative loads of samples.
func (f *facts) busiestLoad(m string) (before, during float64) {
	before, during = imbalance(f.cs, f.ph, m)
	if !math.IsNaN(before) && !math.IsNaN(during) {
		return before, during
	}
	before, during = math.NaN(), math.NaN()
	for _, r := range f.reps[m] {
		if !math.IsNaN(r.loadBefore) && (math.IsNaN(before) || r.loadBefore > before) {
			before = r.loadBefore
		}
		if !math.IsNaN(r.loadDuring) && (math.IsNaN(during) || r.loadDuring > during) {
			during = r.loadDuring
		}
	}
	return before, during
}

// supportBusySlow: the replicas that took more traffic are the slow ones,
// and their queues grew. It returns those replicas.
func (f *facts) supportBusySlow(b *causeBuilder, m string) (busy []string) {
	reps := f.reps[m]
	slowBusy := 0
	for _, r := range reps {
		if safeRatio(r.loadDuring, r.loadBefore) >= 1.3 {
			busy = append(busy, r.replica)
			if r.outlier || r.crossZ >= 3 {
				slowBusy++
			}
		}
	}
	if len(busy) == 0 {
		return nil
	}
	fr := float64(slowBusy) / float64(len(busy))
	b.support("busy_replicas_slow", fr, fr, 0.25, "%s that took more traffic %s.", capitalize(kOfN(slowBusy, len(busy), "replica")), verbFor(slowBusy, "is the slow one", "are the slow ones"))
	var qd float64
	var q CurveDeviation
	for _, r := range reps {
		if containsStr(busy, r.replica) && !math.IsNaN(r.queueDev) && r.queueDev > qd {
			qd, q = r.queueDev, r.queue
		}
	}
	if qd > 0 {
		// The sentence stands alone in the timeline step, after the route
		// change: "Their queues grew" named nobody there, and said
		// "queues" of one replica.
		whose := "as it took more traffic"
		if len(busy) > 1 {
			whose = fmt.Sprintf("the most of the %d replicas that took more traffic", len(busy))
		}
		b.support("busy_replicas_queue", qd, strength(qd, 5), 0.10, "%s %s, %s.", curveSubject(q), moved(q), whose).restsOn("", q.Key, nil)
	}
	return busy
}
