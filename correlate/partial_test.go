package correlate_test

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
)

// Partial data (issue 14): real fleets send what they have. Each test
// removes a kind of signal from a simulated incident and checks that the
// verdict holds where it can, that the causes needing the missing signal
// are listed as not assessable instead of being scored, and that no
// summary claims what the data cannot show.

// keepCurves returns the input with only the curves keep accepts.
func keepCurves(in correlate.Input, keep func(c correlate.Curve) bool) correlate.Input {
	in.Curves = slices.DeleteFunc(in.Curves, func(c correlate.Curve) bool { return !keep(c) })
	return in
}

func notAssessable(a correlate.Analysis) map[correlate.Category]string {
	out := map[correlate.Category]string{}
	for _, n := range a.NotAssessable {
		out[n.Category] = n.Reason
	}
	return out
}

func signal(a correlate.Analysis, name string) correlate.SignalCoverage {
	for _, s := range a.Coverage.Signals {
		if s.Signal == name {
			return s
		}
	}
	return correlate.SignalCoverage{}
}

// checkApart: the not-assessable categories are not among the ranked
// causes, each says why, and the coverage lists the same categories.
func checkApart(t *testing.T, a correlate.Analysis, want ...correlate.Category) {
	t.Helper()
	na := notAssessable(a)
	for _, c := range want {
		why, ok := na[c]
		if !ok {
			t.Errorf("%s should not be assessable; not assessable: %v; ranking %s", c, a.NotAssessable, ranking(a))
			continue
		}
		if !strings.HasPrefix(why, "not assessable: ") {
			t.Errorf("%s: reason %q", c, why)
		}
	}
	for _, c := range a.Causes {
		if _, ok := na[c.Category]; ok {
			t.Errorf("%s is both ranked (%.2f) and not assessable", c.Category, c.Score)
		}
	}
	if len(a.Coverage.NotAssessable) != len(a.NotAssessable) {
		t.Errorf("coverage lists %v, analysis %v", a.Coverage.NotAssessable, a.NotAssessable)
	}
	if !slices.IsSortedFunc(a.Causes, func(x, y correlate.Cause) int {
		if x.Category == correlate.CatUnexplained || y.Category == correlate.CatUnexplained {
			return 0
		}
		return -cmpFloat(x.Score, y.Score)
	}) {
		t.Errorf("causes not sorted by score: %s", ranking(a))
	}
	checkClaims(t, a)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// claims maps words a summary may use to the evidence that must back them
// (any one of the names): a cause may say "GPU" only when it measured a
// GPU, "queue" only when a queue grew, and so on.
var claims = []struct {
	word     *regexp.Regexp
	evidence []string
}{
	{regexp.MustCompile(`(?i)GPUs run at|for the GPUs|GPU utilisation`), []string{"gpu_busy", "node_resources"}},
	{regexp.MustCompile(`(?i)requests queue|queueing`), []string{"queue_growth", "busy_replicas_queue"}},
	{regexp.MustCompile(`(?i)batching window grew|wait (longer )?for batches to fill`), []string{"batch_wait_growth", "batching_config_change", "bigger_batches"}},
	{regexp.MustCompile(`(?i)is slower than the version`), []string{"new_version_slower"}},
	{regexp.MustCompile(`(?i)piles .* traffic onto`), []string{"traffic_skew"}},
	{regexp.MustCompile(`(?i)took traffic before they were warm|replicas are slower than the warm ones`), []string{"slow_requests_on_new_replicas", "new_replicas_slower"}},
	{regexp.MustCompile(`(?i)dependency \S+ slowed`), []string{"dependency_named"}},
	{regexp.MustCompile(`(?i)much slower than on its peers`), []string{"replica_outlier", "node_replicas_slowed"}},
	{regexp.MustCompile(`(?i)slow requests concentrate on`), []string{"slow_requests_concentrated"}},
	{regexp.MustCompile(`(?i)the replicas that stand out are the new ones`), []string{"replica_outlier", "node_replicas_slowed"}},
	{regexp.MustCompile(`(?i)gateway / ingress .* got slow`), []string{"gateway_growth"}},
}

// checkClaims holds every cause's summary to its evidence.
func checkClaims(t *testing.T, a correlate.Analysis) {
	t.Helper()
	for _, c := range a.Causes {
		have := map[string]bool{}
		for _, e := range c.Evidence {
			have[e.Name] = true
		}
		for _, cl := range claims {
			if !cl.word.MatchString(c.Summary) {
				continue
			}
			backed := false
			for _, n := range cl.evidence {
				backed = backed || have[n]
			}
			if !backed {
				t.Errorf("%s says %q without any of %v (has %v)", c.Category, c.Summary, cl.evidence, keys(have))
			}
		}
	}
}

// TestClaimsBackedOnEveryScenario: with full data too, no summary says
// more than its evidence.
func TestClaimsBackedOnEveryScenario(t *testing.T) {
	t.Parallel()
	for _, sc := range sim.Scenarios {
		checkClaims(t, correlate.Analyze(simulated(t, sc).input))
	}
}

func TestFleetWithoutBatchData(t *testing.T) {
	t.Parallel()
	c := simulated(t, sim.Release)
	in := keepCurves(c.clone(), func(cv correlate.Curve) bool {
		return cv.Role != correlate.RoleBatchSize && cv.Stage != "batch_wait"
	})
	for i := range in.Samples {
		in.Samples[i].BatchSize = 0
		in.Samples[i].StagesMs[correlate.StageBatchWait] = math.NaN()
	}
	a := correlate.Analyze(in)
	checkTop(t, a, c.truth, signatures[sim.Release])
	checkApart(t, a, correlate.CatBatching)
	if !strings.Contains(notAssessable(a)[correlate.CatBatching], "batch") {
		t.Errorf("reason should name the batch data: %q", notAssessable(a)[correlate.CatBatching])
	}
	if s := signal(a, "batch"); s.Present {
		t.Errorf("coverage says batch data present: %+v", s)
	}
	// Only batching loses its signal: what else is not assessable was so
	// with the batch data too (vision-detect's downstream stage reads 0
	// throughout — no call is timed).
	full := notAssessable(correlate.Analyze(c.clone()))
	for _, n := range a.NotAssessable {
		if _, before := full[n.Category]; n.Category != correlate.CatBatching && !before {
			t.Errorf("only batching lacks its signal; not assessable: %v", a.NotAssessable)
		}
	}
}

func TestServiceWithoutReplicas(t *testing.T) {
	t.Parallel()
	c := simulated(t, sim.Capacity)
	in := keepCurves(c.clone(), func(cv correlate.Curve) bool { return cv.Level == correlate.LevelModel })
	in.Events = slices.DeleteFunc(in.Events, func(e correlate.Event) bool { return e.Replica != "" || e.Kind == correlate.KindScaleUp })
	for i := range in.Samples {
		in.Samples[i].Replica, in.Samples[i].Node = "", ""
	}
	a := correlate.Analyze(in)
	checkTop(t, a, c.truth, []string{"traffic_up", "tenant_surge"})
	checkApart(t, a, correlate.CatLocalReplica, correlate.CatRouting, correlate.CatColdStart)
	if s := signal(a, "replicas"); s.Present {
		t.Errorf("coverage says per-replica data present: %+v", s)
	}
	for _, e := range a.Causes[0].Evidence {
		if e.Name == "spread_over_pool" {
			t.Errorf("capacity claims the pool is evenly loaded without per-replica data: %q", e.Summary)
		}
	}
}

// TestOnlyLatencyTrafficErrors: the shape of the real microservice data of
// issue 14 — latency quantiles, request rates and error rates per service,
// no samples, no events, no batch, stage, replica or GPU metrics.
func TestOnlyLatencyTrafficErrors(t *testing.T) {
	t.Parallel()
	c := simulated(t, sim.Capacity)
	in := keepCurves(c.clone(), func(cv correlate.Curve) bool {
		if cv.Level != correlate.LevelModel {
			return false
		}
		switch cv.Role {
		case correlate.RoleLatencyP50, correlate.RoleLatencyP95, correlate.RoleLatencyP99, correlate.RoleQPS:
			return true
		}
		return false
	})
	// An error-rate curve per service, flat with the odd failed request.
	var errs []correlate.Curve
	for _, cv := range in.Curves {
		if cv.Role == correlate.RoleQPS {
			ec := correlate.Curve{Role: correlate.RoleErrorRate, Level: correlate.LevelModel, Scope: cv.Scope}
			for i, p := range cv.Points {
				v := 0.0
				if i%97 == 0 {
					v = 0.004
				}
				ec.Points = append(ec.Points, correlate.Point{T: p.T, V: v})
			}
			errs = append(errs, ec)
		}
	}
	in.Curves = append(in.Curves, errs...)
	in.Samples, in.Events = nil, nil
	a := correlate.Analyze(in)
	checkApart(t, a, correlate.CatRelease, correlate.CatLocalReplica, correlate.CatBatching, correlate.CatColdStart,
		correlate.CatDownstream, correlate.CatRouting, correlate.CatIngress)
	// Capacity is the only cause that can be judged, on the traffic alone:
	// ranked, but not strong enough to lead ("unexplained" does).
	if len(a.Causes) != 2 || a.Causes[0].Category != correlate.CatUnexplained || a.Causes[1].Category != correlate.CatCapacity || a.Causes[1].Score <= 0 {
		t.Errorf("want unexplained first, then capacity from the traffic surge; ranking %s", ranking(a))
	}
	for _, c := range a.Causes {
		for _, word := range []string{"GPU", "queue", "batch", "replica", "node", "deploy", "version", "stage", "gateway"} {
			if strings.Contains(strings.ToLower(c.Summary), strings.ToLower(word)) && !strings.Contains(c.Summary, "no queue or GPU data") {
				t.Errorf("%s claims %q without such data: %q", c.Category, word, c.Summary)
			}
			for _, e := range c.Evidence {
				if strings.Contains(strings.ToLower(e.Summary), strings.ToLower(word)) {
					t.Errorf("%s evidence %s mentions %q without such data: %q", c.Category, e.Name, word, e.Summary)
				}
			}
		}
	}
	cv := a.Coverage
	for sig, want := range map[string]bool{"latency": true, "traffic": true, "errors": true, "stages": false, "batch": false, "gpu": false, "replicas": false, "versions": false} {
		if s := signal(a, sig); s.Present != want || (want && s.Source != "curves") {
			t.Errorf("coverage of %s: %+v, want present=%v from curves", sig, s, want)
		}
	}
	if cv.Samples != 0 || cv.Events != 0 {
		t.Errorf("coverage counts %d samples and %d events, want none", cv.Samples, cv.Events)
	}
	for _, want := range []string{"Missing: ", "per-stage times", "GPU metrics", "No request samples", "no change events", "Not assessable: "} {
		if !strings.Contains(cv.Summary, want) {
			t.Errorf("coverage summary %q lacks %q", cv.Summary, want)
		}
	}
	// Deviations: a flat error rate with a blip does not outrank the
	// latency that moved.
	if len(a.Deviations) == 0 || a.Deviations[0].Role == correlate.RoleErrorRate {
		t.Fatalf("deviations %+v", a.Deviations[:min(3, len(a.Deviations))])
	}
	for _, d := range a.Deviations {
		if d.Role == correlate.RoleErrorRate && (math.Abs(d.Deviation) > 5 || d.Score > 0.5) {
			t.Errorf("flat error rate scores %.1f (score %.2f): %+v", d.Deviation, d.Score, d)
		}
	}
}

func TestSlowDependencyNamed(t *testing.T) {
	t.Parallel()
	c := simulated(t, sim.Downstream)
	t.Run("InSamples", func(t *testing.T) {
		t.Parallel()
		in := c.clone()
		for i := range in.Samples {
			s := &in.Samples[i]
			// Callers' requests name vector-db; a few call a cache that
			// stayed fast (its time is what it always was).
			switch {
			case s.StagesMs[correlate.StageDownstream] > 0 && i%10 == 0:
				s.Dependency, s.StagesMs[correlate.StageDownstream] = "feature-cache", 2
			case s.StagesMs[correlate.StageDownstream] > 0:
				s.Dependency = "vector-db"
			}
		}
		a := correlate.Analyze(in)
		top := a.Causes[0]
		if top.Category != correlate.CatDownstream || top.Target.Dependency != "vector-db" {
			t.Fatalf("top %s target %+v, want downstream naming vector-db; ranking %s", top.Category, top.Target, ranking(a))
		}
		if !strings.Contains(top.Summary, "vector-db") {
			t.Errorf("summary does not name the dependency: %q", top.Summary)
		}
		checkClaims(t, a)
	})
	t.Run("InCurves", func(t *testing.T) {
		t.Parallel()
		in := c.clone()
		in.Samples = nil
		for i := range in.Curves {
			if in.Curves[i].Stage == "downstream" && in.Curves[i].Level == correlate.LevelModel {
				in.Curves[i].Stage = correlate.DependencyStage + "vector-db"
			}
		}
		a := correlate.Analyze(in)
		var ds correlate.Cause
		for _, cs := range a.Causes {
			if cs.Category == correlate.CatDownstream {
				ds = cs
			}
		}
		if ds.Target.Dependency != "vector-db" || !strings.Contains(ds.Summary, "vector-db") {
			t.Errorf("downstream cause %+v: want vector-db named from its call-time curves", ds)
		}
	})
	t.Run("Unnamed", func(t *testing.T) {
		t.Parallel()
		a := correlate.Analyze(c.input)
		top := a.Causes[0]
		if top.Target.Dependency != "" || !strings.Contains(top.Summary, "does not name it") {
			t.Errorf("without a dependency in the data: target %+v, summary %q", top.Target, top.Summary)
		}
	})
}

// TestPlainServiceFleet: what the http preset gives for a microservice
// fleet — latency, request and error rates per service, version and
// instance, deploys from kube-state-metrics, no samples — is enough to
// find a bad release, while the inference-only causes stay unassessed.
func TestPlainServiceFleet(t *testing.T) {
	t.Parallel()
	for _, sc := range []sim.Scenario{sim.Release, sim.LocalReplica} {
		c := simulated(t, sc)
		in := keepCurves(c.clone(), func(cv correlate.Curve) bool {
			switch cv.Role {
			case correlate.RoleLatencyP50, correlate.RoleLatencyP95, correlate.RoleLatencyP99, correlate.RoleQPS, correlate.RoleErrorRate:
				return cv.Level != correlate.LevelNode
			}
			return false
		})
		in.Samples = nil
		in.Events = slices.DeleteFunc(in.Events, func(e correlate.Event) bool { return e.Source != "kube-state-metrics" })
		a := correlate.Analyze(in)
		top := a.Causes[0]
		if string(top.Category) != c.truth.Category || !sim.TargetMatches(c.truth.Category, c.truth.Target, top.Target) {
			t.Errorf("%s: top %s %+v, want %s %+v; ranking %s", sc, top.Category, top.Target, c.truth.Category, c.truth.Target, ranking(a))
		}
		checkApart(t, a, correlate.CatBatching, correlate.CatDownstream, correlate.CatIngress)
	}
}
