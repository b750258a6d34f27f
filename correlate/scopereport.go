package correlate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// scopeReport is the article's step 1: which part of the fleet carries the
// spike (models, then the replicas, nodes, versions and tenants inside
// them), each list ordered by impact with the impact given, and one
// sentence saying whether it is narrow or broad.
func (f *facts) scopeReport() ScopeReport {
	sr := scopeLists(f.affected, f.reps, f.conc)
	f.rankScope(&sr)
	summarizeScope(&sr, f.modelsWithData(), f.reps, f.conc)
	if why := f.noRise(); why != "" {
		sr.Summary = why
	}
	// A scoped incident's sentences are about its model; that others
	// slowed at the same time is a fact the reader needs (it points at
	// a shared cause), and "one model slowed down" must not deny it.
	if f.scope.Model != "" && len(f.slowed) > len(f.affected) {
		var others []string
		for _, m := range f.slowed {
			if !f.affectedSet[m] {
				others = append(others, m)
			}
		}
		if sr.Breadth == "model" {
			sr.Summary = strings.Replace(sr.Summary, "One model slowed down", "The incident's model slowed down", 1)
		}
		sr.Summary += fmt.Sprintf(" Outside the incident's scope, %s slowed down at the same time.", list(others))
	}
	return sr
}

// scopeLists collects the members of the scope: the affected models, the
// replicas standing out from their peers and their nodes, and the
// versions and tenants that hold at least 30 % of the slow requests.
func scopeLists(affected []string, reps map[string][]replicaImpact, conc []Concentration) ScopeReport {
	sr := ScopeReport{Models: append([]string{}, affected...)}
	nodes := map[string]bool{}
	for _, m := range sr.Models {
		for _, r := range reps[m] {
			if r.outlier {
				sr.Replicas = append(sr.Replicas, r.replica)
				if r.node != "" && !nodes[r.node] {
					nodes[r.node] = true
					sr.Nodes = append(sr.Nodes, r.node)
				}
			}
		}
	}
	for _, c := range conc {
		if len(c.Dims) != 1 || c.Support < 0.3 {
			continue
		}
		if v, ok := c.value("version"); ok {
			sr.Versions = appendUnique(sr.Versions, v)
		}
		if v, ok := c.value("tenant"); ok {
			sr.Tenants = appendUnique(sr.Tenants, v)
		}
	}
	return sr
}

// summarizeScope sets the breadth and the sentence. withData is how many
// models could be judged; reps gives the replica counts.
func summarizeScope(sr *ScopeReport, withData int, reps map[string][]replicaImpact, conc []Concentration) {
	totalReps, knownReps := 0, 0
	// broad: a model's other replicas slowed by most of its rise, so
	// its standing-out replicas do not make the spike narrow.
	broad, peersX := false, math.NaN()
	for i, m := range sr.Models {
		totalReps += judgedReplicas(reps[m])
		knownReps += len(reps[m])
		modelRatio := math.NaN()
		if i < len(sr.ModelImpact) && sr.ModelImpact[i].P99Ratio > 0 {
			modelRatio = sr.ModelImpact[i].P99Ratio
		}
		if p := peersRise(reps[m]); hasOutlier(reps[m]) && peersCarry(p, modelRatio) {
			broad, peersX = true, p
		}
	}
	named := make([]string, len(sr.Models))
	for i, m := range sr.Models {
		named[i] = m
		if i < len(sr.ModelImpact) && sr.ModelImpact[i].P99Ratio > 0 {
			q := sr.ModelImpact[i].Quantile
			if q == "" {
				q = "P99"
			}
			rise := fmt.Sprintf("×%.1f", sr.ModelImpact[i].P99Ratio)
			named[i] = fmt.Sprintf("%s (%s %s)", m, q, ratioAtLeast(rise, sr.ModelImpact[i].P99DuringMs, sr.ModelImpact[i].ceiling))
		}
	}
	switch {
	case len(sr.Models) == 0:
		sr.Breadth = "none"
		sr.Summary = "No model's latency rose clearly in this window."
	case len(sr.Replicas) > 0 && len(sr.Replicas)*3 <= totalReps && !broad:
		sr.Breadth = "replicas"
		where := list(sr.Replicas)
		if len(sr.Nodes) == 1 {
			where += " (node " + sr.Nodes[0] + ")"
		}
		carry := verbFor(len(sr.Replicas), "carries", "carry") // "1 of 3 replicas … carries"
		sr.Summary = fmt.Sprintf("Narrow: %d of %d replicas of %s %s the spike: %s.", len(sr.Replicas), totalReps, strings.Join(sr.Models, ", "), carry, where)
		if unseen := knownReps - totalReps; unseen > 0 {
			// Replicas known by other data (request rates) but with no
			// latency: neither slow nor fast, and not a pool of totalReps.
			sr.Summary = fmt.Sprintf("Narrow among the replicas with latency: %d of %d replicas of %s %s the spike: %s; %s more %s too little latency data to judge.",
				len(sr.Replicas), totalReps, strings.Join(sr.Models, ", "), carry, where, fmtCount(float64(unseen)), verbFor(unseen, "has", "have"))
		}
	case len(sr.Versions) == 1 && len(sr.Models) == 1 && versionCarries(sr):
		sr.Breadth = "version"
		sr.Summary = fmt.Sprintf("Narrow: %s version %s carries the spike.", named[0], sr.Versions[0])
	case len(sr.Models) >= 2 && float64(len(sr.Models)) >= 0.6*float64(withData):
		sr.Breadth = "fleet"
		sr.Summary = fmt.Sprintf("Broad: %d of %d models slowed down together, hardest hit first: %s.", len(sr.Models), withData, strings.Join(named, ", "))
	case len(sr.Models) == 1:
		sr.Breadth = "model"
		sr.Summary = fmt.Sprintf("One model slowed down: %s.", named[0])
		switch {
		case len(sr.Replicas) > 0 && broad:
			sr.Summary = fmt.Sprintf("One model slowed down across its replicas: %s; its other replicas' P99 rose ×%.1f too, worst on %s.", named[0], peersX, list(sr.Replicas))
		case len(sr.Replicas) > 0: // too many of its few replicas to call it narrow, but not all
			verb := "stand"
			if len(sr.Replicas) == 1 {
				verb = "stands"
			}
			sr.Summary = fmt.Sprintf("One model slowed down: %s; %s %s out among its %d replicas.", named[0], list(sr.Replicas), verb, judgedReplicas(reps[sr.Models[0]]))
		case judgedReplicas(reps[sr.Models[0]]) >= 2:
			sr.Summary = fmt.Sprintf("One model slowed down across its replicas: %s.", named[0])
		}
	default:
		sr.Breadth = "models"
		sr.Summary = fmt.Sprintf("Several models slowed down, hardest hit first: %s.", strings.Join(named, ", "))
	}
	// A version holding a large minority of the slow requests stands
	// out without carrying the spike: rolling it back leaves the rest.
	if s, ok := versionShare(sr); ok && sr.Breadth != "version" && sr.Breadth != "none" && s > 0 {
		clause := fmt.Sprintf(" Version %s is over-represented among the slow requests (%.0f%% of them).", sr.Versions[0], 100*s)
		// A version that is all of its model's requests in the spike (its
		// row the same as the model's) says nothing of the version: "Version
		// v3.1.2 is over-represented" read as a version problem in a
		// dependency's incident (downstream demo, seed 2), where rerank-base,
		// hit hardest, ran v3.1.2 alone.
		if m := versionsModel(conc, sr.Versions[0]); m != "" {
			clause = fmt.Sprintf(" %s's requests, all on version %s, are over-represented among the slow requests (%.0f%% of them).", m, sr.Versions[0], 100*s)
		}
		sr.Summary += clause
	}
	if len(sr.Tenants) == 1 && sr.Breadth != "none" {
		sr.Summary += " Slow requests concentrate on tenant " + sr.Tenants[0] + "."
	}
}

// versionsModel is the model whose requests a version's concentration
// row selects exactly (the row's Also), "" when none.
func versionsModel(conc []Concentration, version string) string {
	for _, c := range conc {
		if v, ok := c.value("version"); ok && v == version && len(c.Dims) == 1 {
			return c.Also["model"]
		}
	}
	return ""
}

// versionShare is the one listed version's share of the slow requests;
// ok is false when there is not one version or its share is unknown.
func versionShare(sr *ScopeReport) (float64, bool) {
	if len(sr.Versions) != 1 || len(sr.VersionImpact) == 0 || sr.VersionImpact[0].SlowShare == nil {
		return 0, false
	}
	return *sr.VersionImpact[0].SlowShare, true
}

// versionCarries: the one listed version holds most of the slow
// requests (or its share is not measured; it was listed on its
// concentration).
func versionCarries(sr *ScopeReport) bool {
	s, ok := versionShare(sr)
	return !ok || s >= 0.5
}

// hasOutlier says whether any replica stands out from its peers.
func hasOutlier(reps []replicaImpact) bool {
	for _, r := range reps {
		if r.outlier {
			return true
		}
	}
	return false
}

// rankScope orders every list of the scope by impact — the P99 ratio, then
// the share of slow requests — and records the impact of each member.
func (f *facts) rankScope(sr *ScopeReport) {
	slow := f.slowByDim()
	sr.ModelImpact = f.rankMembers(&sr.Models, func(m string) ScopeEntry {
		e := ScopeEntry{Name: m}
		if mi, ok := f.impact(m); ok {
			e.P99BeforeMs, e.P99DuringMs, e.P99Ratio = finite(mi.before), finite(mi.during), finite(mi.ratio)
			e.ceiling = f.ceiling(m)
			if mi.quantile != "P99" {
				e.Quantile = mi.quantile
			}
		}
		e.SlowShare = slow.share("model", m)
		return e
	})
	byRep := map[string]replicaImpact{}
	for _, m := range sr.Models {
		for _, r := range f.reps[m] {
			byRep[r.replica] = r
		}
	}
	sr.ReplicaImpact = f.rankMembers(&sr.Replicas, func(name string) ScopeEntry {
		r := byRep[name]
		e := ScopeEntry{Name: name, Model: r.model, P99BeforeMs: finite(r.before), P99DuringMs: finite(r.during), P99Ratio: finite(r.ratio)}
		if math.IsNaN(r.ratio) {
			// A new replica has no before: its P99 against its peers'.
			e.P99Ratio = finite(safeRatio(r.during, r.peerMedian))
		}
		e.SlowShare = slow.share("replica", name)
		return e
	})
	sr.NodeImpact = f.rankMembers(&sr.Nodes, func(node string) ScopeEntry {
		var before, during []float64
		for _, r := range byRep {
			if r.node == node && r.outlier {
				before, during = append(before, r.before), append(during, r.during)
			}
		}
		e := ScopeEntry{Name: node, P99BeforeMs: finite(median(before)), P99DuringMs: finite(median(during))}
		e.P99Ratio = finite(safeRatio(median(during), median(before)))
		e.SlowShare = slow.share("node", node)
		return e
	})
	sr.VersionImpact = f.rankMembers(&sr.Versions, func(v string) ScopeEntry {
		e := slow.entry("version", v)
		for _, m := range sr.Models {
			for _, vs := range f.versionStats(m) {
				if vs.version == v {
					e.Model = m
				}
			}
		}
		return e
	})
	sr.TenantImpact = f.rankMembers(&sr.Tenants, func(t string) ScopeEntry { return slow.entry("tenant", t) })
}

// rankMembers measures every member of a list, sorts the list by impact in
// place and returns the entries in the same order (nil for an empty list).
func (f *facts) rankMembers(names *[]string, measure func(string) ScopeEntry) []ScopeEntry {
	if len(*names) == 0 {
		return nil
	}
	out := make([]ScopeEntry, len(*names))
	for i, n := range *names {
		out[i] = measure(n)
	}
	slices.SortStableFunc(out, func(a, b ScopeEntry) int {
		if c := cmp.Compare(b.P99Ratio, a.P99Ratio); c != 0 {
			return c
		}
		return cmp.Compare(shareOf(b), shareOf(a))
	})
	for i := range out {
		(*names)[i] = out[i].Name
	}
	return out
}

func shareOf(e ScopeEntry) float64 {
	if e.SlowShare == nil {
		return -1
	}
	return *e.SlowShare
}

// slowTally counts, per dimension value, the weighted slow requests of the
// affected models during the spike; P99s of single values are read on
// demand (the lists hold a handful of values, the samples are many).
type slowTally struct {
	f     *facts
	total float64
	slow  map[string]map[string]float64
}

var tallyDims = map[string]func(*Sample) string{
	"model":   func(s *Sample) string { return s.Model },
	"version": func(s *Sample) string { return s.Version },
	"replica": func(s *Sample) string { return s.Replica },
	"node":    func(s *Sample) string { return s.Node },
	"tenant":  func(s *Sample) string { return s.Tenant },
}

// slowByDim tallies the affected models' slow samples by model, version,
// replica, node and tenant.
func (f *facts) slowByDim() *slowTally {
	t := &slowTally{f: f, slow: map[string]map[string]float64{}}
	for d := range tallyDims {
		t.slow[d] = map[string]float64{}
	}
	for _, m := range f.affected {
		st := f.ss.byModel[m]
		if st == nil {
			continue
		}
		for _, i := range st.phase[1] {
			if !f.ss.slow[i] {
				continue
			}
			s := &f.ss.all[i]
			t.total += s.SampleRate
			for d, get := range tallyDims {
				if v := get(s); v != "" {
					t.slow[d][v] += s.SampleRate
				}
			}
		}
	}
	return t
}

// share is the value's share of the slow requests, nil without samples.
func (t *slowTally) share(dim, v string) *float64 {
	if t.total <= 0 {
		return nil
	}
	s := round3(t.slow[dim][v] / t.total)
	return &s
}

// entry is a value's impact from samples alone: its P99 before and during
// and its share of the slow requests.
func (t *slowTally) entry(dim, v string) ScopeEntry {
	e := ScopeEntry{Name: v, SlowShare: t.share(dim, v)}
	get := tallyDims[dim]
	var lat [2][]weighted
	for _, m := range t.f.affected {
		st := t.f.ss.byModel[m]
		if st == nil {
			continue
		}
		for phase, idx := range st.phase {
			for _, i := range idx {
				if s := &t.f.ss.all[i]; get(s) == v {
					lat[phase] = append(lat[phase], weighted{s.TotalMs, s.SampleRate})
				}
			}
		}
	}
	if len(lat[1]) > 0 {
		b, d := weightedQuantile(lat[0], 0.99), weightedQuantile(lat[1], 0.99)
		e.P99BeforeMs, e.P99DuringMs, e.P99Ratio = finite(b), finite(d), finite(safeRatio(d, b))
	}
	return e
}

func appendUnique(xs []string, v string) []string {
	if slices.Contains(xs, v) {
		return xs
	}
	return append(xs, v)
}
