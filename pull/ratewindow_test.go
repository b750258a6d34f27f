package pull

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func TestIntervalFromCount(t *testing.T) {
	for _, c := range []struct {
		count float64
		want  time.Duration
	}{
		{240, 15 * time.Second}, {241, 15 * time.Second}, // open and closed ranges
		{60, time.Minute}, {61, time.Minute}, {30, 2 * time.Minute},
		{13, 5 * time.Minute}, // 277 s: a closed hour of 5 min scrapes
		{7, 515 * time.Second}, {1, 0}, {0, 0},
	} {
		if got := intervalFromCount(time.Hour, c.count); got != c.want {
			t.Errorf("%v samples in an hour: interval %s, want %s", c.count, got, c.want)
		}
	}
}

// slowFleet is two chat replicas scraped every scrape for three hours.
func slowFleet(scrape time.Duration) *sim.Script {
	steps := int(3 * time.Hour / scrape)
	return &sim.Script{
		Start: t0, Step: scrape, Steps: steps,
		Nodes: []sim.ScriptNode{tnode("n1")},
		Pods:  []sim.ScriptPod{tpod("chat-aaaa-1", "chat", "v1", "n1", 0, steps), tpod("chat-aaaa-2", "chat", "v1", "n1", 0, steps)},
		Deployments: []sim.ScriptDeployment{{Name: "chat", Generation: map[int]float64{0: 1},
			Spec: map[int]float64{0: 2}, HPA: map[int]float64{0: 2}}},
	}
}

// modelCurves pulls f's history with yaml and returns the model-level
// curves by role.
func modelCurves(t *testing.T, f *sim.Script, yaml string) (map[correlate.Role]correlate.Curve, *Puller, Progress) {
	t.Helper()
	prom := runFleet(t, f)
	st := storetest.New(t)
	ctx := context.Background()
	p := newPuller(t, st, prom.URL, yaml, f.End())
	pr, err := p.History(ctx, f.Start, f.End(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[correlate.Role]correlate.Curve{}
	for _, c := range cs {
		if c.Level == correlate.LevelModel && c.Stage == "" {
			out[c.Role] = c
		}
	}
	return out, p, pr
}

// At 2 min scrapes the presets' rate(…[1m]) finds one sample at most and
// yields no rate at all; the automatic window is measured as 4m and the
// curves are there, right, and complete after the window's first 4 min.
func TestRateWindowFollowsSlowScrapes(t *testing.T) {
	f := slowFleet(2 * time.Minute)
	got, p, pr := modelCurves(t, f, "step: 60s\n")
	if w := p.RateWindows()["inference/qps@model"]; w != 4*time.Minute {
		t.Errorf("rate window at 2 min scrapes = %s, want 4m (all: %v)", w, p.RateWindows())
	}
	reg := prometheus.NewPedanticRegistry()
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if v := gaugeValueOf(t, reg, "waterline_pull_rate_window_seconds", "inference/qps@model"); v != 240 {
		t.Errorf("waterline_pull_rate_window_seconds{source=inference/qps@model} = %v, want 240", v)
	}
	for role, want := range map[correlate.Role]float64{correlate.RoleQPS: 20, correlate.RoleLatencyP99: 99.8, correlate.RoleBatchSize: 4} {
		c, ok := got[role]
		if !ok {
			t.Errorf("no %s curve at 2 min scrapes", role)
			continue
		}
		if n, min := len(c.Points), int(3*time.Hour/time.Minute)-8; n < min {
			t.Errorf("%s has %d points, want ≥ %d", role, n, min)
		}
		if v := c.Points[len(c.Points)/2].V; !near(v, want) {
			t.Errorf("%s = %v mid-window, want %v", role, v, want)
		}
	}
	if got[correlate.RoleQueue].Points == nil {
		t.Error("no queue curve (a gauge, no rate window)")
	}
	// The fleet has no errors counter: those sources, and only those, are
	// reported as pulling no series.
	for _, src := range pr.NoSeries {
		if !strings.Contains(src, "error_rate") {
			t.Errorf("%s reported without series (all: %v)", src, pr.NoSeries)
		}
	}
	if !slices.Contains(pr.NoSeries, "inference/error_rate@model") {
		t.Errorf("error_rate@model not reported without series: %v", pr.NoSeries)
	}

	// The failure the probe prevents: the fixed 1m window finds nothing,
	// and History says so.
	fixed, p1, pr1 := modelCurves(t, f, "step: 60s\nrate_window: 1m\n")
	if c, ok := fixed[correlate.RoleQPS]; ok {
		t.Errorf("rate_window: 1m at 2 min scrapes gave a qps curve of %d points; the test no longer shows the gap", len(c.Points))
	}
	if !slices.Contains(pr1.NoSeries, "inference/qps@model") || slices.Contains(pr1.NoSeries, "inference/queue@model") {
		t.Errorf("rate_window: 1m: sources without series %v, want qps@model and not queue@model", pr1.NoSeries)
	}
	if len(p1.RateWindows()) != 0 {
		t.Errorf("a fixed rate_window was probed: %v", p1.RateWindows())
	}
}

// At 15 s scrapes every automatic window is the presets' own 1m.
func TestRateWindowKeepsOneMinuteAt15s(t *testing.T) {
	_, p, _ := modelCurves(t, slowFleet(15*time.Second), "")
	wantWindows(t, p, time.Minute, "at 15 s scrapes")
}

// wantWindows checks that p chose automatic rate windows, all of want.
func wantWindows(t *testing.T, p *Puller, want time.Duration, when string) {
	t.Helper()
	ws := p.RateWindows()
	if len(ws) == 0 {
		t.Fatalf("no automatic rate window chosen %s", when)
	}
	for q, w := range ws {
		if w != want {
			t.Errorf("%s: rate window %s %s, want %s", q, w, when, want)
		}
	}
}

// gaugeValueOf is the value of the gauge name with label source.
func gaugeValueOf(t testing.TB, reg *prometheus.Registry, name, source string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{source=%q}", name, source)
	return 0
}

// At 5-minute steps the window covers the step: each point then stands
// for its five minutes, not the last one of them.
func TestRateWindowCoversTheStep(t *testing.T) {
	_, p, _ := modelCurves(t, slowFleet(15*time.Second), "step: 300s\n")
	wantWindows(t, p, 5*time.Minute, "at 5-minute steps")
}

// Pods that started within the probe's hour (a scale-out) do not stretch
// the measured interval: the median series' count read 15 s scrapes as
// three minutes, and the window as six.
func TestRateWindowIgnoresYoungPods(t *testing.T) {
	f := slowFleet(15 * time.Second)
	for i := range 6 {
		f.Pods = append(f.Pods, tpod(fmt.Sprintf("chat-bbbb-%d", i), "chat", "v1", "n1", f.Steps-20, f.Steps))
	}
	_, p, _ := modelCurves(t, f, "")
	wantWindows(t, p, time.Minute, "at 15 s scrapes with young pods")
}
