package correlate

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// coldWindow is how long before the onset a scale-up can still explain it:
// new pods take a while to be scheduled, load weights and get traffic.
const coldWindow = 15 * time.Minute

// coldStartCause: a scale-up added replicas that served traffic before they
// were warm. Signature: scale_up / replica_start events shortly before the
// onset, the slow requests concentrated on the young replicas, which are
// far slower than their warm peers, and a spike that fades as they warm.
func coldStartCause(f *facts) Cause { return bestOverModels(f, CatColdStart, coldStartFor) }

func coldStartFor(f *facts, m string) Cause {
	b := newCause(CatColdStart)
	young := f.startedNear(m, coldWindow)
	ev, w := bestEvent(f.events, func(e AlignedEvent) bool { return e.Model == m }, KindScaleUp)
	if ev != nil {
		b.support("scale_up", -ev.OffsetS, w, 0.20, "%s scaled up at %s, %s: %s.", m, ev.Time.Format("15:04:05"), ago(*ev), ev.Summary).restsOn(ev.ID, "", nil)
	}
	if len(young) > 0 {
		var lead float64
		for _, r := range young {
			lead = math.Max(lead, timeWeight(Event{Kind: KindReplicaStart, Time: f.started[r]}, f.ph.Onset))
		}
		b.support("new_replicas", float64(len(young)), lead*ramp(float64(len(young)), 0, 2), 0.15,
			"%d new replica(s) of %s started %s: %s.", len(young), m, f.startedWhen(young), list(young))
	} else if from := f.cs.firstPoint(); !f.hasEvent(m, KindReplicaStart) && from.After(f.ph.Onset.Add(-coldWindow)) {
		// Replica curves that begin less than the window before the
		// onset cannot show which replicas started in it.
		return b.done(fmt.Sprintf("The data begins at %s UTC, under %s before the onset, so whether new replicas of %s started just before it is not known.", from.Format("15:04"), fmtDur(coldWindow), m), Target{Model: m})
	} else if ev == nil || f.data.models[m][sigReplicas].curves || f.hasEvent(m, KindReplicaStart) {
		b.oppose("no_new_replicas", 0, 1, 0.3, "No replica of %s started in the %s before the onset.", m, fmtDur(coldWindow))
		return b.done(fmt.Sprintf("No new replicas of %s around the onset.", m), Target{Model: m})
	} else {
		// A scale-up with no replica curves or start events: the new pods
		// are invisible, neither confirmed nor denied.
		return b.done(fmt.Sprintf("%s scaled up %s; no replica start times are in the data, so whether new replicas served the slow requests is unknown.", m, ago(*ev)), Target{Model: m})
	}
	// Are the young replicas the slow ones?
	if c, ok := f.concentrationOf("replica_age", "young"); ok {
		b.support("slow_requests_on_new_replicas", c.RiskRatio, concStrength(c), 0.30,
			"%.0f%% of slow requests ran on replicas younger than %s (%.0f%% of the others): %s.", c.SelectionPct, fmtDur(youngAge), c.BaselinePct, likelier(c.RiskRatio)).restsOn("", "", c.Dims)
	}
	youngSet := map[string]bool{}
	for _, r := range young {
		youngSet[r] = true
	}
	// Pods that started after the onset (a rollout's later ones) are new
	// too: neither the suspects nor the warm pods they are compared with.
	fresh := f.startedSince(m, f.ph.Onset.Add(-coldWindow))
	var yp, op []float64
	outYoung := 0
	outAll := 0
	for _, r := range f.reps[m] {
		if math.IsNaN(r.during) {
			continue
		}
		switch {
		case youngSet[r.replica]:
			yp = append(yp, r.during)
		case !fresh[r.replica]:
			op = append(op, r.during)
		}
		if r.outlier {
			outAll++
			if fresh[r.replica] {
				outYoung++
			}
		}
	}
	if len(yp) > 0 && len(op) > 0 {
		r := safeRatio(median(yp), median(op))
		b.support("new_replicas_slower", r, ramp(r, 1.3, 3), 0.20, "New replicas' P99 is %s against %s on the warm ones (×%.1f).", fmtMs(median(yp)), fmtMs(median(op)), r)
		if r < 1.15 {
			b.oppose("new_replicas_not_slower", r, ramp(1.2-r, 0, 0.2), 0.5, "The new replicas are no slower than the warm ones (P99 %s vs %s).", fmtMs(median(yp)), fmtMs(median(op)))
		}
	}
	if outAll > 0 {
		fr := float64(outYoung) / float64(outAll)
		b.support("outliers_are_new", fr, fr, 0.05, "%s standing out %s new.", capitalize(kOfN(outYoung, outAll, "replica")), verbFor(outYoung, "is", "are"))
	}
	if len(f.slowed) == 1 {
		b.corroborate("one_model", 1, 1, 0.10, "Only %s slowed down.", m)
	}
	// Replicas that come with a rollout are new pods of a new version, not
	// extra capacity: without a scale-up, that is a release's business.
	var rollout string // the version the new replicas came with
	if ev == nil {
		if fr, ver := f.youngOnNewVersion(m, youngSet, fresh); fr > 0 {
			b.oppose("rollout_not_scale_up", fr, fr, 0.4,
				"The new replicas run %s, a version the warm ones do not: they came with a rollout, and no scale-up was seen.", ver)
			rollout = ver
		}
	}
	sort.Strings(young)
	return f.done(b, coldStartSummary(b, m, len(young), rollout, f.latestStart(young).After(f.ph.Onset)), Target{Model: m, Replicas: young})
}

// latestStart is when the last of the replicas started.
func (f *facts) latestStart(reps []string) time.Time {
	var last time.Time
	for _, r := range reps {
		if t := f.started[r]; t.After(last) {
			last = t
		}
	}
	return last
}

// startedWhen dates the young replicas' starts: within the cold window
// before the onset, or up to alignSkew after it when one started then
// (clock skew keeps it a suspect, but not "before the onset").
func (f *facts) startedWhen(young []string) string {
	if late := f.latestStart(young).Sub(f.ph.Onset); late > 0 {
		return fmt.Sprintf("between %s before the onset and %s after it", fmtDur(coldWindow), fmtDur(late))
	}
	return fmt.Sprintf("within %s before the onset", fmtDur(coldWindow))
}

// coldStartSummary claims cold replicas only when the new ones are
// measured slower, and says so when they came with a rollout instead of
// a scale-up (a slow new version is slow on new pods too).
func coldStartSummary(b *causeBuilder, m string, young int, rollout string, after bool) string {
	slower := b.shown("slow_requests_on_new_replicas") >= claimed || b.shown("new_replicas_slower") >= claimed
	// Measured slower, if too little to claim a cold start by itself
	// (×1.8 on a 1.3–3 ramp): "the data does not show them slower"
	// stood above "New replicas' P99 is 249 ms against 140 ms on the
	// warm ones (×1.8)" (release demo).
	someSlower := b.shown("new_replicas_slower") > 0
	var ratio float64
	for _, e := range b.c.Evidence {
		if e.Name == "new_replicas_slower" {
			ratio = e.Value
		}
	}
	switch {
	case !slower && someSlower && b.shownAgainst("rollout_not_scale_up") >= claimed:
		return fmt.Sprintf("The new %s replicas are slower than the warm ones (P99 ×%.1f), but they run %s: they came with its rollout, not a scale-up, so the release is the suspect.", m, ratio, rollout)
	case !slower && someSlower:
		when := "before"
		if after {
			when = "around"
		}
		return fmt.Sprintf("%d new %s replica(s) started %s the onset; their P99 is ×%.1f the warm ones', too little by itself to blame their warm-up.", young, m, when, ratio)
	case !slower && after:
		return fmt.Sprintf("%d new %s replica(s) started around the onset, but the data does not show them slower than the warm ones.", young, m)
	case !slower:
		return fmt.Sprintf("%d new %s replica(s) started before the onset, but the data does not show them slower than the warm ones.", young, m)
	case b.shownAgainst("rollout_not_scale_up") >= claimed:
		return fmt.Sprintf("The new %s replicas are slower than the warm ones, but they run %s: they came with its rollout, not a scale-up, so the release is the suspect.", m, rollout)
	}
	return fmt.Sprintf("New %s replicas took traffic before they were warm.", m)
}

// youngOnNewVersion returns the share of young replicas whose version no
// warm replica of the model runs, and that version. Warm are the replicas
// not fresh (started since the cold window opened, the onset's later
// pods included).
func (f *facts) youngOnNewVersion(m string, young, fresh map[string]bool) (float64, string) {
	warm := map[string]bool{}
	for _, r := range f.reps[m] {
		if !young[r.replica] && !fresh[r.replica] && r.version != "" {
			warm[r.version] = true
		}
	}
	n, newer := 0, 0
	ver := ""
	for _, r := range f.reps[m] {
		if !young[r.replica] || r.version == "" {
			continue
		}
		n++
		if !warm[r.version] {
			newer++
			ver = r.version
		}
	}
	if n == 0 || len(warm) == 0 {
		return 0, ""
	}
	return float64(newer) / float64(n), ver
}
