package correlate

import (
	"testing"
	"time"
)

// The pool state read off the kube-state-metrics curves: desired replicas
// at the onset and at the end, the most desired during the spike, the
// autoscaler's limits, and since when it is at its max.
func TestPools(t *testing.T) {
	t.Parallel()
	onset := t0.Add(60 * time.Minute)
	ph := newPhases(onset, onset.Add(20*time.Minute), t0, t0.Add(100*time.Minute))
	steps := func(role Role, model string, f func(min int) float64) Curve {
		c := Curve{Role: role, Level: LevelModel, Scope: Scope{Model: model}}
		for m := 0; m <= 100; m++ {
			c.Points = append(c.Points, Point{T: t0.Add(time.Duration(m) * time.Minute).UnixMilli(), V: f(m)})
		}
		return c
	}
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	cs := newCurveSet([]Curve{
		steps(RoleReplicas, "stuck", flat(2)), steps(RoleReplicasMin, "stuck", flat(2)), steps(RoleReplicasMax, "stuck", flat(4)),
		steps(RoleReplicas, "maxed", func(m int) float64 {
			switch {
			case m < 63:
				return 3
			case m < 70:
				return 5
			}
			return 6
		}),
		steps(RoleReplicasMax, "maxed", flat(6)),
		steps(RoleReplicas, "plain", flat(1)),
	})
	got := pools(cs, ph, t0.Add(100*time.Minute), []string{"stuck", "maxed", "plain", "unwatched"})
	if len(got) != 3 {
		t.Fatalf("pools %+v, want stuck, maxed and plain (no curve: no pool)", got)
	}
	stuck, maxed, plain := got[0], got[1], got[2]
	if stuck.DesiredAtOnset != 2 || stuck.Desired != 2 || stuck.DesiredPeak != 2 || stuck.MinReplicas != 2 || stuck.MaxReplicas != 4 || stuck.AtMaxSince != nil {
		t.Errorf("stuck: %+v", stuck)
	}
	if maxed.DesiredAtOnset != 3 || maxed.Desired != 6 || maxed.DesiredPeak != 6 || maxed.MaxReplicas != 6 ||
		maxed.AtMaxSince == nil || !maxed.AtMaxSince.Equal(t0.Add(70*time.Minute)) {
		t.Errorf("maxed: %+v", maxed)
	}
	if plain.Desired != 1 || plain.MaxReplicas != 0 || plain.AtMaxSince != nil || !plain.Through.Equal(t0.Add(100*time.Minute)) {
		t.Errorf("plain: %+v", plain)
	}
}

// Pool-state curves are never deviations: a scale-up is a change of
// state, not a resource that moved.
func TestPoolCurvesAreNotDeviations(t *testing.T) {
	t.Parallel()
	onset := t0.Add(60 * time.Minute)
	ph := newPhases(onset, onset.Add(20*time.Minute), t0, t0.Add(100*time.Minute))
	c := Curve{Role: RoleReplicas, Level: LevelModel, Scope: Scope{Model: "m"}}
	for m := 0; m <= 100; m++ {
		v := 2.0
		if m >= 60 {
			v = 8
		}
		c.Points = append(c.Points, Point{T: t0.Add(time.Duration(m) * time.Minute).UnixMilli(), V: v})
	}
	q := c
	q.Role = RoleQueue
	devs := topDeviations(newCurveSet([]Curve{c, q}), ph, 10)
	if len(devs) != 1 || devs[0].Role != RoleQueue {
		t.Errorf("deviations %+v, want the queue's only", devs)
	}
}

// A capacity cause's scale-out action follows the pool: raise the max
// when the autoscaler sits at it, look at what it scales on when it did
// not react, let it finish when it is scaling; the generic action stays
// when the pool state is not in the data.
func TestPoolActions(t *testing.T) {
	t.Parallel()
	at, onset, through := t0.Add(70*time.Minute), t0.Add(60*time.Minute), t0.Add(80*time.Minute)
	end := through.Add(time.Minute) // where the analysis' data ends
	for _, c := range []struct {
		pool Pool
		want string
	}{
		{Pool{Model: "m", DesiredAtOnset: 3, Desired: 6, DesiredPeak: 6, MaxReplicas: 6, AtMaxSince: &at},
			"Raise m's autoscaler max (at its max of 6 replicas since " + at.Format("15:04") + " UTC) or add GPUs to the pool"},
		{Pool{Model: "m", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MaxReplicas: 4, Through: through},
			"Scale out m now (2 desired of at most 4): its autoscaler did not react — check the metric and target it scales on"},
		// Replica counts that end at onset+4 min, or onset+1, of data to
		// onset+21 say what the autoscaler had done by then, no more.
		{Pool{Model: "m", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MaxReplicas: 4, Through: onset.Add(time.Minute)},
			"Scale out m (2 desired of at most 4 at " + onset.Add(time.Minute).Format("15:04") + " UTC, where its replica counts end: whether its autoscaler reacted is not in the data)"},
		{Pool{Model: "m", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MaxReplicas: 4, Through: onset.Add(4 * time.Minute)},
			"Scale out m (2 desired of at most 4 at " + onset.Add(4*time.Minute).Format("15:04") + " UTC, where its replica counts end): its autoscaler had not reacted by then — check the metric and target it scales on"},
		{Pool{Model: "m", DesiredAtOnset: 2, Desired: 3, DesiredPeak: 3, MaxReplicas: 4},
			"Let m's autoscaler finish scaling (2 → 3 of at most 4 replicas) or scale out ahead of it"},
		{Pool{Model: "other", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MaxReplicas: 4}, actions(CatCapacity, Target{Model: "m"})[1]},
		{Pool{Model: "m", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2}, actions(CatCapacity, Target{Model: "m"})[1]},
	} {
		causes := []Cause{{Category: CatCapacity, Target: Target{Model: "m"}, Actions: actions(CatCapacity, Target{Model: "m"})}}
		withPoolActions(causes, []Pool{c.pool}, onset, end)
		if got := causes[0].Actions[1]; got != c.want {
			t.Errorf("pool %+v: action %q, want %q", c.pool, got, c.want)
		}
	}
	// A minute into the incident, with the data up to now: too soon.
	causes := []Cause{{Category: CatCapacity, Target: Target{Model: "m"}, Actions: actions(CatCapacity, Target{Model: "m"})}}
	p := Pool{Model: "m", DesiredAtOnset: 2, Desired: 2, DesiredPeak: 2, MaxReplicas: 4, Through: onset.Add(time.Minute)}
	withPoolActions(causes, []Pool{p}, onset, onset.Add(90*time.Second))
	if got, want := causes[0].Actions[1], "Scale out m (2 desired of at most 4; its autoscaler has had under 3 minutes to react)"; got != want {
		t.Errorf("a minute in: action %q, want %q", got, want)
	}
}
