package correlate

import (
	"testing"
	"time"
)

// Two of four models slow down because their downstream call does, with
// the gateway, auth and route times measured and flat: ingress is argued
// against by where the growth is, not left at the score its generic
// evidence (nothing local, several models) would give it.
func TestIngressIsArguedAgainstByGrowthBehindTheFront(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b", "c", "d"} {
		during := 100.0
		if m == "a" || m == "b" {
			during = 400
		}
		x.p99(m, 100, during)
		x.stagedRun(10, Scope{Model: m, Version: "v1"}, during, StageDownstream)
	}
	c := causeOf(t, x.analyze(), CatIngress)
	if !names(c.CounterEvidence)["growth_behind_the_front"] || c.Score > 0.1 {
		t.Errorf("ingress scored %.2f, counter-evidence %+v; want growth_behind_the_front and ≤ 0.1", c.Score, c.CounterEvidence)
	}
}

// "No replica or node stands out" tells fleet-wide causes from local ones,
// not one fleet-wide cause from another: a downstream cause whose stage did
// not grow gets nothing from it (it alone kept such a cause at 0.10).
func TestNotLocalOnlyCorroborates(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b"} {
		x.p99(m, 100, 400)
		x.stagedRun(10, Scope{Model: m, Version: "v1", Replica: m + "-1"}, 400, StageExec)
		x.sampleRun(10, Scope{Model: m, Version: "v1", Replica: m + "-2"}, 100, 400, nil)
	}
	if c := causeOf(t, x.analyze(), CatDownstream); names(c.Evidence)["not_local"] {
		t.Errorf("downstream without growth lists not_local: %+v (score %.2f)", c.Evidence, c.Score)
	}
}

// Load piled onto one replica makes its batches bigger and its queue
// longer: with the batch wait measured and flat, batching is argued
// against by where the growth is, and its summary says the batches grew,
// not that "batching changed" (no config change says so).
func TestBatchingIsArguedAgainstByGrowthInTheQueue(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleBatchSize, LevelModel, Scope{Model: "m"}, 1.2, 2.5)
	x.stagedRun(10, Scope{Model: "m", Version: "v1"}, 400, StageQueue)
	c := causeOf(t, x.analyze(), CatBatching)
	if !names(c.CounterEvidence)["growth_elsewhere"] || c.Score > 0.1 {
		t.Errorf("batching scored %.2f, counter-evidence %+v; want growth_elsewhere and ≤ 0.1", c.Score, c.CounterEvidence)
	}
	if want := "m's batches grew, but waiting for batches explains none of the tail's growth."; c.Summary != want {
		t.Errorf("summary %q, want %q", c.Summary, want)
	}
}

// A batch size far outside its usual range on a calm curve but only a
// few percent bigger (1.2 to 1.3 requests, a release demo) is not
// "batches grew".
func TestBiggerBatchesMustBeBigger(t *testing.T) {
	for _, tc := range []struct {
		during float64
		want   bool
	}{{1.3, false}, {2.0, true}} {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleBatchSize, LevelModel, Scope{Model: "m"}, 1.2, tc.during)
		x.stagedRun(10, Scope{Model: "m", Version: "v1"}, 400, StageExec)
		if got := names(causeOf(t, x.analyze(), CatBatching).Evidence)["bigger_batches"]; got != tc.want {
			t.Errorf("batches 1.2 → %.1f: bigger_batches listed %v, want %v", tc.during, got, tc.want)
		}
	}
}

// Batches that grew while the batch wait stayed flat are more requests
// per window, not a longer window: batching is argued against, unless a
// batching change came before, or the wait grew.
func TestBiggerBatchesWithoutWaitingAreLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stage   Stage
		change  bool
		counter bool
	}{
		{"exec grew, no change", StageExec, false, true},
		{"exec grew after a batching change", StageExec, true, false},
		{"the wait grew", StageBatchWait, false, false},
	} {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleBatchSize, LevelModel, Scope{Model: "m"}, 1.2, 2.5)
		x.stagedRun(10, Scope{Model: "m", Version: "v1"}, 400, tc.stage)
		if tc.change {
			x.events = append(x.events, Event{ID: "e1", Kind: KindConfigChange, Time: x.onset.Add(-3 * time.Minute),
				Scope: Scope{Model: "m"}, Summary: "max_batch_size 4 -> 16"})
		}
		c := causeOf(t, x.analyze(), CatBatching)
		if got := names(c.CounterEvidence)["batches_fill_without_waiting"]; got != tc.counter {
			t.Errorf("%s: batches_fill_without_waiting listed %v, want %v (score %.2f, %+v)", tc.name, got, tc.counter, c.Score, c.CounterEvidence)
		}
		if tc.counter && c.Score > 0.1 {
			t.Errorf("%s: batching scored %.2f, want ≤ 0.1", tc.name, c.Score)
		}
	}
}

// Flat traffic argues against capacity continuously from ×1.1 down: a
// queue that grew at ×1.06 (a sick node's replicas queueing) is not
// demand outgrowing the pool, no more than at ×1.04.
func TestCapacityArguedAgainstByNearlyFlatTraffic(t *testing.T) {
	for _, tc := range []struct {
		qps  float64
		want bool
	}{{104, true}, {106, true}, {112, false}} {
		x := newFixture()
		x.p99("m", 100, 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 100, tc.qps)
		x.stagedRun(10, Scope{Model: "m", Version: "v1"}, 400, StageQueue)
		c := causeOf(t, x.analyze(), CatCapacity)
		if got := names(c.CounterEvidence)["traffic_flat"]; got != tc.want {
			t.Errorf("traffic ×%.2f: traffic_flat listed %v, want %v (%+v)", tc.qps/100, got, tc.want, c.CounterEvidence)
		}
	}
}
