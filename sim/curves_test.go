package sim

import (
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// TestCurvesAgreeWithRequests: the curves a pull would make agree with the
// simulated requests — a model's QPS is the sum of its replicas', its P99
// before and during the effect is the truth's measured P99, and every
// curve's points lie in the window, in time order.
func TestCurvesAgreeWithRequests(t *testing.T) {
	t.Parallel()
	f, err := New(Small(3, Release))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Truth()
	curves := f.Curves()
	byKey := map[string]correlate.Curve{}
	d := f.Description()
	for _, c := range curves {
		byKey[c.Key()] = c
		if !sort.SliceIsSorted(c.Points, func(i, j int) bool { return c.Points[i].T < c.Points[j].T }) {
			t.Errorf("%s: points out of order", c.Key())
		}
		for _, p := range c.Points {
			if p.Time().Before(d.Start) || p.Time().After(d.End) || math.IsNaN(p.V) {
				t.Fatalf("%s: point %v = %v outside the window or NaN", c.Key(), p.Time(), p.V)
			}
		}
	}
	model := tr.Target.Model
	total := byKey[correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model}}.Key()]
	if len(total.Points) == 0 {
		t.Fatalf("no model QPS curve for %s", model)
	}
	sum := map[int64]float64{}
	for _, c := range curves {
		if c.Role == correlate.RoleQPS && c.Level == correlate.LevelReplica && c.Scope.Model == model {
			for _, p := range c.Points {
				sum[p.T] += p.V
			}
		}
	}
	for _, p := range total.Points {
		if math.Abs(sum[p.T]-p.V) > 1e-6*math.Max(1, p.V) {
			t.Fatalf("QPS at %v: model %.3f, replicas sum to %.3f", p.Time(), p.V, sum[p.T])
		}
	}
	p99 := byKey[correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model}}.Key()]
	med := func(from, to time.Time) float64 {
		var vs []float64
		for _, p := range p99.Points {
			if !p.Time().Before(from) && p.Time().Before(to) {
				vs = append(vs, p.V)
			}
		}
		slices.Sort(vs)
		if len(vs) == 0 {
			return math.NaN()
		}
		return vs[len(vs)/2]
	}
	onset := *tr.Onset
	before, during := med(d.Start.Add(2*time.Minute), onset), med(onset.Add(3*time.Minute), d.End)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"before", before, tr.P99BeforeMs}, {"during", during, tr.P99DuringMs}} {
		if math.IsNaN(c.got) || math.Abs(c.got-c.want) > 0.35*c.want {
			t.Errorf("P99 %s from the curve %.0f ms, truth measured %.0f ms", c.name, c.got, c.want)
		}
	}
}

// TestKubeEvents: the rollout of the release scenario is seen as a deploy
// of the new version at the next scrape, and each new pod as a start.
func TestKubeEvents(t *testing.T) {
	t.Parallel()
	f, err := New(Small(3, Release))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Truth()
	var deploy *correlate.Event
	starts := 0
	events := f.KubeEvents()
	for i, e := range events {
		if e.Source != "kube-state-metrics" || e.ID == "" {
			t.Errorf("event %+v: want a kube-state-metrics source and an id", e)
		}
		switch e.Kind {
		case correlate.KindDeploy:
			deploy = &events[i]
		case correlate.KindReplicaStart:
			if e.Model == tr.Target.Model && e.Version == tr.Target.Version {
				starts++
			}
		}
	}
	if deploy == nil || deploy.Model != tr.Target.Model || deploy.Version != tr.Target.Version {
		t.Fatalf("deploy %+v, want %s %s", deploy, tr.Target.Model, tr.Target.Version)
	}
	if lag := deploy.Time.Sub(*tr.ChangeTime); lag < 0 || lag > f.opts.Step {
		t.Errorf("deploy seen %v after the change, want within one scrape", lag)
	}
	if starts == 0 {
		t.Error("no replica_start for the new version's pods")
	}
}
