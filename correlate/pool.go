package correlate

import (
	"fmt"
	"math"
	"time"
)

// Pool is what the pool-state curves (kube-state-metrics: desired
// replicas, the autoscaler's limits) say about one affected model over
// the analysed window: whether the pool could still grow when it
// saturated, which a capacity cause's action turns on. A count omitted
// from the JSON is zero (a pool scaled to zero) or not in the data.
type Pool struct {
	Model string `json:"model"`
	// DesiredAtOnset and Desired are the desired replicas at the onset
	// and at the last point read (Through); DesiredPeak the most desired
	// between the onset and Through.
	DesiredAtOnset float64   `json:"desired_at_onset,omitempty"`
	Desired        float64   `json:"desired,omitempty"`
	DesiredPeak    float64   `json:"desired_peak,omitempty"`
	Through        time.Time `json:"through"`
	// MinReplicas and MaxReplicas are the autoscaler's limits at Through
	// (0: no autoscaler in the data).
	MinReplicas float64 `json:"min_replicas,omitempty"`
	MaxReplicas float64 `json:"max_replicas,omitempty"`
	// AtMaxSince is when the desired replicas reached the max and stayed
	// there until Through; nil when they are below it.
	AtMaxSince *time.Time `json:"at_max_since,omitempty"`
}

// pools reads the pool state of models over [ph.BeforeFrom, to]: nil for
// a model without any pool curve.
func pools(cs *curveSet, ph phases, to time.Time, models []string) []Pool {
	var out []Pool
	for _, m := range models {
		desired := cs.model(RoleReplicas, m, "")
		hi := cs.model(RoleReplicasMax, m, "")
		if desired == nil && hi == nil {
			continue
		}
		p := Pool{Model: m}
		pts := curvePoints(desired, ph.BeforeFrom, to)
		// atOnset: a count at or before the onset was read. A pool scaled
		// to zero (KServe, Knative) has 0 there, which is a count, not
		// "no data": taken as missing, the hour's first count stood in,
		// and a 0 → 2 scale-up read "its autoscaler did not react".
		atOnset := false
		for _, pt := range pts {
			t := time.UnixMilli(pt.T).UTC()
			if !t.After(ph.Onset) {
				p.DesiredAtOnset, atOnset = pt.V, true
			} else {
				p.DesiredPeak = math.Max(p.DesiredPeak, pt.V)
			}
		}
		if len(pts) > 0 {
			last := pts[len(pts)-1]
			p.Desired, p.Through = last.V, time.UnixMilli(last.T).UTC()
			if !atOnset {
				p.DesiredAtOnset = pts[0].V
			}
			p.DesiredPeak = math.Max(p.DesiredPeak, p.Desired)
		}
		if lim := curvePoints(hi, ph.BeforeFrom, to); len(lim) > 0 {
			p.MaxReplicas = lim[len(lim)-1].V
			if p.Through.IsZero() {
				p.Through = time.UnixMilli(lim[len(lim)-1].T).UTC()
			}
		}
		if lim := curvePoints(cs.model(RoleReplicasMin, m, ""), ph.BeforeFrom, to); len(lim) > 0 {
			p.MinReplicas = lim[len(lim)-1].V
		}
		if p.MaxReplicas > 0 && p.Desired >= p.MaxReplicas {
			since := len(pts) - 1
			for since > 0 && pts[since-1].V >= p.MaxReplicas {
				since--
			}
			t := time.UnixMilli(pts[since].T).UTC()
			p.AtMaxSince = &t
		}
		out = append(out, p)
	}
	return out
}

// curvePoints is c's points in [from, to] (nil for no curve).
func curvePoints(c *Curve, from, to time.Time) []Point {
	if c == nil {
		return nil
	}
	var out []Point
	lo, hi := from.UnixMilli(), to.UnixMilli()
	for _, p := range c.Points {
		if p.T >= lo && p.T <= hi && !math.IsNaN(p.V) {
			out = append(out, p)
		}
	}
	return out
}

// hpaReaction is how long an autoscaler may take before "it did not
// react" is fair: its sync period (15 s) plus the scale-up it needs to see
// in its metric's window, a few minutes in practice.
const hpaReaction = 3 * time.Minute

// scaleAction words a capacity cause's scale-out action for the pool it
// acts on, when the pool state is known: at its max the autoscaler cannot
// help (raise the max); below it and unchanged for hpaReaction after the
// onset, it did not react (look at what it scales on); otherwise it is
// scaling, or has not had the time.
//
// end is where the analysis' data ends: replica counts that stop well
// before it say only that the autoscaler had not reacted by then.
func scaleAction(p Pool, onset, end time.Time) (string, bool) {
	switch {
	case p.MaxReplicas > 0 && p.AtMaxSince != nil:
		return fmt.Sprintf("Raise %s's autoscaler max (at its max of %g replicas since %s UTC) or add GPUs to the pool",
			p.Model, p.MaxReplicas, p.AtMaxSince.Format("15:04")), true
	case p.MaxReplicas > 0 && p.Desired > 0 && p.DesiredPeak <= p.DesiredAtOnset && end.Sub(p.Through) > hpaReaction && p.Through.Sub(onset) < hpaReaction:
		return fmt.Sprintf("Scale out %s (%g desired of at most %g at %s UTC, where its replica counts end: whether its autoscaler reacted is not in the data)",
			p.Model, p.Desired, p.MaxReplicas, p.Through.Format("15:04")), true
	case p.MaxReplicas > 0 && p.Desired > 0 && p.DesiredPeak <= p.DesiredAtOnset && end.Sub(p.Through) > hpaReaction:
		return fmt.Sprintf("Scale out %s (%g desired of at most %g at %s UTC, where its replica counts end): its autoscaler had not reacted by then — check the metric and target it scales on",
			p.Model, p.Desired, p.MaxReplicas, p.Through.Format("15:04")), true
	case p.MaxReplicas > 0 && p.Desired > 0 && p.DesiredPeak <= p.DesiredAtOnset && p.Through.Sub(onset) < hpaReaction:
		return fmt.Sprintf("Scale out %s (%g desired of at most %g; its autoscaler has had under %d minutes to react)",
			p.Model, p.Desired, p.MaxReplicas, int(hpaReaction.Minutes())), true
	case p.MaxReplicas > 0 && p.Desired > 0 && p.DesiredPeak <= p.DesiredAtOnset:
		return fmt.Sprintf("Scale out %s now (%g desired of at most %g): its autoscaler did not react — check the metric and target it scales on",
			p.Model, p.Desired, p.MaxReplicas), true
	case p.MaxReplicas > 0 && p.Desired > 0:
		return fmt.Sprintf("Let %s's autoscaler finish scaling (%g → %g of at most %g replicas) or scale out ahead of it",
			p.Model, p.DesiredAtOnset, p.Desired, p.MaxReplicas), true
	}
	return "", false
}

// withPoolActions replaces the generic scale-out action of each capacity
// cause whose target model's pool state is known.
func withPoolActions(causes []Cause, ps []Pool, onset, end time.Time) {
	for i := range causes {
		c := &causes[i]
		if c.Category != CatCapacity || c.Target.Model == "" {
			continue
		}
		for _, p := range ps {
			if p.Model != c.Target.Model {
				continue
			}
			if a, ok := scaleAction(p, onset, end); ok && len(c.Actions) > 1 {
				c.Actions[1] = a
			}
		}
	}
}
