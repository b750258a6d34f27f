package correlate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// checklist answers the article's four steps from the analysis: scope
// first, then the timeline, then the samples, then the action. Each step
// quotes the strongest supporting fact of the top cause — the event and
// the curve it rests on, the concentration row that explains most of the
// tail — and never a symptom from outside the incident's scope.
func checklist(a Analysis, f *facts) []ChecklistStep {
	top := topCause(a.Causes)
	scope := ChecklistStep{Step: "scope", Answer: a.Scope.Summary}
	if a.Reconciliation != "" {
		scope.Answer += " " + a.Reconciliation
	}
	return []ChecklistStep{scope, timelineStep(a, f, top), samplesStep(a, f, top), actionStep(a, top)}
}

func timelineStep(a Analysis, f *facts, top *Cause) ChecklistStep {
	st := ChecklistStep{Step: "timeline"}
	var tl []string
	if a.Onset != nil && a.OnsetGapFrom != nil {
		// The curve has no points before the onset for a while: the rise
		// cannot be timed closer than the hole.
		tl = append(tl, "Latency rose between "+a.OnsetGapFrom.UTC().Format("15:04:05")+" and "+a.Onset.UTC().Format("15:04:05")+" UTC (no latency data in between).")
	} else if a.Onset != nil {
		tl = append(tl, "Latency rose at "+a.Onset.UTC().Format("15:04:05")+" UTC.")
	} else if nr := f.noRise(); nr != "" {
		tl = append(tl, nr) // no data to have found a spike in
	} else {
		tl = append(tl, "No latency spike was detected in the window.")
	}
	// The event and the curve the top cause rests on, strongest first.
	if top != nil {
		for _, e := range top.Evidence {
			if e.Event != "" && st.Event == "" {
				tl = append(tl, e.Summary)
				st.Event, st.Evidence = e.Event, e.Name
			}
		}
		for _, e := range top.Evidence {
			if e.Curve != "" && st.Curve == "" && e.Event == "" {
				tl = append(tl, e.Summary)
				st.Curve = e.Curve
				if st.Evidence == "" {
					st.Evidence = e.Name
				}
			}
		}
	}
	if st.Event == "" {
		n := 0
		for _, e := range a.Events {
			if e.TimeWeight*e.ScopeMatch < 0.2 || e.ScopeMatch < 0.7 || n == 2 {
				continue
			}
			n++
			what := strings.ReplaceAll(string(e.Kind), "_", " ")
			if e.Summary != "" {
				what += " (" + e.Summary + ")"
			}
			tl = append(tl, fmt.Sprintf("%s %s.", capitalize(what), agoSaid(e, false)))
		}
		switch {
		case n == 0 && a.Onset != nil && !changeFeedSeen(a.Events):
			// Nothing was received: that is no sign that nothing changed.
			tl = append(tl, "No change event was received for this window: if deploys, config changes and scaling are not sent to Waterline, what changed is not known here.")
		case n == 0 && a.Onset != nil:
			tl = append(tl, "No change event in the incident's scope lines up with the onset.")
		}
	}
	// An LLM's latency follows its requests' length: said whatever the
	// top cause, as the workload behind (or ruled out of) the rise.
	l, said := f.lengthLine(st.Curve)
	if l != "" {
		tl = append(tl, l)
	}
	if st.Curve == "" {
		if d, ok := f.movedMostInScope(a); ok {
			// A curve the length line quoted with its figures (the first
			// token, the decode speed, the length) is not said again.
			if !slices.Contains(said, d.Key) {
				tl = append(tl, fmt.Sprintf("Of the other curves of the affected models and nodes, %s moved most: it %s.", describeCurve(d), moved(d)))
			}
			st.Curve = d.Key
		}
	}
	st.Answer = strings.Join(tl, " ")
	return st
}

// movedMostInScope is the non-latency curve of the incident's scope (its
// models, its outlier replicas and their nodes, the top cause's node) that
// moved most.
func (f *facts) movedMostInScope(a Analysis) (CurveDeviation, bool) {
	nodes := map[string]bool{}
	for _, n := range a.Scope.Nodes {
		nodes[n] = true
	}
	if top := topCause(a.Causes); top != nil && top.Target.Node != "" {
		nodes[top.Target.Node] = true
	}
	for _, d := range a.Deviations {
		switch d.Role {
		case RoleLatencyP50, RoleLatencyP95, RoleLatencyP99, RoleLatencyMean:
			continue
		}
		in := f.affectedSet[d.Scope.Model] || (d.Scope.Model == "" && nodes[d.Scope.Node])
		if in && d.Score > 0 && (d.Level == LevelModel || d.Level == LevelNode) {
			return d, true
		}
	}
	return CurveDeviation{}, false
}

func samplesStep(a Analysis, f *facts, top *Cause) ChecklistStep {
	st := ChecklistStep{Step: "samples"}
	if a.Samples.Total == 0 {
		st.Answer = "No request samples cover this window; send them to POST /api/v1/samples to see which requests were slow."
		return st
	}
	if len(f.affected) == 0 {
		// Nothing in scope slowed: no request is "slow" against a rise,
		// and other models' growth is not this incident's.
		st.Answer = "Request samples cover this window, but with no judged model's latency clearly up, none is set apart as slow."
		return st
	}
	var sm []string
	var relative []string // affected models whose "slow" is the spike's own tail
	for _, m := range f.affected {
		if f.ss == nil {
			break // hand-built facts
		}
		if st := f.ss.byModel[m]; st != nil && st.relative {
			relative = append(relative, m)
		}
	}
	// SlowBasis also counts an affected model with no samples as no part
	// of the count: the header and the export read it too.
	if len(relative) > 0 && (len(relative) == len(f.affected) || a.Samples.SlowBasis == SlowBasisSpikeTail) && a.Samples.SlowRequests > 0 {
		// The cut-off is the spike's own P90: the count would be a tenth
		// of the samples whatever happened.
		sm = append(sm, fmt.Sprintf("How many requests were slow is not known: no sample or P99 curve from before the onset gives %s a baseline, so the slowest tenth of %s sampled requests during the spike stands in for the slow ones.",
			list(relative), verbFor(len(relative), "its", "their")))
	} else if est := a.Samples.SlowRequests; est > 0 {
		if sampled := float64(a.Samples.Slow); sampled > 0 && est > sampled+0.5 {
			// Re-weighted by sample_rate: an estimate, said as one (the
			// page's header writes it "≈" too), not "10,701" as if counted.
			sm = append(sm, fmt.Sprintf("≈%s slow requests of %s during the spike%s (estimated from their %s slow samples).", fmtCount(est), list(f.affected), f.spikeSpan(), fmtCount(sampled)))
		} else {
			sm = append(sm, fmt.Sprintf("%s slow requests of %s during the spike%s.", fmtCount(est), list(f.affected), f.spikeSpan()))
		}
		if len(relative) > 0 {
			sm = append(sm, fmt.Sprintf("For %s, with no baseline before the onset, the slowest tenth of %s sampled requests during the spike is counted as slow.",
				list(relative), verbFor(len(relative), "its", "their")))
		}
	}
	if ds := dominantStages(a.Stages); len(ds) > 0 && ds[0].Share > 0 {
		// Stages within 5 points of the largest share it: naming only the
		// first would single out one of equals.
		tied := []string{ds[0].Stage}
		for _, s := range ds[1:] {
			if ds[0].Share-s.Share < 0.05 {
				tied = append(tied, s.Stage)
			}
		}
		if len(tied) == 1 {
			sm = append(sm, fmt.Sprintf("The %s stage explains %.0f%% of the tail's growth (+%s).", ds[0].Stage, 100*ds[0].Share, fmtMs(ds[0].DeltaMs)))
		} else {
			sm = append(sm, fmt.Sprintf("No stage stands out: the growth is spread over %s (about %.0f%% each).", list(tied), 100*ds[0].Share))
		}
	}
	if row, ev, ok := keyRow(a, top); ok {
		st.Row, st.Evidence = row.Dims, ev
		st.Fallback = ev == "" && top != nil && !matchesTarget(row, top.Target)
		s := fmt.Sprintf("%s %s (%.0f%% of slow requests vs %.0f%% of the others, %s)", RowLead(st.Fallback, row.TailShare > 0), row.Label, row.SelectionPct, row.BaselinePct, likelier(row.RiskRatio))
		s += tailClause(a, row)
		sm = append(sm, s+".")
	} else {
		sm = append(sm, NoConcentration(a.Samples.Slow, a.Samples.During))
	}
	if line := tokensLine(a.Samples.Tokens, len(f.affected) > 1); line != "" {
		sm = append(sm, line)
	}
	// The tenant's share is of the first model's slow requests: judged on
	// that model's own count, not the incident's (another model's 580 let
	// 2 of 3 read as "67 % of its slow requests").
	if a.Samples.Slow >= minSlowToJudge && len(a.Impact) > 0 && len(a.Impact[0].Tenants) > 0 && *a.Impact[0].Tenants[0].SlowShare >= 0.5 &&
		f.slowSamples([]string{a.Impact[0].Model}) >= minSlowToJudge {
		sm = append(sm, tenantSentence(a.Impact[0].Tenants[0], a.Impact[0].Model))
	}
	st.Answer = strings.Join(sm, " ")
	return st
}

// tokensLine says whether the slow requests were the long ones, from the
// samples' token counts ("" without them). Longer: whether the servers
// also slowed is read from the time per token against requests of that
// length before the onset — not against the other requests of the spike,
// which the same slowdown reached (a uniform slowdown pushes the long
// ones over the threshold first), nor against shorter ones, which spread
// their queue and prefill over fewer tokens. No such requests sampled
// before: the figures, and no verdict on speed. As long as the others:
// their length does not explain them.
func tokensLine(t *SampleTokens, named bool) string {
	if t == nil || t.OtherOutputTokens <= 0 {
		return ""
	}
	who := "The slow requests"
	if named && t.Model != "" {
		who = "The slow requests of " + t.Model
	}
	ratio := t.SlowOutputTokens / t.OtherOutputTokens
	figures := fmt.Sprintf("a median of %.0f generated tokens against %.0f for the others", t.SlowOutputTokens, t.OtherOutputTokens)
	if ratio < lengthFlat {
		return fmt.Sprintf("%s were no longer than the others (%s): their length does not explain them.", who, figures)
	}
	if ratio < lengthLonger {
		return ""
	}
	if t.BeforeMsPerToken <= 0 {
		return fmt.Sprintf("%s were the long ones: %s (×%.1f); no request of that length was sampled before the onset, so whether the servers slowed too cannot be told from the samples.",
			who, figures, ratio)
	}
	// The time per token held within lengthFlat either way (the
	// timeline's "as before"), or rose past lengthLonger ("slower");
	// between the two, the figures without a verdict.
	speed := t.SlowMsPerToken / t.BeforeMsPerToken
	than := fmt.Sprintf("(%s against %s for requests of that length before the onset)", fmtMs(t.SlowMsPerToken), fmtMs(t.BeforeMsPerToken))
	switch {
	case speed < lengthFlat:
		return fmt.Sprintf("%s were the long ones: %s (×%.1f), at no more time per token than before %s: their length, not the servers' speed, sets them apart.",
			who, figures, ratio, than)
	case speed >= lengthLonger:
		return fmt.Sprintf("%s were longer (%s, ×%.1f) and slower per token too %s: their length explains only part of it.",
			who, figures, ratio, than)
	}
	return fmt.Sprintf("%s were longer (%s, ×%.1f), at somewhat more time per token %s.", who, figures, ratio, than)
}

// minSlowToJudge is the fewest slow samples from which the concentration
// table says anything: with fewer, a row ("all 3 slow requests were on
// r1") or its absence says more about the sample count than about the
// requests, so no row is formed and NoConcentration says why.
const minSlowToJudge = 10

// tooFewOthers reports whether so many of the spike's sampled requests
// are slow (two thirds) that hardly a row can stand out: a row needs its
// slow requests 3× as likely as the rest's (MinRiskRatio), and the rest
// are mostly slow too.
func tooFewOthers(slow, during int) bool { return during > 0 && 3*slow >= 2*during }

// NoConcentration says that no dimension stands out among the slow
// requests, or that too few were sampled to tell; during is how many
// samples the spike has at all (none: the feed has nothing from then; nil:
// not counted, in an analysis stored before it was).
func NoConcentration(slow int, during *int) string {
	switch {
	case during != nil && *during == 0 && slow == 0:
		return "No request was sampled during the spike, so the samples cannot show where slow requests concentrate."
	case slow == 0:
		return "No sampled request of the affected models was slow during the spike, so the samples cannot show where slow requests concentrate."
	case slow < minSlowToJudge:
		verb := "were"
		if slow == 1 {
			verb = "was"
		}
		return fmt.Sprintf("Only %s %s sampled during the spike: too few to tell whether slow requests concentrate on one dimension.", plural(slow, "slow request"), verb)
	case during != nil && tooFewOthers(slow, *during):
		// A row needs its slow requests 3× as likely as the rest's
		// (MinRiskRatio): with two thirds of the spike's requests slow,
		// hardly any split can show one, so finding none says nothing
		// (release demo, seed 2: 94% slow, "not concentrated" beside a
		// new version 5× slower).
		return fmt.Sprintf("%d%% of the requests sampled during the spike were slow, which leaves few others to compare them with: that no dimension stands out says little about where slow requests concentrate.", 100*slow/(*during))
	}
	return "Slow requests are not concentrated on any single dimension."
}

// tenantSentence says which tenant sends most of a model's slow requests
// and whether that is more than its share of the traffic: a tenant that
// sends most requests sends most slow ones without standing out.
func tenantSentence(t ScopeEntry, model string) string {
	s := fmt.Sprintf("Tenant %s sends %.0f%% of %s's slow requests", t.Name, 100**t.SlowShare, model)
	switch {
	case t.TrafficShare == nil:
		return s + "."
	case *t.SlowShare >= *t.TrafficShare+0.15:
		return s + fmt.Sprintf(" against %.0f%% of its requests.", 100**t.TrafficShare)
	}
	return s + fmt.Sprintf(", in line with its %.0f%% of the requests.", 100**t.TrafficShare)
}

// tailClause says how much of the P99's rise the row accounts for, as a
// share: the samples' own P99 over the whole spike is another population
// than the impact's P99 curve (its median over the spike's main part), so
// quoting it in milliseconds would contradict the header. The rise quoted
// is the impact's, when the row is about one model of the impact.
func tailClause(a Analysis, row Concentration) string {
	if row.TailShare <= 0 || len(row.Models) == 0 {
		return ""
	}
	s := fmt.Sprintf("; removing them from the request samples undoes %.0f%% of %s's P99 rise", 100*row.TailShare, list(row.Models))
	if len(row.Models) > 1 {
		// The share is of the models' requests pooled: "of chat-8b,
		// embed-small's P99 rise" read as a list left hanging.
		names := list(row.Models)
		if n := len(row.Models); n <= 3 {
			names = strings.Join(row.Models[:n-1], ", ") + " and " + row.Models[n-1]
		}
		s = fmt.Sprintf("; removing them from the request samples undoes %.0f%% of the P99 rise of the requests of %s taken together", 100*row.TailShare, names)
	}
	if len(row.Models) == 1 {
		for _, im := range a.Impact {
			// The impact's figures are its curve's quantile: quoted after
			// "P99 rise" only when they are a P99.
			if im.Model == row.Models[0] && im.BaselineP99Ms > 0 && im.DuringP99Ms > im.BaselineP99Ms && (im.Quantile == "" || im.Quantile == "P99") {
				s += fmt.Sprintf(" (%s → %s)", fmtMs(im.BaselineP99Ms), msAtLeast(im.DuringP99Ms, im.CeilingMs))
			}
		}
	}
	return s
}

// keyRow is the concentration row the samples step quotes: the one the top
// cause's evidence rests on (its strongest such item); else, among the rows
// that match the cause's target, the one explaining most of the tail; else
// the row explaining most of the tail.
func keyRow(a Analysis, top *Cause) (Concentration, string, bool) {
	find := func(dims map[string]string) (Concentration, bool) {
		for _, c := range a.Concentration {
			if sameDims(c.Dims, dims) {
				return c, true
			}
		}
		return Concentration{}, false
	}
	if top != nil {
		for _, e := range top.Evidence { // strongest first
			if len(e.Row) > 0 && e.Name != "spread_over_pool" {
				if c, ok := find(e.Row); ok {
					return c, e.Name, true
				}
			}
		}
	}
	rows := append([]Concentration(nil), a.Concentration...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].TailShare > rows[j].TailShare })
	if top != nil {
		for _, c := range rows {
			if matchesTarget(c, top.Target) {
				return c, "", true
			}
		}
	}
	if len(rows) > 0 && rows[0].TailShare > 0 {
		return rows[0], "", true
	}
	if len(a.Concentration) > 0 {
		return a.Concentration[0], "", true
	}
	return Concentration{}, "", false
}

// RowLead opens the sentence that quotes the samples step's row: what
// every surface says before the row's name, so they cannot disagree.
// explains says whether the row undoes any of the P99's rise (its
// TailShare): keyRow falls back to the table's first row when none does,
// which "the row explaining most of the tail" called it all the same
// (ingress demo, seed 2: a row of 7% of the slow requests, its tail "—").
func RowLead(fallback, explains bool) string {
	switch {
	case fallback && explains:
		return "No concentration row singles out what the top cause names; the row explaining most of the tail is"
	case fallback:
		return "No concentration row singles out what the top cause names, and none is measured to explain any of the tail; the table's first row is"
	}
	return "Slow requests concentrate on"
}

// matchesTarget reports whether a row names something the target names.
func matchesTarget(c Concentration, t Target) bool {
	for dim, v := range map[string]string{"model": t.Model, "version": t.Version, "tenant": t.Tenant, "replica": t.Replica, "node": t.Node} {
		if got, ok := c.value(dim); ok && v != "" && got == v {
			return true
		}
	}
	if r, ok := c.value("replica"); ok && containsStr(t.Replicas, r) {
		return true
	}
	if m, ok := c.value("model"); ok && containsStr(t.Models, m) {
		return true
	}
	return false
}

func sameDims(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func actionStep(a Analysis, top *Cause) ChecklistStep {
	st := ChecklistStep{Step: "action", Answer: "No action suggested until a cause is supported."}
	if top != nil && len(top.Actions) > 0 {
		st.Answer = fmt.Sprintf("Most likely %s (%.2f): %s.", strings.ReplaceAll(string(top.Category), "_", " "), top.Score, top.Actions[0])
		if len(top.Evidence) > 0 {
			st.Evidence = top.Evidence[0].Name
		}
	}
	return st
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
