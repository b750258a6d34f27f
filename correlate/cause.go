package correlate

import (
	"cmp"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// causeBuilder accumulates a hypothesis' evidence. The score is the sum of
// weight×strength of the evidence minus the same of the counter-evidence,
// clamped to 0..1, so every score can be read back item by item.
type causeBuilder struct {
	c        Cause
	for_     float64
	against_ float64
}

func newCause(cat Category) *causeBuilder {
	return &causeBuilder{c: Cause{Category: cat, Evidence: []Evidence{}, CounterEvidence: []Evidence{}, Actions: []string{}}}
}

// minShown is the strength below which an item is not listed: it would add
// less than a percent or two and only clutter the explanation.
const minShown = 0.05

// support adds a supporting item; it returns the listed item (nil when too
// weak to list) so the caller can say what it rests on.
func (b *causeBuilder) support(name string, value, str, weight float64, format string, args ...any) *Evidence {
	str = clamp01(str)
	b.for_ += weight * str
	if str < minShown {
		return nil
	}
	b.c.Evidence = append(b.c.Evidence, Evidence{Name: name, Summary: fmt.Sprintf(format, args...), Value: finite(value), Strength: round3(str), Weight: weight})
	return &b.c.Evidence[len(b.c.Evidence)-1]
}

// corroborate adds a supporting item that only rules other explanations
// out ("traffic is steady", "nothing local stands out", "only this model
// slowed down"): such a fact tells this cause from some others, it does
// not make it happen, so it counts in full only once the cause has
// ownSupport of its own evidence, added before. Alone, such items kept
// causes whose key signal was flat at 0.1–0.2, ranked second under
// summaries saying so.
func (b *causeBuilder) corroborate(name string, value, str, weight float64, format string, args ...any) *Evidence {
	return b.support(name, value, str*clamp01(b.for_/ownSupport), weight, format, args...)
}

// ownSupport is the weighted support of its own from which a cause's
// corroborating items count in full.
const ownSupport = 0.2

// oppose adds a counter item, like support.
func (b *causeBuilder) oppose(name string, value, str, weight float64, format string, args ...any) *Evidence {
	str = clamp01(str)
	b.against_ += weight * str
	if str < minShown {
		return nil
	}
	b.c.CounterEvidence = append(b.c.CounterEvidence, Evidence{Name: name, Summary: fmt.Sprintf(format, args...), Value: finite(value), Strength: round3(str), Weight: weight})
	return &b.c.CounterEvidence[len(b.c.CounterEvidence)-1]
}

// restsOn records what a listed item rests on (no-op for nil).
func (e *Evidence) restsOn(event, curve string, row map[string]string) {
	if e == nil {
		return
	}
	e.Event, e.Curve = event, curve
	if len(row) > 0 {
		e.Row = row
	}
}

// shown returns the strength of a supporting item already added (0 when
// absent): summaries may only claim what an item with strength shows.
func (b *causeBuilder) shown(name string) float64 { return strengthOf(b.c.Evidence, name) }

// shownAgainst is shown for a counter item.
func (b *causeBuilder) shownAgainst(name string) float64 {
	return strengthOf(b.c.CounterEvidence, name)
}

// strengthOf is the strength of the listed item of that name (0: none).
func strengthOf(items []Evidence, name string) float64 {
	for _, e := range items {
		if e.Name == name {
			return e.Strength
		}
	}
	return 0
}

// claimed is the strength from which a supporting item is stated as a fact
// in the cause's summary.
const claimed = 0.3

func (b *causeBuilder) done(summary string, target Target) Cause {
	b.c.Score = round3(clamp01(b.for_ - b.against_))
	b.c.Summary = summary
	b.c.Target = target
	b.c.Actions = actions(b.c.Category, target)
	sort.SliceStable(b.c.Evidence, func(i, j int) bool {
		return b.c.Evidence[i].Weight*b.c.Evidence[i].Strength > b.c.Evidence[j].Weight*b.c.Evidence[j].Strength
	})
	sort.SliceStable(b.c.CounterEvidence, func(i, j int) bool {
		return b.c.CounterEvidence[i].Weight*b.c.CounterEvidence[i].Strength > b.c.CounterEvidence[j].Weight*b.c.CounterEvidence[j].Strength
	})
	return b.c
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*1000) / 1000
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// unexplainedBelow is the score under which no hypothesis is trusted: the
// analysis then says "unexplained" first instead of guessing (methods §7F).
const unexplainedBelow = 0.35

// rankCauses scores every category whose key signal the data carries and
// sorts them; the others are returned apart, with the reason. When no
// cause is strong enough, an "unexplained" entry leads, naming the best.
func rankCauses(f *facts) (causes []Cause, na []NotAssessable) {
	scorers := []struct {
		cat   Category
		score func(*facts) Cause
	}{
		{CatRelease, releaseCause}, {CatCapacity, capacityCause}, {CatLocalReplica, localReplicaCause}, {CatBatching, batchingCause},
		{CatColdStart, coldStartCause}, {CatDownstream, downstreamCause}, {CatRouting, routingCause}, {CatIngress, ingressCause},
	}
	for _, s := range scorers {
		if why := f.notAssessable(s.cat); why != "" {
			na = append(na, NotAssessable{Category: s.cat, Reason: why})
			continue
		}
		c := s.score(f)
		if len(f.affected) == 0 {
			c.Summary = "No model's latency rose, so there is nothing to attribute to " + strings.ReplaceAll(string(s.cat), "_", " ") + "."
			if f.noRise() != "" {
				c.Summary = "Latency could not be judged (see the scope), so " + strings.ReplaceAll(string(s.cat), "_", " ") + " cannot be either."
			}
		}
		causes = append(causes, c)
	}
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].Score > causes[j].Score })
	if len(f.affected) == 0 || len(causes) == 0 || causes[0].Score < unexplainedBelow {
		// Its score is how far the best cause falls short of explaining
		// the rise (1 − its score): over every other by construction, so
		// causes stay sorted by score and the highest is the top one.
		best := 0.0
		if len(causes) > 0 {
			best = causes[0].Score
		}
		u := Cause{Category: CatUnexplained, Score: math.Round((1-best)*1000) / 1000, Target: Target{}, Evidence: []Evidence{}, CounterEvidence: []Evidence{},
			Actions: []string{"Widen the window or check that curves and samples cover the affected models", "Look at the timeline for changes Waterline does not know about"}}
		switch {
		case len(f.affected) == 0 && f.noRise() != "":
			u.Summary = f.noRise()
			u.Actions = []string{"Pull the curves from before the onset (waterline pull --from …) or widen the window", "Check that the latency presets match the exporters' metric names"}
		case len(f.affected) == 0:
			u.Summary = "No model's latency clearly rose in this window, so there is nothing to explain."
		case len(causes) == 0:
			u.Summary = "No cause could be assessed: the data lacks every cause's key signal (see the coverage)."
		default:
			u.Summary = fmt.Sprintf("No cause is strongly supported (best: %s at %.2f).", causes[0].Category, causes[0].Score)
		}
		causes = append([]Cause{u}, causes...)
	}
	if na == nil {
		na = []NotAssessable{}
	}
	return causes, na
}

// ago formats an event's lead time relative to the onset.
func ago(e AlignedEvent) string { return agoSaid(e, true) }

// agoSaid is ago; without hole, a lead time against a hole in the latency
// data leaves out where the hole is (a sentence before it said so).
func agoSaid(e AlignedEvent, hole bool) string {
	if !e.gapFrom.IsZero() && e.OffsetS < 0 {
		onset := e.Time.Add(time.Duration(-e.OffsetS * float64(time.Second)))
		where := ""
		if hole {
			where = fmt.Sprintf(" (no latency data from %s to %s UTC)", e.gapFrom.UTC().Format("15:04:05"), onset.UTC().Format("15:04:05"))
		}
		if !e.Time.Before(e.gapFrom) {
			return "during the gap before the rise was seen" + where
		}
		least, most := e.gapFrom.Sub(e.Time).Round(15*time.Second), onset.Sub(e.Time).Round(15*time.Second)
		return fmt.Sprintf("between %s and %s before the rise%s", fmtDur(least), fmtDur(most), where)
	}
	if e.blurS > 0 && math.Abs(e.OffsetS) < e.blurS {
		return fmt.Sprintf("at the onset, as far as data at %s steps can tell", fmtDur(time.Duration(e.blurS*float64(time.Second))))
	}
	d := time.Duration(-e.OffsetS * float64(time.Second)).Round(time.Second)
	switch {
	case d > 0:
		return fmtDur(d) + " before the onset"
	case d < 0:
		return fmtDur(-d) + " after the onset"
	}
	return "at the onset"
}

func fmtDur(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	m := int(d.Minutes())
	s := int(d.Seconds()) % 60
	if s == 0 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

func list(xs []string) string {
	if len(xs) <= 3 {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:3], ", ") + fmt.Sprintf(" and %d more", len(xs)-3)
}

// actions are the standard responses of the article, per category.
func actions(cat Category, t Target) []string {
	name := t.Model
	if name == "" {
		name = "the affected models"
	}
	switch cat {
	case CatRelease:
		what := name + " " + t.Version
		if t.Version == "" {
			what = "the new version of " + name
		}
		return []string{
			fmt.Sprintf("Pause the rollout of %s and roll back to the previous version", what),
			"Compare the new version's stage times (exec, postprocess) with the previous one before resuming",
		}
	case CatCapacity:
		return []string{
			"Shed or rate-limit low-priority traffic until capacity catches up",
			fmt.Sprintf("Scale out %s (add replicas or GPUs to the pool) and check autoscaler limits", name),
		}
	case CatLocalReplica:
		where := "the slow replica"
		switch {
		case t.Node != "":
			where = "node " + t.Node + " (cordon it and move its replicas)"
		case t.Replica != "":
			where = "replica " + t.Replica
		}
		return []string{
			"Drain " + where + " so traffic moves to healthy replicas",
			"Check the node's GPU health (Xid/ECC errors, thermal throttling), restarts and noisy neighbours",
		}
	case CatBatching:
		return []string{
			fmt.Sprintf("Shrink the batch window (max queue delay) of %s back to its previous value", name),
			"Give latency-sensitive traffic its own batching policy (smaller batches, shorter window)",
		}
	case CatColdStart:
		return []string{
			"Pre-warm new replicas before they take traffic (readiness only after model load and warm-up)",
			fmt.Sprintf("Keep a warm pool or raise the minimum replicas of %s so scale-ups do not start cold", name),
		}
	case CatDownstream:
		return []string{
			"Fail over or degrade the slow dependency (cached or partial answers)",
			"Tighten timeouts and add a circuit breaker on the downstream call",
		}
	case CatRouting:
		return []string{
			fmt.Sprintf("Reset the routing weights (or revert the routing policy) of %s", name),
			"Route by replica health and queue length rather than stickiness",
		}
	case CatIngress:
		return []string{
			"Scale the gateway / ingress and check its CPU, connection limits and retries",
			"Check auth and rate-limit services on the request path",
		}
	}
	return nil
}

// bestOverModels scores a per-model hypothesis for every affected model
// whose data carries the category's key signal and keeps the strongest (the first model on ties); with no affected model it
// says so.
func bestOverModels(f *facts, cat Category, score func(f *facts, model string) Cause) Cause {
	var best Cause
	for _, m := range f.assessableModels(cat) {
		// On a tie (0 and 0, mostly) the model with something to weigh —
		// a deploy, new replicas — is the one to speak of: "chat-8b's
		// deploy is not slower" answers what the on-call sees on the
		// timeline, "no release of vision-detect" does not.
		if c := score(f, m); best.Category == "" || c.Score > best.Score ||
			c.Score == best.Score && len(c.Evidence) > len(best.Evidence) {
			best = c
		}
	}
	if best.Category == "" {
		return newCause(cat).done("No model carries a spike.", Target{})
	}
	return best
}

// done finishes a cause found for a target. Before scoring it argues
// against a cause whose target leaves out a model hit much harder than any
// it explains: in a compound incident (a bad release on one model while
// another model's traffic surges) the cause of the smaller part must not
// lead, however well it is supported.
func (f *facts) done(b *causeBuilder, summary string, target Target) Cause {
	f.opposeMinorPart(b, target)
	return b.done(summary, target)
}

// opposeMinorPart compares the hardest hit model the target explains with
// the hardest hit one it leaves out, by the log of their P99 ratios.
func (f *facts) opposeMinorPart(b *causeBuilder, t Target) {
	covered := f.targetModels(t)
	if len(covered) == 0 {
		return // the whole fleet, or nothing model-specific
	}
	in, inModel, out, outModel, outQ := math.Log(1.1), "", 0.0, "", ""
	// Whether the ratio quoted is a lower bound: its model's P99 during the
	// spike sat at its histogram's top bucket (the score reads the ratio as
	// measured, as it always did).
	inBound, outBound := false, false
	for _, m := range f.affected {
		mi, ok := f.impact(m)
		if !ok || math.IsNaN(mi.ratio) || mi.ratio <= 1 {
			continue
		}
		hit := math.Log(mi.ratio)
		bound := AtCeiling(mi.during, f.ceiling(m))
		switch {
		case covered[m]:
			if hit > in {
				in, inModel, inBound = hit, m, bound
			}
		case hit > out:
			out, outModel, outQ, outBound = hit, m, mi.quantile, bound
		}
	}
	if outModel == "" {
		return
	}
	rel := out / in
	// The models are the cause's target, not what it explains: "than any
	// model this explains" sat under causes whose own summary found no
	// sign of them ("No sign that vision-detect's requests wait longer
	// for batches"), as if they explained vision-detect's rise.
	inX, outX := fmt.Sprintf("×%.1f", math.Exp(in)), fmt.Sprintf("×%.1f", math.Exp(out))
	if inBound {
		inX = "at least " + inX
	}
	if outBound {
		outX = "at least " + outX
	}
	than := fmt.Sprintf("any model this cause is about (%s)", inX)
	switch {
	case inModel != "" && len(covered) == 1:
		than = fmt.Sprintf("%s (%s), which this cause is about", inModel, inX)
	case inModel != "":
		than = fmt.Sprintf("%s (%s), the hardest hit of the models this cause is about", inModel, inX)
	}
	b.oppose("explains_minor_part", rel, ramp(rel, 1.5, 4), 0.3,
		"%s was hit harder (%s %s) than %s: this cannot be the main cause.", outModel, cmp.Or(outQ, "P99"), outX, than)
}

// targetModels is the set of models a target speaks for: its model(s),
// the models of its replicas, of its node's replicas; nil when it names
// none (the gateway, the whole fleet).
func (f *facts) targetModels(t Target) map[string]bool {
	out := map[string]bool{}
	add := func(m string) {
		if m != "" {
			out[m] = true
		}
	}
	add(t.Model)
	for _, m := range t.Models {
		add(m)
	}
	for _, r := range append([]string{t.Replica}, t.Replicas...) {
		if r != "" {
			add(f.replicaModel(r))
		}
	}
	if t.Node != "" {
		for m, reps := range f.allReps {
			for _, r := range reps {
				if r.node == t.Node && f.affectedSet[m] {
					add(m)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
