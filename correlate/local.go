package correlate

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// localReplicaCause: one replica or one node is sick. Signature: a few
// replicas far above their peers at the same instant (cross-sectional z),
// the slow requests concentrated on them or their node, maybe a node fault
// or restart. It is argued against when those replicas simply got more
// traffic (routing) or are brand new (cold start).
func localReplicaCause(f *facts) Cause {
	b := newCause(CatLocalReplica)
	outliers, total := f.outlierReplicas()
	sick := f.sickNode()
	target, suspects := localTarget(sick, outliers)
	asSlow := 0 // the top outlier's peers about as slow as it is
	onePeer := false
	if len(outliers) > 0 {
		top := outliers[0]
		how := farAbove(top.crossZ)
		k, n := peersAsSlow(f.reps[top.model], top)
		if k > 0 {
			asSlow = k
			// Far above the peers' median is not above all of them.
			how = fmt.Sprintf("%d of its %d peers %s about as slow", k, n, verbFor(k, "is", "are"))
		}
		said := fmt.Sprintf("%s's P99 is %s while its peers sit at a median of %s (%s).", top.replica, msAtLeast(top.during, top.ceiling), fmtMs(top.peerMedian), how)
		if onePeer = n == 1 && k == 0; onePeer {
			// One peer has no median, nor "all of them" (a pool of two:
			// the capacity demo's embed-small).
			said = fmt.Sprintf("%s's P99 is %s against %s on its only peer (%s).", top.replica, msAtLeast(top.during, top.ceiling), fmtMs(top.peerMedian),
				ratioAtLeast(fmt.Sprintf("×%.1f", top.during/top.peerMedian), top.during, top.ceiling))
		}
		b.support("replica_outlier", top.crossZ, ramp(top.crossZ, 3, 10), 0.20, "%s", said).
			restsOn("", Curve{Role: RoleLatencyP99, Level: LevelReplica, Scope: Scope{Model: top.model, Version: top.version, Replica: top.replica, Node: top.node}}.Key(), nil)
		if sick == nil {
			f.supportWorsenedAlone(b, top)
		}
		// The other replicas slowed by most of the model's rise: the
		// outlier is the worst of a broad slowdown, which draining it
		// would not end.
		if peers := peersRise(f.reps[top.model]); peersCarry(peers, f.modelRatio(top.model)) {
			b.oppose("peers_slowed_too", peers, ramp(peers, peersSlowedRatio, 2.5), 0.4,
				"The other replicas of %s slowed too (median P99 ×%.2f), so %s alone does not explain the rise.", top.model, peers, top.replica)
		}
		if total > 0 && float64(len(outliers)) > 0.5*float64(total) {
			b.oppose("most_replicas_slow", float64(len(outliers))/float64(total), 1, 0.3, "%d of %d replicas stand out, which is not local.", len(outliers), total)
		}
	}
	if sick != nil {
		b.support("node_replicas_slowed", sick.excess, ramp(sick.excess, 1.15, 1.6), 0.25,
			"%s on node %s (%s) got slower than the same models' pods elsewhere (×%.2f their peers' change).",
			capitalize(kOfN(sick.worse, len(sick.replicas), "pod")), sick.node, plural(sick.models, "model"), sick.excess)
		if sick.models >= 2 {
			b.support("same_node", float64(sick.models), ramp(float64(sick.models), 1, 2), 0.10,
				"Pods of %d different models slowed down on the same node.", sick.models)
		}
	}
	if len(suspects) > 0 {
		f.opposeLocalAlternatives(b, suspects)
	}
	if loc, ok := f.topLocal(); ok {
		b.support("slow_requests_concentrated", loc.RiskRatio, concStrength(loc), 0.30,
			"%.0f%% of slow requests ran on %s (%.0f%% of the others): %s.", loc.SelectionPct, dimString(loc), loc.BaselinePct, likelier(loc.RiskRatio)).restsOn("", "", loc.Dims)
		if target.Node == "" && target.Replica == "" {
			target.Node, _ = loc.value("node")
			target.Replica, _ = loc.value("replica")
		}
	}
	if target.Node == "" && target.Replica == "" {
		// Only the models whose replicas are measured were looked at: a
		// sick replica of one without per-replica data cannot be seen.
		var seen, unseen []string
		for _, m := range f.affected {
			if f.peersKnown(m) {
				seen = append(seen, m)
			} else {
				unseen = append(unseen, m)
			}
		}
		if len(unseen) == 0 || len(seen) == 0 {
			b.oppose("no_outlier", 0, 1, 0.2, "No replica or node stands out from its peers.")
			return b.done("No single replica or node stands out.", target)
		}
		fr := float64(len(seen)) / float64(len(f.affected))
		b.oppose("no_outlier", 0, fr, 0.2, "No replica or node of %s stands out from its peers.", list(seen))
		return b.done(fmt.Sprintf("Among %s's replicas no single replica or node stands out; %s %s no per-replica data, so a sick replica there cannot be seen.",
			list(seen), list(unseen), verbFor(len(unseen), "has", "have")), target)
	}
	f.supportLocalFault(b, target)
	where, peers := "replica "+target.Replica, "its peers"
	if target.Node != "" {
		where = "node " + target.Node
	} else if asSlow > 0 && len(outliers) > 0 && target.Replica == outliers[0].replica {
		peers = "most of its peers" // some are about as slow
	} else if onePeer && len(outliers) > 0 && target.Replica == outliers[0].replica {
		peers = "its only peer"
	}
	return f.done(b, localSummary(b, where, peers), target)
}

// localSummary claims "much slower" only when a replica or node is
// measured slower than its peers (a concentration of slow requests alone
// is said as such), and names the counter-evidence that rules the fault
// out: a slow replica that is new or took more traffic is not sick.
// peers says whom they are compared with: "its peers", or "most of its
// peers" where some are about as slow.
func localSummary(b *causeBuilder, where, peers string) string {
	var sum string
	switch {
	case b.shown("replica_outlier") >= claimed || b.shown("node_replicas_slowed") >= claimed:
		sum = fmt.Sprintf("Requests served by %s are much slower than on %s", where, peers)
	case b.shown("slow_requests_concentrated") >= claimed:
		sum = fmt.Sprintf("Slow requests concentrate on %s, though it is not measured much slower than its peers", where)
	default:
		sum = fmt.Sprintf("%s stands out only a little from its peers", capitalize(where))
	}
	buts := []struct{ name, text string }{
		{"outliers_are_new", "the replicas that stand out are the new ones: a cold start, not a sick host"},
		{"outlier_got_more_traffic", "it took a growing share of the traffic: overloaded by routing, not sick"},
		{"most_replicas_slow", "most replicas stand out, which is not local"},
	}
	best, but := claimed, ""
	for _, c := range buts {
		if s := b.shownAgainst(c.name); s >= best {
			best, but = s, c.text
		}
	}
	if but != "" {
		return sum + ", but " + but + "."
	}
	return sum + "."
}

// outlierReplicas lists the affected models' replicas that stand out from
// their peers, most extreme first, and how many replicas were judged.
func (f *facts) outlierReplicas() (outliers []replicaImpact, total int) {
	for _, m := range f.affected {
		total += judgedReplicas(f.reps[m])
		for _, r := range f.reps[m] {
			if r.outlier {
				outliers = append(outliers, r)
			}
		}
	}
	sort.Slice(outliers, func(i, j int) bool { return outliers[i].crossZ > outliers[j].crossZ })
	return outliers, total
}

// localTarget names what a local fault points at: the sick node with its
// pods; else the node holding most of the outliers (at least two, and a
// majority); else the worst outlier. suspects are the replicas blamed.
func localTarget(sick *nodeImpact, outliers []replicaImpact) (target Target, suspects []replicaImpact) {
	switch {
	case sick != nil:
		target.Node = sick.node
		for _, r := range sick.replicas {
			target.Replicas = append(target.Replicas, r.replica)
		}
		suspects = sick.replicas
	case len(outliers) > 0:
		suspects = outliers
		perNode := map[string][]replicaImpact{}
		for _, r := range outliers {
			if r.node != "" {
				perNode[r.node] = append(perNode[r.node], r)
			}
		}
		bestNode, bestN := "", 0
		for n, rs := range perNode {
			if len(rs) > bestN || (len(rs) == bestN && n < bestNode) {
				bestNode, bestN = n, len(rs)
			}
		}
		if bestN >= 2 && bestN*2 > len(outliers) {
			target.Node = bestNode
			for _, r := range perNode[bestNode] {
				target.Replicas = append(target.Replicas, r.replica)
			}
		} else {
			target.Replica = outliers[0].replica
		}
	}
	sort.Strings(target.Replicas)
	return target, suspects
}

// opposeLocalAlternatives argues against a local fault when the suspects
// got more of the traffic (routing) or when being young, not the host,
// explains which replicas stand out (cold start).
func (f *facts) opposeLocalAlternatives(b *causeBuilder, suspects []replicaImpact) {
	var loadUp float64
	for _, r := range suspects {
		if v := safeRatio(r.loadDuring, r.loadBefore); v > loadUp {
			loadUp = v
		}
	}
	if loadUp > 1.3 {
		b.oppose("outlier_got_more_traffic", loadUp, ramp(loadUp, 1.3, 2), 0.45, "The slow replica's share of traffic grew ×%.1f: it is overloaded, not sick.", loadUp)
	}
	// Only if being young makes a replica more likely to stand out than
	// being warm.
	var youngN, youngOut, warmN, warmOut int
	for _, m := range f.affected {
		for _, r := range f.reps[m] {
			n, out := &warmN, &warmOut
			if r.young {
				n, out = &youngN, &youngOut
			}
			*n++
			if r.outlier {
				*out++
			}
		}
	}
	// With no warm replica to compare with, youth cannot be told from the
	// host: say nothing rather than blame youth.
	if youngOut > 0 && warmN > 0 {
		lift := float64(youngOut)/float64(youngN) - float64(warmOut)/float64(warmN)
		b.oppose("outliers_are_new", lift, ramp(lift, 0.1, 0.6), 0.45,
			"%d of %d new replicas stand out against %d of %d warm ones: youth, not the host, explains it.", youngOut, youngN, warmOut, warmN)
	}
}

// supportLocalFault adds a fault event on the suspect (node fault, replica
// restart) and the node's resource curve that moved most.
func (f *facts) supportLocalFault(b *causeBuilder, target Target) {
	ev, w := bestEvent(f.events, func(e AlignedEvent) bool {
		return (target.Node != "" && e.Node == target.Node) || (target.Replica != "" && e.Replica == target.Replica) || containsStr(target.Replicas, e.Replica)
	}, KindNodeFault, KindReplicaRestart)
	if ev != nil {
		b.support("fault_event", -ev.OffsetS, w/math.Max(ev.ScopeMatch, 0.01), 0.15, "%s on %s at %s, %s.", capitalize(strings.ReplaceAll(string(ev.Kind), "_", " ")), firstNonEmpty(ev.Node, ev.Replica), ev.Time.Format("15:04:05"), ago(*ev)).restsOn(ev.ID, "", nil)
	}
	if target.Node != "" {
		if d := f.nodeDeviation(target.Node); d.Key != "" && d.Score > 0 {
			b.support("node_resources", d.Deviation, strength(math.Abs(d.Deviation), 5), 0.10,
				"%s %s.", curveSubject(d), moved(d)).restsOn("", d.Key, nil)
		}
	}
}

// sickNode returns the node whose pods got worse than their peers
// elsewhere, clearly more than any other node's, or nil.
func (f *facts) sickNode() *nodeImpact {
	nodes := f.nodeImpacts()
	if len(nodes) == 0 {
		return nil
	}
	n := nodes[0]
	if len(n.replicas) < 2 || n.excess < 1.2 || 3*n.worse < 2*len(n.replicas) {
		return nil
	}
	if len(nodes) > 1 && n.excess < 1.1*nodes[1].excess {
		return nil
	}
	return &n
}

// nodeDeviation returns the node-level curve that moved most after the onset.
func (f *facts) nodeDeviation(node string) CurveDeviation {
	var best CurveDeviation
	for _, role := range []Role{RoleNodeCPU, RoleNodeMemory, RoleNodeNetwork} {
		for _, c := range f.cs.get(role, LevelNode, Scope{Node: node}, "") {
			d := deviation(c, f.ph)
			if !math.IsNaN(d.Deviation) && math.Abs(d.Deviation) > math.Abs(best.Deviation) {
				best = d
			}
		}
	}
	for _, role := range []Role{RoleGPUUtil, RoleGPUMemUsed} {
		for _, c := range f.cs.get(role, LevelReplica, Scope{Node: node}, "") {
			d := deviation(c, f.ph)
			if !math.IsNaN(d.Deviation) && math.Abs(d.Deviation) > math.Abs(best.Deviation) {
				best = d
			}
		}
	}
	return best
}

func containsStr(xs []string, v string) bool {
	for _, x := range xs {
		if x == v && v != "" {
			return true
		}
	}
	return false
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// supportWorsenedAlone compares the top outlier's own change with its
// peers' (a difference in differences): on a mixed fleet a replica on a
// faster GPU can double its P99 and still sit only a little above peers
// that were slower all along, so its z against them understates it. The
// node comparison (nodeImpacts) measures exactly this per node, but a
// sick node needs two pods; this is its reading for a replica alone on
// its node. Its load must not have grown.
func (f *facts) supportWorsenedAlone(b *causeBuilder, top replicaImpact) {
	if top.young || math.IsNaN(top.ratio) {
		return
	}
	// A replica that got more of the traffic worsened for that reason
	// (routing's case), not alone.
	if !math.IsNaN(top.loadBefore) && !math.IsNaN(top.loadDuring) && top.loadDuring > 1.2*top.loadBefore {
		return
	}
	for _, n := range f.nodeImpacts() {
		if n.node != top.node || len(n.replicas) != 1 || n.replicas[0].replica != top.replica {
			continue
		}
		if n.excess >= 1.15 {
			b.support("replica_worsened_alone", n.excess, ramp(n.excess, 1.15, 1.6), 0.20,
				"%s's P99 went ×%.2f since before the onset while its peers' went ×%.2f.", top.replica, top.ratio, top.ratio/n.excess)
		}
		return
	}
}

// peersAsSlow counts the replica's peers (the other replicas of its model
// measured during the spike) whose P99 is within 1.5× of its own, and how
// many peers there are: a replica far above its peers' median can still
// have peers as slow as it is.
func peersAsSlow(reps []replicaImpact, r replicaImpact) (k, n int) {
	for _, p := range reps {
		if p.replica == r.replica || math.IsNaN(p.during) {
			continue
		}
		n++
		if p.during*1.5 >= r.during {
			k++
		}
	}
	return k, n
}
