package correlate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// The story: the facts every surface quotes (issue 17). Computed once
// here so the page header, the export, the API summary and a webhook say
// the same model, the same numbers, the same count of slow requests.

// impacts measures every affected model, in the scope's order (hardest
// hit first): baseline, peak, now, recovery, tenants and entries hit, SLO.
func (f *facts) impacts(order []string, windowTo time.Time) []Impact {
	slow := f.slowByModel()
	out := make([]Impact, 0, len(order))
	for _, m := range order {
		mi, _ := f.impact(m)
		im := Impact{Model: m, BaselineP99Ms: finite(mi.before), DuringP99Ms: finite(mi.during), Rise: finite(mi.ratio), Status: "ongoing", Quantile: mi.quantile}
		if c := f.latencyCurve(m); c != nil {
			f.peakAndRecovery(&im, c, mi.before, windowTo)
		}
		im.CeilingMs = f.ceiling(m)
		if st := f.ss.byModel[m]; st != nil {
			im.SlowRequests, im.SlowBasis = math.Round(st.slowDuringW), st.basis()
		}
		im.Tenants = slow.entries(m, "tenant")
		im.Entries = slow.entries(m, "entry")
		im.SLO = f.sloImpact(m)
		out = append(out, im)
	}
	return out
}

// latencyCurve is the model's P99 curve (P95 without one, or when its
// impact was measured on the P95), or one built from its samples.
func (f *facts) latencyCurve(m string) *Curve {
	roles := []Role{RoleLatencyP99, RoleLatencyP95}
	if mi, ok := f.impact(m); ok && mi.quantile == "P95" {
		// The impact was measured on the P95 (the P99 had no baseline):
		// its peak and recovery are read on the same curve.
		roles = []Role{RoleLatencyP95}
	} else if ok && mi.quantile == "mean" {
		roles = []Role{RoleLatencyMean}
	}
	for _, role := range roles {
		if c := f.cs.model(role, m, ""); c != nil && len(c.Points) > 0 {
			return c
		}
	}
	st := f.ss.byModel[m]
	if st == nil {
		return nil
	}
	// Every sample of the model from the baseline on, after the spike's
	// main part too: the phases end with it, and a curve cut there read
	// "ongoing at the end of the data" for a spike that had ended.
	var samples []Sample
	for i := range f.ss.all {
		if x := &f.ss.all[i]; x.Model == m && !x.Time.Before(f.ph.BeforeFrom) {
			samples = append(samples, *x)
		}
	}
	for _, c := range sampleLatencyCurves(samples, time.Minute) {
		if c.Role == RoleLatencyP99 {
			return &c
		}
	}
	return nil
}

// peakAndRecovery reads the peak after the onset (median of three points,
// so not one bad scrape), the last value, and whether the P99 came back
// near the baseline to stay: under baseline + 20 % of the rise for the
// last three points at least. A latency of 0 is no measurement (an
// exporter's quantile with no request completing, an outage): it is
// skipped, so a model that stopped serving does not read "recovered".
func (f *facts) peakAndRecovery(im *Impact, c *Curve, baseline float64, windowTo time.Time) {
	lo, hi := f.ph.Onset.UnixMilli(), windowTo.UnixMilli()
	var pts []Point
	for _, p := range c.Points {
		if p.T >= lo && p.T <= hi && !math.IsNaN(p.V) && p.V > 0 {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return
	}
	vals := make([]float64, len(pts))
	for i, p := range pts {
		vals[i] = p.V
	}
	sm := smooth3(vals)
	peak := 0
	for i, v := range sm {
		if v > sm[peak] {
			peak = i
		}
	}
	im.PeakP99Ms = finite(sm[peak])
	pt, nt := pts[peak].Time(), pts[len(pts)-1].Time()
	im.PeakAt, im.NowAt = &pt, &nt
	im.NowP99Ms = finite(pts[len(pts)-1].V)
	if math.IsNaN(baseline) || sm[peak] <= baseline {
		return
	}
	limit := baseline + 0.2*(sm[peak]-baseline)
	first := len(sm)
	for i := len(sm) - 1; i > peak && sm[i] <= limit; i-- {
		first = i
	}
	if len(sm)-first >= 3 {
		rt := pts[first].Time()
		im.Status, im.RecoveredAt = "recovered", &rt
	}
}

// sloImpact is what the incident cost a model against its latency SLO.
func (f *facts) sloImpact(m string) *SLOImpact {
	if f.slo == nil {
		return nil
	}
	slo, ok := f.slo(m)
	if !ok || slo <= 0 {
		return nil
	}
	out := &SLOImpact{SLOMs: slo}
	if c := f.latencyCurve(m); c != nil {
		// From the onset to the end of the data, not of the spike's main
		// part (at most 30 minutes): a 90-minute breach read "30 min over".
		// Each point counts its curve's usual spacing (the median gap), not
		// the first gap seen.
		var over int
		var gaps []float64
		for i, p := range c.Points {
			if i > 0 && p.T > c.Points[i-1].T {
				gaps = append(gaps, float64(p.T-c.Points[i-1].T))
			}
			if p.T >= f.ph.Onset.UnixMilli() && p.V > slo {
				over++
			}
		}
		if len(gaps) > 0 {
			out.MinutesOver = round3(float64(over) * median(gaps) / 60000)
		}
	}
	st := f.ss.byModel[m]
	if st == nil || st.duringW <= 0 {
		return out
	}
	var bad float64
	for _, i := range st.phase[1] {
		if f.ss.all[i].TotalMs > slo {
			bad += f.ss.all[i].SampleRate
		}
	}
	bad = math.Round(bad)
	burn := round3((bad / st.duringW) / 0.01)
	out.BadRequests, out.BurnRate = &bad, &burn
	if st.beforeSpanS > 0 && st.beforeW > 0 {
		month := st.beforeW / st.beforeSpanS * 30 * 24 * 3600
		burned := round3(bad / (0.01 * month))
		out.BudgetBurned = &burned
	}
	return out
}

// slowModelTally counts requests during the spike per model and
// tenant/entry: the slow ones, and all of them.
type slowModelTally map[string]map[string]map[string]*[2]float64 // model → dim → value → {slow, all} weight

func (f *facts) slowByModel() slowModelTally {
	t := slowModelTally{}
	for _, m := range f.affected {
		st := f.ss.byModel[m]
		if st == nil {
			continue
		}
		t[m] = map[string]map[string]*[2]float64{"tenant": {}, "entry": {}}
		// Samples without the dimension tally under "": they count in the
		// shares' base (a tenant's share is of all the model's requests),
		// never as an entry.
		add := func(dim, v string, slow bool, w float64) {
			c := t[m][dim][v]
			if c == nil {
				c = new([2]float64)
				t[m][dim][v] = c
			}
			if slow {
				c[0] += w
			}
			c[1] += w
		}
		for _, i := range st.phase[1] {
			s := &f.ss.all[i]
			add("tenant", s.Tenant, f.ss.slow[i], s.SampleRate)
			add("entry", s.Entry, f.ss.slow[i], s.SampleRate)
		}
	}
	return t
}

// entries lists the values holding at least 5 % of a model's slow
// requests, by share, at most five, each with its share of all the
// model's requests: a tenant sending most slow requests because it sends
// most requests is not a tenant problem.
func (t slowModelTally) entries(m, dim string) []ScopeEntry {
	vals := t[m][dim]
	var slow, all float64
	for _, c := range vals {
		slow += c[0]
		all += c[1]
	}
	if slow <= 0 {
		return nil
	}
	var out []ScopeEntry
	for _, v := range sortedKeys(vals) {
		if v == "" {
			continue
		}
		share, traffic := round3(vals[v][0]/slow), round3(vals[v][1]/all)
		if share >= 0.05 {
			out = append(out, ScopeEntry{Name: v, SlowShare: &share, TrafficShare: &traffic})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return *out[i].SlowShare > *out[j].SlowShare })
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// headline names the model hit hardest and what happened to it.
// noRise (facts.noRise) is why nothing rose when latency could not be
// judged.
func headline(impacts []Impact, top Cause, noRise string) Headline {
	if len(impacts) == 0 && noRise != "" {
		return Headline{Title: "Latency rise not judged", Summary: noRise}
	}
	if len(impacts) == 0 {
		return Headline{Title: "No latency rise found", Summary: "No model's latency rose clearly in this window."}
	}
	im := impacts[0]
	q := im.Quantile
	if q == "" {
		q = "P99"
	}
	h := Headline{Model: im.Model, Title: fmt.Sprintf("%s latency up on %s", q, im.Model)}
	if im.Rise > 0 {
		rise := ratioAtLeast("×"+trimZero(fmt.Sprintf("%.1f", im.Rise)), im.DuringP99Ms, im.CeilingMs)
		h.Title = fmt.Sprintf("%s latency up %s on %s", q, rise, im.Model)
	}
	// A figure at the curve's ceiling reads "≥", and the first says why.
	var b strings.Builder
	noted := false
	note := func() {
		if !noted {
			fmt.Fprintf(&b, " (%s)", CeilingNote(q))
			noted = true
		}
	}
	fmt.Fprintf(&b, "%s: %s %s → %s", im.Model, q, fmtMs(im.BaselineP99Ms), msAtLeast(im.DuringP99Ms, im.CeilingMs))
	if AtCeiling(im.DuringP99Ms, im.CeilingMs) {
		note()
	}
	if im.PeakAt != nil && im.PeakP99Ms > im.DuringP99Ms {
		fmt.Fprintf(&b, ", peak %s at %s UTC", msAtLeast(im.PeakP99Ms, im.CeilingMs), im.PeakAt.UTC().Format("15:04"))
		if AtCeiling(im.PeakP99Ms, im.CeilingMs) {
			note()
		}
	}
	if im.RecoveredAt != nil {
		fmt.Fprintf(&b, "; recovered at %s UTC", im.RecoveredAt.UTC().Format("15:04"))
	} else {
		b.WriteString("; ongoing at the end of the data")
	}
	if len(impacts) > 1 {
		if n := len(impacts) - 1; n == 1 {
			b.WriteString(" (1 more model slowed)")
		} else {
			fmt.Fprintf(&b, " (%d more models slowed)", n)
		}
	}
	b.WriteString(".")
	if top.Category != "" && top.Category != CatUnexplained {
		fmt.Fprintf(&b, " Most likely %s (%.2f): %s", strings.ReplaceAll(string(top.Category), "_", " "), top.Score, top.Summary)
	} else if top.Summary != "" {
		b.WriteString(" " + top.Summary)
	}
	h.Summary = b.String()
	return h
}

// reconcile says, when the concentration points at one replica or node
// but the top cause is capacity (or the reverse), why both are true.
func (f *facts) reconcile(top Cause) string {
	switch top.Category {
	case CatCapacity:
		models := keysOf(f.targetModels(top.Target))
		loc, ok := f.topLocalIn(models)
		if !ok || loc.Support < 0.5 {
			return ""
		}
		who := dimString(loc)
		rep, isRep := loc.value("replica")
		node, _ := loc.value("node")
		// Only what was measured argues for the pool: more traffic, the
		// other replicas slowing too, or this one taking more than its
		// share. Without any, there is nothing to reconcile with.
		var why []string
		if q := f.qpsRatioOf(models); !math.IsNaN(q) && q >= 1.15 {
			why = append(why, fmt.Sprintf("the pool's traffic rose ×%.1f", q))
		}
		var peers []float64
		for _, m := range models {
			for _, r := range f.reps[m] {
				if (isRep && r.replica != rep) || (!isRep && node != "" && r.node != node) {
					if !math.IsNaN(r.ratio) {
						peers = append(peers, r.ratio)
					}
				}
			}
		}
		if pr := median(peers); len(peers) > 0 && pr >= 1.2 {
			why = append(why, fmt.Sprintf("its peers' P99 rose ×%.1f too", pr))
		}
		saturates := false
		if isRep {
			for _, r := range f.reps[f.replicaModel(rep)] {
				if r.replica == rep && r.loadDuring >= 1.15 {
					why = append(why, fmt.Sprintf("it takes %s× the average replica's traffic", trimZero(fmt.Sprintf("%.1f", r.loadDuring))))
					saturates = true
				}
			}
		}
		if len(why) == 0 {
			return ""
		}
		verdict := "so this is capacity, not a bad replica."
		if saturates {
			verdict = "it saturates first, so this is capacity, not a bad replica."
		}
		return fmt.Sprintf("%.0f%% of the slow requests ran on %s, but %s: %s", loc.SelectionPct, who, strings.Join(why, " and "), verdict)
	case CatLocalReplica:
		q := f.affectedQPSRatio()
		if math.IsNaN(q) || q < 1.3 {
			return ""
		}
		where := "replica " + top.Target.Replica
		if outs, _ := f.outlierReplicas(); len(outs) > 1 {
			names := make([]string, len(outs))
			for i, r := range outs {
				names[i] = r.replica
			}
			sort.Strings(names)
			where = "replicas " + list(names)
		}
		if top.Target.Node != "" {
			where = "node " + top.Target.Node
		}
		return fmt.Sprintf("Traffic rose ×%.1f, but only the requests of %s slowed beyond their peers': the rest of the pool absorbed the extra load, so this is a local fault, not a capacity shortage.", q, where)
	}
	return ""
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
