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
// limits, which the data does not hold, are "not known".
func TestPoolFacts(t *testing.T) {
	t.Parallel()
	onset := time.Date(2026, 3, 4, 7, 27, 45, 0, time.UTC)
	a := &correlate.Analysis{Onset: &onset,
		Replicas: []correlate.ReplicaComparison{{Replica: "emb-b", Model: "emb", Node: "gpu-2"}, {Replica: "emb-a", Model: "emb", Node: "gpu-1"},
			{Replica: "chat-a", Model: "chat"}},
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
}

// The samples step says when the row it names is only the one explaining
// most of the tail, not what the top cause is about (a release whose
// slow requests concentrate on a batch size), and plainly when the row is
// the top cause's.
func TestSamplesStepSaysWhoseRowItIs(t *testing.T) {
	t.Parallel()
	a := &correlate.Analysis{
		Causes:        []correlate.Cause{{Category: correlate.CatRelease, Target: correlate.Target{Model: "chat", Version: "v2"}}},
		Concentration: []correlate.Concentration{{Dims: map[string]string{"batch_size": "3-4"}, SelectionPct: 40, BaselinePct: 10}},
		Checklist:     []correlate.ChecklistStep{{Step: "samples", Answer: "x", Row: map[string]string{"batch_size": "3-4"}}},
	}
	steps := storyChecklist(a, State{Base: "/incidents/1"})
	if got := steps[0].Key; !strings.HasPrefix(got, "No row singles out the top cause; the row explaining the largest share of the tail is batch_size=3-4") {
		t.Errorf("fallback row: %q", got)
	}
	a.Concentration = append(a.Concentration, correlate.Concentration{Dims: map[string]string{"replica": "chat-1"},
		Also: map[string]string{"version": "v2"}, SelectionPct: 90, BaselinePct: 20})
	a.Checklist[0].Row = map[string]string{"replica": "chat-1"}
	if got := storyChecklist(a, State{Base: "/incidents/1"})[0].Key; !strings.HasPrefix(got, "Slow requests concentrate on replica=chat-1") {
		t.Errorf("the target's row: %q", got)
	}
}
