package correlate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
)

// signatures are the evidence items that make up each category's
// signature: the top cause of a simulated incident of that category must
// cite all of them.
var signatures = map[sim.Scenario][]string{
	sim.Release:      {"deploy_before_onset", "new_version_slower", "only_this_model"},
	sim.Capacity:     {"traffic_up", "queue_growth", "tenant_surge"},
	sim.LocalReplica: {"replica_outlier", "slow_requests_concentrated", "node_replicas_slowed"},
	sim.Batching:     {"batch_wait_growth", "batching_config_change", "bigger_batches"},
	sim.ColdStart:    {"scale_up", "new_replicas", "slow_requests_on_new_replicas"},
	sim.Downstream:   {"downstream_growth", "downstream_curve_up"},
	sim.Routing:      {"traffic_skew", "busy_replicas_slow", "routing_change"},
	sim.Ingress:      {"gateway_growth", "all_models"},
}

// TestCategorySignatures pins what each category looks like: the analysis
// of a simulated incident of that category ranks it first with a confident
// score, names the right target and cites the category's signature.
func TestCategorySignatures(t *testing.T) {
	t.Parallel()
	for sc, evidence := range signatures {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			c := simulated(t, sc)
			checkTop(t, correlate.Analyze(c.input), c.truth, evidence)
		})
	}
}

func checkTop(t *testing.T, a correlate.Analysis, truth sim.Truth, evidence []string) {
	t.Helper()
	if len(a.Causes) == 0 {
		t.Fatalf("no causes")
	}
	top := a.Causes[0]
	if string(top.Category) != truth.Category {
		t.Fatalf("top cause %s (%.2f), want %s; ranking: %s", top.Category, top.Score, truth.Category, ranking(a))
	}
	if top.Score < 0.5 {
		t.Errorf("top score %.2f, want a confident ≥ 0.5", top.Score)
	}
	if !sim.TargetMatches(truth.Category, truth.Target, top.Target) {
		t.Errorf("target %+v, want %+v", top.Target, truth.Target)
	}
	names := map[string]bool{}
	for _, e := range top.Evidence {
		names[e.Name] = true
		if e.Summary == "" || e.Strength <= 0 || e.Weight <= 0 {
			t.Errorf("evidence %q is not explained: %+v", e.Name, e)
		}
	}
	for _, n := range evidence {
		if !names[n] {
			t.Errorf("top cause lacks evidence %q; has %v", n, keys(names))
		}
	}
	if len(top.Actions) == 0 {
		t.Errorf("no action suggested")
	}
	// Explainability: the score is the evidence minus the counter-evidence.
	var sum float64
	for _, e := range top.Evidence {
		sum += e.Weight * e.Strength
	}
	for _, e := range top.CounterEvidence {
		sum -= e.Weight * e.Strength
	}
	sum = min(sum, 1)
	if d := sum - top.Score; d > 0.06 || d < -0.06 {
		t.Errorf("score %.3f is not the sum of its listed evidence (%.3f)", top.Score, sum)
	}
}

func ranking(a correlate.Analysis) string {
	var parts []string
	for _, c := range a.Causes {
		parts = append(parts, fmt.Sprintf("%s=%.2f", c.Category, c.Score))
	}
	return strings.Join(parts, " ")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestQuietFleetIsUnexplained: with nothing injected (innocent changes
// only), nothing is blamed and no spike is found.
func TestQuietFleetIsUnexplained(t *testing.T) {
	t.Parallel()
	a := correlate.Analyze(simulated(t, sim.None).input)
	if a.Causes[0].Category != correlate.CatUnexplained {
		t.Fatalf("quiet fleet: top cause %s (%.2f), want unexplained; %s", a.Causes[0].Category, a.Causes[0].Score, ranking(a))
	}
	if a.Onset != nil || len(a.Spikes) != 0 {
		t.Errorf("quiet fleet: onset %v, %d spikes; want none", a.Onset, len(a.Spikes))
	}
}

// TestHardCases covers inputs the analysis must survive with a sensible
// answer: missing samples, missing curves, gaps, a single replica.
func TestHardCases(t *testing.T) {
	t.Parallel()
	t.Run("NoSamples", func(t *testing.T) {
		t.Parallel()
		c := simulated(t, sim.Batching)
		in := c.clone()
		in.Samples = nil
		a := correlate.Analyze(in)
		if a.StageSource != "curves" {
			t.Errorf("stage source %q, want curves", a.StageSource)
		}
		checkTop(t, a, c.truth, []string{"batch_wait_growth"})
		if !strings.Contains(a.Checklist[2].Answer, "No request samples") {
			t.Errorf("samples step should say there are none: %q", a.Checklist[2].Answer)
		}
	})
	t.Run("SamplesButNoCurves", func(t *testing.T) {
		t.Parallel()
		c := simulated(t, sim.Downstream)
		in := c.clone()
		in.Curves = nil
		a := correlate.Analyze(in)
		if a.Onset == nil {
			t.Fatalf("no onset found from samples alone")
		}
		if d := a.Onset.Sub(*c.truth.Onset); d < -5*time.Minute || d > 5*time.Minute {
			t.Errorf("onset %v, %v from the truth", a.Onset, d)
		}
		checkTop(t, a, c.truth, []string{"downstream_growth"})
	})
	t.Run("GapBeforeOnset", func(t *testing.T) {
		t.Parallel()
		c := simulated(t, sim.LocalReplica)
		in := c.clone()
		lo, hi := c.truth.Onset.Add(-15*time.Minute).UnixMilli(), c.truth.Onset.Add(-5*time.Minute).UnixMilli()
		for i := range in.Curves {
			in.Curves[i].Points = slices.DeleteFunc(in.Curves[i].Points, func(p correlate.Point) bool { return p.T >= lo && p.T < hi })
		}
		checkTop(t, correlate.Analyze(in), c.truth, signatures[sim.LocalReplica])
	})
	t.Run("OneReplicaOnly", func(t *testing.T) {
		t.Parallel()
		o := goldenOptions(sim.Batching)
		o.ReplicasPerModel, o.Confounders = 1, false
		c, err := newSimCase(o)
		if err != nil {
			t.Fatal(err)
		}
		a := correlate.Analyze(c.input)
		if !slices.Contains(a.Scope.Models, c.truth.Target.Model) {
			t.Errorf("scope models %v, want %s among them", a.Scope.Models, c.truth.Target.Model)
		}
		checkTop(t, a, c.truth, []string{"batch_wait_growth"})
	})
	t.Run("NoDataAtAll", func(t *testing.T) {
		t.Parallel()
		w := correlate.Window{From: sim.DefaultStart, To: sim.DefaultStart.Add(2 * time.Hour)}
		a := correlate.Analyze(correlate.Input{Window: w})
		if a.Causes[0].Category != correlate.CatUnexplained || a.Onset != nil {
			t.Errorf("empty input: top %s onset %v, want unexplained and none", a.Causes[0].Category, a.Onset)
		}
	})
}
