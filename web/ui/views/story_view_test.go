package views

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// The capacity story says how many replicas serve the model and what
// scaled it, from the analysis' replicas and events; the autoscaler's
// limits, which the data does not hold, are "not known". A replica
// measured only before the onset (emb-old, a rollout's stopped pod) did
// not serve during the spike: the release demo's vision-detect showed "6
// replicas served" of the 3 that did.
func TestPoolFacts(t *testing.T) {
	t.Parallel()
	onset := time.Date(2026, 3, 4, 7, 27, 45, 0, time.UTC)
	a := &correlate.Analysis{Onset: &onset,
		Replicas: []correlate.ReplicaComparison{{Replica: "emb-b", Model: "emb", Node: "gpu-2", P99DuringMs: 300}, {Replica: "emb-a", Model: "emb", Node: "gpu-1", P99DuringMs: 250},
			{Replica: "emb-old", Model: "emb", Node: "gpu-3", P99BeforeMs: 120}, {Replica: "chat-a", Model: "chat", P99DuringMs: 90}},
		Events: []correlate.AlignedEvent{
			{Event: correlate.Event{ID: "s1", Kind: correlate.KindScaleUp, Time: onset.Add(6 * time.Minute), Scope: correlate.Scope{Model: "emb"},
				Source: kubeEventSource, Summary: "scale up emb 2 → 4 replicas (HPA desired replicas)",
				Attrs: map[string]any{"from": 2, "to": 4, "via": "HPA desired replicas"}}},
			{Event: correlate.Event{ID: "s2", Kind: correlate.KindScaleUp, Time: onset, Scope: correlate.Scope{Model: "chat"}, Source: kubeEventSource}},
		}}
	// Through JSON, as the page reads a stored analysis (numbers become float64).
	raw, _ := json.Marshal(a)
	var stored correlate.Analysis
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	capacity := correlate.Cause{Category: correlate.CatCapacity, Target: correlate.Target{Model: "emb"}}
	got := PoolFacts(&stored, capacity)
	if len(got) != 1 {
		t.Fatalf("pool facts %+v", got)
	}
	want := PoolFact{Model: "emb", Replicas: "2 replicas served during the spike: emb-a on gpu-1, emb-b on gpu-2",
		Scaling: "2 → 4 replicas (HPA desired replicas) at 07:33 UTC, 6 min after the onset", Limits: poolLimits}
	if got[0] != want {
		t.Errorf("capacity pool\n got %+v\nwant %+v", got[0], want)
	}
	// Watched, but nothing scaled this model; a model without per-replica data.
	got = PoolFacts(&stored, correlate.Cause{Category: correlate.CatColdStart, Target: correlate.Target{Models: []string{"rank"}}})
	if len(got) != 1 || !strings.HasPrefix(got[0].Scaling, "kube-state-metrics shows no change of rank's desired replicas") ||
		!strings.HasPrefix(got[0].Replicas, "not known") || !strings.HasPrefix(got[0].Limits, "not known") {
		t.Errorf("unscaled pool %+v", got)
	}
	// No kube-state-metrics events at all: scaling is not known either.
	stored.Events = stored.Events[:0]
	if got := PoolFacts(&stored, capacity); got[0].Scaling != "not known: no kube-state-metrics events in the data" {
		t.Errorf("unwatched pool %+v", got)
	}
	if got := PoolFacts(&stored, correlate.Cause{Category: correlate.CatLocalReplica, Target: correlate.Target{Model: "emb"}}); got != nil {
		t.Errorf("a local-replica cause has pool facts: %+v", got)
	}
	// Once per analysis, under the higher ranked cause of the two.
	cold := correlate.Cause{Category: correlate.CatColdStart, Target: correlate.Target{Model: "emb"}}
	stored.Causes = []correlate.Cause{capacity, cold}
	if PoolFacts(&stored, capacity) == nil || PoolFacts(&stored, cold) != nil {
		t.Error("the pool is not shown once, under the capacity cause ranked above cold start")
	}
}

// The autoscaler's limits come from the latest scale event carrying them
// (the pull's attributes); at its max since the first event of the run at
// it, else below it; without them, "not known".
func TestPoolLimits(t *testing.T) {
	t.Parallel()
	onset := time.Date(2026, 3, 4, 7, 27, 45, 0, time.UTC)
	scale := func(id string, at time.Duration, from, to int, limits bool) correlate.AlignedEvent {
		e := correlate.Event{ID: id, Kind: correlate.KindScaleUp, Time: onset.Add(at), Scope: correlate.Scope{Model: "emb"}, Source: kubeEventSource,
			Attrs: map[string]any{"from": from, "to": to, "via": "HPA desired replicas"}}
		if to < from {
			e.Kind = correlate.KindScaleDown
		}
		if limits {
			e.Attrs["hpa_min_replicas"], e.Attrs["hpa_max_replicas"] = 3, 6
		}
		return correlate.AlignedEvent{Event: e}
	}
	for _, c := range []struct {
		name   string
		events []correlate.AlignedEvent
		want   string
	}{
		{"at max", []correlate.AlignedEvent{scale("b", 4*time.Minute, 5, 6, true), scale("a", time.Minute, 3, 5, true)},
			"autoscaler 3–6 replicas; at its max since 07:31 UTC"},
		{"below max", []correlate.AlignedEvent{scale("a", time.Minute, 3, 6, true), scale("b", 9*time.Minute, 6, 4, true)},
			"autoscaler 3–6 replicas; below its max (4 desired since 07:36 UTC)"},
		{"latest scale without limits", []correlate.AlignedEvent{scale("b", 9*time.Minute, 6, 4, false), scale("a", time.Minute, 3, 6, true)},
			"autoscaler 3–6 replicas; below its max (4 desired since 07:36 UTC)"},
		{"no limits", []correlate.AlignedEvent{scale("a", time.Minute, 3, 6, false)}, poolLimits},
		{"no scale event", nil, poolLimits},
	} {
		checkLimits(t, c.name, &correlate.Analysis{Onset: &onset, Events: c.events}, c.want)
	}
}

// With the pool-state curves (kube-state-metrics' desired replicas and
// autoscaler limits) the analysis' pool says where the pool stands even
// when nothing scaled it: the autoscaler below its max and not reacting
// is what the capacity action turns on. It wins over the scale events.
func TestPoolLimitsFromPoolState(t *testing.T) {
	t.Parallel()
	onset := time.Date(2026, 3, 4, 7, 27, 45, 0, time.UTC)
	through := onset.Add(40 * time.Minute)
	atMax := onset.Add(4 * time.Minute)
	for _, c := range []struct {
		name string
		pool correlate.Pool
		want string
	}{
		{"did not react", correlate.Pool{Model: "emb", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MinReplicas: 2, MaxReplicas: 4, Through: through},
			"autoscaler 2–4 replicas; below its max (2 desired since before the onset: it did not scale up during the spike)"},
		{"scaled, below max", correlate.Pool{Model: "emb", DesiredAtOnset: 2, Desired: 3, DesiredPeak: 3, MinReplicas: 2, MaxReplicas: 4, Through: through},
			"autoscaler 2–4 replicas; below its max (desired replicas 2 at the onset, 3 by 08:07 UTC)"},
		{"at max", correlate.Pool{Model: "emb", DesiredAtOnset: 3, Desired: 6, DesiredPeak: 6, MinReplicas: 3, MaxReplicas: 6, Through: through, AtMaxSince: &atMax},
			"autoscaler 3–6 replicas; at its max since 07:31 UTC: it cannot add replicas"},
		{"too early", correlate.Pool{Model: "emb", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MinReplicas: 2, MaxReplicas: 4, Through: onset.Add(time.Minute)},
			"autoscaler 2–4 replicas; below its max (2 desired since before the onset, 07:28 UTC (too early to say whether it will scale up))"},
		{"no autoscaler", correlate.Pool{Model: "emb", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, Through: through},
			"no autoscaler limits in the data (kube-state-metrics' kube_horizontalpodautoscaler_spec_max_replicas); 2 desired since before the onset: it did not scale up during the spike"},
	} {
		a := &correlate.Analysis{Onset: &onset, Pools: []correlate.Pool{c.pool}, Events: []correlate.AlignedEvent{{Event: correlate.Event{
			ID: "s", Kind: correlate.KindScaleUp, Time: onset, Scope: correlate.Scope{Model: "emb"}, Source: kubeEventSource,
			Attrs: map[string]any{"from": 1, "to": 2, "hpa_min_replicas": 1, "hpa_max_replicas": 9}}}}}
		checkLimits(t, c.name, a, c.want)
	}
}

// A scale-up 30 s before the onset (a cold start's) left the desired
// replicas where they were at the onset: the limits line said "5 desired
// since before the onset: it did not scale up" under the scaling line's
// "3 → 5 replicas … 30 s before the onset".
func TestPoolLimitsAfterScaleUpBeforeOnset(t *testing.T) {
	t.Parallel()
	onset := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	a := &correlate.Analysis{Onset: &onset,
		Pools: []correlate.Pool{{Model: "emb", DesiredAtOnset: 5, Desired: 5, DesiredPeak: 5, MinReplicas: 3, MaxReplicas: 6, Through: onset.Add(time.Hour)}},
		Events: []correlate.AlignedEvent{{Event: correlate.Event{ID: "s", Kind: correlate.KindScaleUp, Time: onset.Add(-30 * time.Second),
			Scope: correlate.Scope{Model: "emb"}, Source: kubeEventSource, Attrs: map[string]any{"from": 3, "to": 5, "via": "HPA desired replicas"}}}}}
	got := PoolFacts(a, correlate.Cause{Category: correlate.CatColdStart, Target: correlate.Target{Model: "emb"}})
	if len(got) != 1 || !strings.Contains(got[0].Scaling, "3 → 5 replicas") {
		t.Fatalf("pool facts %+v", got)
	}
	if want := "autoscaler 3–6 replicas; below its max (5 desired since before the onset: it did not scale up during the spike)"; got[0].Limits != want {
		t.Errorf("limits %q beside scaling %q, want %q", got[0].Limits, got[0].Scaling, want)
	}
}

// checkLimits reads the capacity cause's pool limits of model emb from a
// as the page does, from the stored (JSON round-tripped) analysis.
func checkLimits(t *testing.T, name string, a *correlate.Analysis, want string) {
	t.Helper()
	raw, _ := json.Marshal(a)
	var stored correlate.Analysis
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	got := PoolFacts(&stored, correlate.Cause{Category: correlate.CatCapacity, Target: correlate.Target{Model: "emb"}})
	if len(got) != 1 || got[0].Limits != want {
		t.Errorf("%s: limits %+v, want %q", name, got, want)
	}
}

// The samples step says when the row it names is only the one explaining
// most of the tail, not what the top cause is about (a release whose
// slow requests concentrate on a batch size), and plainly when the row is
// the top cause's. The analysis decides (its step's Fallback); the page
// repeats that decision in the analysis' words, as the export does.
func TestSamplesStepSaysWhoseRowItIs(t *testing.T) {
	t.Parallel()
	a := &correlate.Analysis{
		Causes:        []correlate.Cause{{Category: correlate.CatRelease, Target: correlate.Target{Model: "chat", Version: "v2"}}},
		Concentration: []correlate.Concentration{{Dims: map[string]string{"batch_size": "3-4"}, SelectionPct: 40, BaselinePct: 10}},
		Checklist:     []correlate.ChecklistStep{{Step: "samples", Answer: "x", Row: map[string]string{"batch_size": "3-4"}, Fallback: true}},
	}
	steps := storyChecklist(a, State{Base: "/incidents/1"})
	if got := steps[0].Key; !strings.HasPrefix(got, correlate.RowLead(true, false)+" batch_size=3-4") {
		t.Errorf("fallback row: %q", got)
	}
	a.Concentration = append(a.Concentration, correlate.Concentration{Dims: map[string]string{"replica": "chat-1"},
		Also: map[string]string{"version": "v2"}, SelectionPct: 90, BaselinePct: 20})
	a.Checklist[0].Row, a.Checklist[0].Fallback = map[string]string{"replica": "chat-1"}, false
	if got := storyChecklist(a, State{Base: "/incidents/1"})[0].Key; !strings.HasPrefix(got, "Slow requests concentrate on replica=chat-1 ≡ version=v2 (90%") {
		t.Errorf("the target's row: %q", got)
	}
}

// The GPU lane of an incident shows its model's replicas, the GPUs the
// capacity evidence quotes, not each node's average over all its GPUs
// (which read "max 50 %" next to evidence saying 94 %); without a story
// model it stays per node.
func TestGPULaneFollowsTheIncidentModel(t *testing.T) {
	t.Parallel()
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	curves := []correlate.Curve{
		curve(correlate.RoleGPUUtil, correlate.LevelNode, correlate.Scope{Node: "n1"}, "", flat(47)),
		curve(correlate.RoleGPUUtil, correlate.LevelNode, correlate.Scope{Node: "n2"}, "", flat(30)),
		curve(correlate.RoleGPUUtil, correlate.LevelReplica, correlate.Scope{Model: "emb", Replica: "emb-1", Node: "n1"}, "", flat(94)),
		curve(correlate.RoleGPUUtil, correlate.LevelReplica, correlate.Scope{Model: "emb", Replica: "emb-2", Node: "n2"}, "", flat(60)),
		curve(correlate.RoleGPUUtil, correlate.LevelReplica, correlate.Scope{Model: "chat", Replica: "chat-1", Node: "n2"}, "", flat(20)),
	}
	gpuLane := func(in TimelineInput) Lane {
		for _, l := range BuildTimeline(in).Lanes {
			if l.ID == "gpu" {
				return l
			}
		}
		t.Fatal("no GPU lane")
		return Lane{}
	}
	in := TimelineInput{From: t0, To: t0.Add(time.Hour), Step: 30 * time.Second, Curves: curves, StageModel: "emb", State: State{Base: "/i"}}
	l := gpuLane(in)
	var names []string
	for _, it := range l.Legend {
		names = append(names, it.Label)
	}
	if l.YMax != "scale 0–100 %, per replica of emb" || strings.Join(names, ",") != "emb-1,emb-2" {
		t.Errorf("incident GPU lane: %q, legend %v", l.YMax, names)
	}
	in.StageModel = ""
	if l := gpuLane(in); l.YMax != "scale 0–50 %, per node" {
		t.Errorf("explorer GPU lane: %q", l.YMax)
	}
}

// An open incident whose analysed window ended a while ago says when,
// rather than "ongoing" as if it were now (issue 17, item 7); the window's
// end is not the last point stored, so it does not claim the data stops.
func TestImpactSaysWhenTheDataStops(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	last := time.Date(2026, 3, 4, 8, 30, 0, 0, time.UTC)
	a := &correlate.Analysis{Impact: []correlate.Impact{{Model: "chat", BaselineP99Ms: 100, PeakP99Ms: 900, NowAt: &last, Status: "ongoing"}}}
	if got := impactViews(a, State{Base: "/i"}, now)[0].StatusText; got != "ongoing at the end of the analysed data (08:30 UTC, 1 h ago)" {
		t.Errorf("stale data: %q", got)
	}
	if got := impactViews(a, State{Base: "/i"}, last.Add(time.Minute))[0].StatusText; got != "ongoing at the end of the data" {
		t.Errorf("fresh data: %q", got)
	}
	if got := impactViews(a, State{Base: "/i"}, time.Time{})[0].StatusText; got != "ongoing at the end of the data" {
		t.Errorf("a resolved incident (no clock): %q", got)
	}
}

// The timeline's key is the onset and the evidence it rests on, once,
// also when the evidence opens with a lower-case replica name (the onset
// sentence then runs on into it: seen on a local-replica demo, where the
// card said the replica's P99 twice).
func TestTimelineKeyQuotesItsEvidenceOnce(t *testing.T) {
	t.Parallel()
	outlier := "emb-7f's P99 is 243 ms while its peers sit at a median of 102 ms (far above all of them)."
	a := &correlate.Analysis{
		Causes: []correlate.Cause{{Category: correlate.CatLocalReplica, Evidence: []correlate.Evidence{{Name: "replica_outlier", Summary: outlier, Curve: "c"}}}},
		Checklist: []correlate.ChecklistStep{{Step: "timeline", Curve: "c", Evidence: "replica_outlier",
			Answer: "Latency rose at 23:29:30 UTC. " + outlier + " Deploy (rollout chat v2) 12m30s before the onset."}},
	}
	got := storyChecklist(a, State{Base: "/incidents/1"})[0].Key
	if want := "Latency rose at 23:29:30 UTC. " + outlier; got != want {
		t.Errorf("timeline key\n got %q\nwant %q", got, want)
	}
	// Evidence that starts a sentence of its own is still added.
	a.Causes[0].Evidence[0].Summary = "Emb-7f's P99 rose."
	a.Checklist[0].Answer = "Latency rose at 23:29:30 UTC. Emb-7f's P99 rose."
	if got := storyChecklist(a, State{Base: "/incidents/1"})[0].Key; got != "Latency rose at 23:29:30 UTC. Emb-7f's P99 rose." {
		t.Errorf("timeline key %q", got)
	}
}
