package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// These tests read only the raw outputs (metrics text, NDJSON samples,
// events, the truth's target and onset) and check that each injected cause
// leaves the trace a real one would, where it would. No analysis code.

func scenarioOut(t *testing.T, sc Scenario) *outputs {
	t.Helper()
	return generate(t, Small(21, sc))
}

// windows around the onset: 15 min before, and from 1 to 9 min after.
func prePost(o *outputs) (pre, post func(*correlate.Sample) bool, t0, t1, t2, t3 time.Time) {
	on := o.onset()
	t0, t1 = on.Add(-15*time.Minute), on
	t2, t3 = on.Add(time.Minute), on.Add(9*time.Minute)
	return between(t0, t1), between(t2, t3), t0, t1, t2, t3
}

func ofModel(name string) func(*correlate.Sample) bool {
	return func(s *correlate.Sample) bool { return s.Model == name }
}

func TestScenarioReleaseNewVersionSlower(t *testing.T) {
	o := scenarioOut(t, Release)
	tg := o.truth.Target
	_, post, _, _, t2, t3 := prePost(o)
	newV := o.sel(and(post, ofModel(tg.Model), func(s *correlate.Sample) bool { return s.Version == tg.Version }))
	oldV := o.sel(and(between(t2.Add(-16*time.Minute), t2.Add(-time.Minute)), ofModel(tg.Model), func(s *correlate.Sample) bool { return s.Version != tg.Version }))
	if len(newV) < 20 || len(oldV) < 20 {
		t.Fatalf("samples: new version %d, old version %d", len(newV), len(oldV))
	}
	if a, b := wQuantile(newV, "exec", 0.5), wQuantile(oldV, "exec", 0.5); a < 1.4*b {
		t.Errorf("median exec new %s %.1f ms vs old %.1f ms: want ≥ x1.4", tg.Version, a, b)
	}
	// The deploy was pushed, and kube-state-metrics shows the new
	// generation and pods labelled with the new version.
	var found bool
	for _, e := range o.events {
		found = found || (e.Kind == "deploy" && e.Model == tg.Model && e.Version == tg.Version && e.ID == o.truth.CauseEventID)
	}
	if !found {
		t.Errorf("no pushed deploy of %s %s", tg.Model, tg.Version)
	}
	m := o.metrics(t, "kube_pod_labels", "kube_deployment_metadata_generation")
	labelled := 0
	for _, s := range m.byLabel("kube_pod_labels", "label_version")[tg.Version] {
		if s.labels["label_app"] == tg.Model {
			labelled++
		}
	}
	if labelled == 0 {
		t.Errorf("no pod labelled %s", tg.Version)
	}
	gen := m.byLabel("kube_deployment_metadata_generation", "deployment")[tg.Model][0]
	g0, _ := gen.valueAt(o.onset().Add(-2 * time.Minute).Unix())
	g1, _ := gen.valueAt(t3.Unix())
	if g1 != g0+1 {
		t.Errorf("generation %v -> %v, want a bump", g0, g1)
	}
}

func TestScenarioCapacityMoreTrafficAndQueueing(t *testing.T) {
	o := scenarioOut(t, Capacity)
	tg := o.truth.Target
	pre, post, t0, t1, t2, t3 := prePost(o)
	m := o.metrics(t, "inference_request_duration_seconds_count")
	rate := func(a, b time.Time) float64 {
		n := 0.0
		for _, s := range m.byLabel("inference_request_duration_seconds_count", "model")[tg.Model] {
			n += s.increase(a.Unix(), b.Unix())
		}
		return n / b.Sub(a).Seconds()
	}
	if r0, r1 := rate(t0, t1), rate(t2, t3); r1 < 1.3*r0 {
		t.Errorf("%s request rate %.1f -> %.1f /s: want ≥ x1.3", tg.Model, r0, r1)
	}
	before, after := o.sel(and(pre, ofModel(tg.Model))), o.sel(and(post, ofModel(tg.Model)))
	if a, b := wMean(before, "queue"), wMean(after, "queue"); b < 1.8*a || b < 10 {
		t.Errorf("mean queue %.1f -> %.1f ms: want ≥ x1.8", a, b)
	}
	share := func(ss []*correlate.Sample) float64 {
		n, w := 0.0, 0.0
		for _, s := range ss {
			w += s.SampleRate
			if s.Tenant == tg.Tenant {
				n += s.SampleRate
			}
		}
		return n / w
	}
	if a, b := share(before), share(after); b < a+0.1 {
		t.Errorf("tenant %s share %.2f -> %.2f: want it to grow", tg.Tenant, a, b)
	}
}

func TestScenarioLocalReplicaNodeSlow(t *testing.T) {
	o := scenarioOut(t, LocalReplica)
	tg := o.truth.Target
	pre, post, _, _, t2, t3 := prePost(o)
	onNode := func(s *correlate.Sample) bool { return s.Node == tg.Node }
	offNode := func(s *correlate.Sample) bool { return s.Node != tg.Node }
	// Compare single-request batches: a least-request balancer moves load
	// off the slow node, so the other replicas batch more and their exec per
	// batch grows for a reason unrelated to their GPU.
	single := func(s *correlate.Sample) bool { return s.BatchSize == 1 }
	checked := 0
	for _, mi := range o.desc.Models {
		on0, on1 := o.sel(and(pre, onNode, single, ofModel(mi.Name))), o.sel(and(post, onNode, single, ofModel(mi.Name)))
		off0, off1 := o.sel(and(pre, offNode, single, ofModel(mi.Name))), o.sel(and(post, offNode, single, ofModel(mi.Name)))
		if len(on0) < 10 || len(on1) < 10 {
			continue
		}
		checked++
		if a, b := wQuantile(on0, "exec", 0.5), wQuantile(on1, "exec", 0.5); b < 1.5*a {
			t.Errorf("%s on %s: median exec %.1f -> %.1f ms, want ≥ x1.5", mi.Name, tg.Node, a, b)
		}
		if len(off0) > 10 && len(off1) > 10 {
			if a, b := wQuantile(off0, "exec", 0.5), wQuantile(off1, "exec", 0.5); b > 1.15*a || b < 0.85*a {
				t.Errorf("%s off %s: median exec %.1f -> %.1f ms, want unchanged", mi.Name, tg.Node, a, b)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no model with samples on %s", tg.Node)
	}
	m := o.metrics(t, "DCGM_FI_DEV_GPU_UTIL", "kube_node_status_condition")
	for _, s := range m.byLabel("DCGM_FI_DEV_GPU_UTIL", "Hostname")[tg.Node] {
		if s.labels["pod"] == "" {
			continue
		}
		u0, _ := s.valueAt(o.onset().Add(-time.Minute).Unix())
		u1, _ := s.valueAt(t3.Unix())
		if u1 <= u0 {
			t.Errorf("GPU util of %s: %v -> %v, want up", s.labels["pod"], u0, u1)
		}
	}
	for _, s := range m.byLabel("kube_node_status_condition", "node")[tg.Node] {
		if s.labels["condition"] == "Ready" && s.labels["status"] == "true" {
			if v, _ := s.valueAt(t2.Unix()); v != 1 {
				t.Errorf("node %s not Ready: a throttled GPU leaves the node Ready", tg.Node)
			}
		}
	}
}

func TestScenarioBatchingWindowWaits(t *testing.T) {
	o := scenarioOut(t, Batching)
	tg := o.truth.Target
	pre, post, t0, t1, t2, t3 := prePost(o)
	before, after := o.sel(and(pre, ofModel(tg.Model))), o.sel(and(post, ofModel(tg.Model)))
	if a, b := wMean(before, "batch_wait"), wMean(after, "batch_wait"); b < 4*a {
		t.Errorf("mean batch_wait %.1f -> %.1f ms, want ≥ x4", a, b)
	}
	m := o.metrics(t, "inference_batches_total", "inference_request_duration_seconds_count")
	avg := func(a, b time.Time) float64 {
		req, bat := 0.0, 0.0
		for _, s := range m.byLabel("inference_request_duration_seconds_count", "model")[tg.Model] {
			req += s.increase(a.Unix(), b.Unix())
		}
		for _, s := range m.byLabel("inference_batches_total", "model")[tg.Model] {
			bat += s.increase(a.Unix(), b.Unix())
		}
		return req / bat
	}
	if a, b := avg(t0, t1), avg(t2, t3); b < 1.3*a {
		t.Errorf("average batch %.2f -> %.2f, want bigger batches", a, b)
	}
	var found bool
	for _, e := range o.events {
		found = found || (e.Kind == "config_change" && e.Model == tg.Model && strings.Contains(e.Summary, "max_queue_delay"))
	}
	if !found {
		t.Errorf("no pushed config change of %s's batch window", tg.Model)
	}
}

func TestScenarioColdStartNewPodsSlow(t *testing.T) {
	o := scenarioOut(t, ColdStart)
	tg := o.truth.Target
	from, to := o.window()
	m := o.metrics(t, "kube_horizontalpodautoscaler_status_desired_replicas", "kube_deployment_spec_replicas", "kube_pod_start_time", "kube_pod_info",
		"kube_horizontalpodautoscaler_spec_min_replicas", "kube_horizontalpodautoscaler_spec_max_replicas")
	on := o.onset()
	var before, after float64
	for _, name := range []string{"kube_horizontalpodautoscaler_status_desired_replicas", "kube_deployment_spec_replicas"} {
		label := map[bool]string{true: "horizontalpodautoscaler", false: "deployment"}[strings.Contains(name, "horizontal")]
		s := m.byLabel(name, label)[tg.Model][0]
		a, _ := s.valueAt(on.Add(-2 * time.Minute).Unix())
		b, _ := s.valueAt(on.Add(time.Minute).Unix())
		if b <= a {
			t.Errorf("%s %v -> %v, want a rise at the onset", name, a, b)
		}
		before, after = a, b
	}
	// The autoscaler's limits: min the initial replicas, max twice that
	// (the scale-up stays within it), the same at every step.
	for k, name := range []string{"kube_horizontalpodautoscaler_spec_min_replicas", "kube_horizontalpodautoscaler_spec_max_replicas"} {
		s := m.byLabel(name, "horizontalpodautoscaler")[tg.Model][0]
		want := []float64{before, max(2*before, after)}[k]
		for _, p := range s.points {
			if p.v != want {
				t.Fatalf("%s = %v, want %v throughout", name, p.v, want)
			}
		}
	}
	started := map[string]bool{}
	for pod, ss := range m.byLabel("kube_pod_start_time", "pod") {
		if st := int64(ss[0].points[0].v); st > from && st < to && strings.HasPrefix(pod, tg.Model+"-") {
			started[pod] = true
			if _, ok := m.byLabel("kube_pod_info", "pod")[pod]; !ok {
				t.Errorf("new pod %s has no kube_pod_info", pod)
			}
		}
	}
	for _, r := range tg.Replicas {
		if !started[r] {
			t.Errorf("target replica %s did not start inside the window", r)
		}
	}
	early := between(on, on.Add(3*time.Minute))
	isNew := func(s *correlate.Sample) bool { return started[s.Replica] }
	isOld := func(s *correlate.Sample) bool { return !started[s.Replica] }
	newS, oldS := o.sel(and(early, ofModel(tg.Model), isNew)), o.sel(and(early, ofModel(tg.Model), isOld))
	if len(newS) < 10 || len(oldS) < 10 {
		t.Fatalf("samples new pods %d, old pods %d", len(newS), len(oldS))
	}
	if a, b := wQuantile(oldS, "exec", 0.5), wQuantile(newS, "exec", 0.5); b < 2*a {
		t.Errorf("first minutes: median exec new pods %.1f ms vs old %.1f ms, want ≥ x2", b, a)
	}
	late := o.sel(and(between(on.Add(9*time.Minute), on.Add(10*time.Minute)), ofModel(tg.Model), isNew))
	if a, b := wQuantile(oldS, "exec", 0.5), wQuantile(late, "exec", 0.5); len(late) > 5 && b > 1.5*a {
		t.Errorf("after 9 min new pods still slow: %.1f vs %.1f ms", b, a)
	}
}

func TestScenarioDownstreamCallersOnly(t *testing.T) {
	o := scenarioOut(t, Downstream)
	callers := map[string]bool{}
	for _, m := range o.truth.Target.Models {
		callers[m] = true
	}
	pre, post, _, _, _, _ := prePost(o)
	for _, mi := range o.desc.Models {
		a, b := wMean(o.sel(and(pre, ofModel(mi.Name))), "downstream"), wMean(o.sel(and(post, ofModel(mi.Name))), "downstream")
		switch {
		case callers[mi.Name] != (mi.Downstream != ""):
			t.Errorf("%s: target models and description disagree", mi.Name)
		case callers[mi.Name] && b < 2*a:
			t.Errorf("caller %s: mean downstream %.1f -> %.1f ms, want ≥ x2", mi.Name, a, b)
		case !callers[mi.Name] && (a != 0 || b != 0):
			t.Errorf("non-caller %s has downstream time %.1f -> %.1f", mi.Name, a, b)
		}
	}
}

func TestScenarioRoutingSkewsReplicas(t *testing.T) {
	o := scenarioOut(t, Routing)
	tg := o.truth.Target
	_, _, t0, t1, t2, t3 := prePost(o)
	m := o.metrics(t, "inference_request_duration_seconds_count")
	skew := func(a, b time.Time) (float64, string) {
		maxV, sum, n, hot := 0.0, 0.0, 0, ""
		for _, s := range m.byLabel("inference_request_duration_seconds_count", "model")[tg.Model] {
			v := s.increase(a.Unix(), b.Unix())
			sum += v
			n++
			if v > maxV {
				maxV, hot = v, s.labels["pod"]
			}
		}
		return maxV / (sum / float64(n)), hot
	}
	s0, _ := skew(t0, t1)
	s1, hot := skew(t2, t3)
	if s0 > 1.15 || s1 < 1.25 {
		t.Errorf("per-pod request skew (max/mean) %.2f -> %.2f, want balanced then skewed", s0, s1)
	}
	if hot != tg.Replicas[0] {
		t.Errorf("busiest pod %s, truth says %s", hot, tg.Replicas[0])
	}
	var found bool
	for _, e := range o.events {
		found = found || (e.Kind == "route_change" && e.Model == tg.Model)
	}
	if !found {
		t.Errorf("no pushed route change for %s", tg.Model)
	}
}

func TestScenarioIngressGatewayForAll(t *testing.T) {
	o := scenarioOut(t, Ingress)
	pre, post, _, _, _, _ := prePost(o)
	for _, mi := range o.desc.Models {
		before, after := o.sel(and(pre, ofModel(mi.Name))), o.sel(and(post, ofModel(mi.Name)))
		if a, b := wMean(before, "gateway"), wMean(after, "gateway"); b < 3*a {
			t.Errorf("%s: mean gateway %.1f -> %.1f ms, want ≥ x3", mi.Name, a, b)
		}
		if a, b := wMean(before, "exec"), wMean(after, "exec"); b > 1.2*a || b < 0.8*a {
			t.Errorf("%s: exec moved %.1f -> %.1f ms under a gateway cause", mi.Name, a, b)
		}
	}
}

func TestScenarioNoneNoShift(t *testing.T) {
	o := scenarioOut(t, None)
	pre, post, _, _, _, _ := prePost(o)
	for _, mi := range o.desc.Models {
		a := wQuantile(o.sel(and(pre, ofModel(mi.Name))), "total", 0.99)
		b := wQuantile(o.sel(and(post, ofModel(mi.Name))), "total", 0.99)
		if b > 1.3*a || b < 0.7*a {
			t.Errorf("%s: P99 %.0f -> %.0f ms without a cause", mi.Name, a, b)
		}
	}
	if o.truth.Onset != nil || o.truth.Category != "none" {
		t.Errorf("truth %+v", o.truth)
	}
}

// Every incident raises the affected P99 by at least 30 % at the default
// strength, and none does not.
func TestScenarioTruthP99(t *testing.T) {
	for _, sc := range Scenarios {
		tr := scenarioOut(t, sc).truth
		r := tr.P99DuringMs / tr.P99BeforeMs
		if sc == None && (r > 1.25 || r < 0.8) || sc != None && r < 1.3 {
			t.Errorf("%s: p99 %.0f -> %.0f ms (x%.2f) on %s", sc, tr.P99BeforeMs, tr.P99DuringMs, r, tr.MeasuredOn)
		}
	}
}
