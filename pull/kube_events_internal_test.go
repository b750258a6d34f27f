package pull

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
)

// series is one Prometheus range series over grid; NaN values are absent.
func series(labels map[string]string, grid []int64, vals []float64) *model.SampleStream {
	m := model.Metric{}
	for k, v := range labels {
		m[model.LabelName(k)] = model.LabelValue(v)
	}
	s := &model.SampleStream{Metric: m}
	for i, v := range vals {
		if !math.IsNaN(v) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(grid[i]), Value: model.SampleValue(v)})
		}
	}
	return s
}

// TestScaleFromZeroIsNoDeploy: a model scaled to zero and back with the
// version it had is a scale, not a rollout — with generation metrics and
// without. It read "rollout m → v1" at the onset of every cold start,
// and the release cause took it as the deploy before the spike.
func TestScaleFromZeroIsNoDeploy(t *testing.T) {
	const n = 200
	grid := make([]int64, n)
	t0 := time.Now().Truncate(time.Hour).Add(-2 * time.Hour).UnixMilli()
	for i := range grid {
		grid[i] = t0 + int64(i)*15000
	}
	nan := math.NaN()
	gen, spec, first, second, other := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		gen[i], spec[i], other[i], first[i], second[i] = 5, 1, 1, nan, nan
		if i < 80 {
			first[i] = 1 // v1 runs, then the model scales to zero at 78
		}
		if i >= 78 {
			gen[i], spec[i] = 6, 0
		}
		if i >= 148 {
			gen[i], spec[i] = 7, 1 // and back to one replica, still v1
		}
		if i >= 150 {
			second[i] = 1
		}
	}
	pods := func() model.Matrix {
		return model.Matrix{
			series(map[string]string{"namespace": "ns", "pod": "m-abc12-aaaaa", "label_app": "m", "label_version": "v1"}, grid, first),
			series(map[string]string{"namespace": "ns", "pod": "m-abc12-bbbbb", "label_app": "m", "label_version": "v1"}, grid, second),
			series(map[string]string{"namespace": "ns", "pod": "o-1", "label_app": "o", "label_version": "x"}, grid, other),
		}
	}
	for _, withGenerations := range []bool{true, false} {
		in := &kubeInput{grid: grid, modelLabels: []string{"label_app"}, versionLabels: []string{"label_version"}, merge: 10 * time.Minute,
			modelOf: func(d string) string { return d }, podLabels: pods()}
		if withGenerations {
			in.generation = model.Matrix{series(map[string]string{"namespace": "ns", "deployment": "m"}, grid, gen)}
			in.spec = model.Matrix{series(map[string]string{"namespace": "ns", "deployment": "m"}, grid, spec)}
		}
		for _, e := range deriveKubeEvents(in) {
			if e.Kind == correlate.KindDeploy {
				t.Errorf("generations %v: %s %q at %s", withGenerations, e.Kind, e.Summary, e.Time.Format("15:04:05"))
			}
		}
	}
}

// A replica curve's node is the pod's node from kube-state-metrics, not
// the series' own label: DCGM's Hostname is the exporter pod's name when
// it runs without NODE_NAME, and GPU curves then sat on a "node" no other
// curve, fault or pod placement knows.
func TestReplicaCurveNodeFromThePodJoin(t *testing.T) {
	from := time.Now().Truncate(time.Minute).Add(-time.Hour)
	w := window{from, from.Add(time.Hour)}
	m := model.Matrix{series(map[string]string{"pod": "chat-7b-1", "Hostname": "nvidia-dcgm-exporter-x7k2p"},
		[]int64{from.Add(time.Minute).UnixMilli()}, []float64{80})}
	q := Query{Role: correlate.RoleGPUUtil, Level: correlate.LevelReplica, Labels: LabelMap{Replica: "pod", Node: "Hostname"}}
	out, _, _, _ := curvesFrom(q, m, newPodIndex(map[string]podMeta{"prod/chat-7b-1": {Model: "chat-7b", Version: "v1", Node: "gpu-node-3"}}), nil, w)
	if len(out) != 1 || out[0].curve.Scope.Node != "gpu-node-3" || out[0].curve.Scope.Model != "chat-7b" {
		t.Fatalf("curves %+v, want chat-7b-1 on gpu-node-3", out)
	}
}

// A rollout that also changed the replica count, its new pods first seen
// in the next window: the first window takes the generation bump for the
// scale (no new version yet), the next derives the deploy in its context
// — and stores it. It was only refreshed there, never inserted: lost.
func TestRolloutAcrossAWindowBorderIsStored(t *testing.T) {
	const step = 15 * time.Second
	merge := 10 * time.Minute
	wFrom := time.Now().Truncate(time.Hour).Add(-time.Hour)
	qFrom := wFrom.Add(-3 * merge)
	n := int((3*merge + 30*time.Minute) / step)
	grid := make([]int64, n)
	for i := range grid {
		grid[i] = qFrom.Add(time.Duration(i) * step).UnixMilli()
	}
	at := func(t time.Time) int { return int(t.Sub(qFrom) / step) }
	bump, newPods := at(wFrom.Add(-time.Minute)), at(wFrom.Add(30*time.Second))
	nan := math.NaN()
	gen, spec, v1, v2 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		gen[i], spec[i], v1[i], v2[i] = 3, 2, 1, nan
		if i >= bump {
			gen[i], spec[i] = 4, 3 // image and replicas in one helm upgrade
		}
		if i >= newPods {
			v1[i], v2[i] = nan, 1
		}
	}
	in := &kubeInput{grid: grid, modelLabels: []string{"label_app"}, versionLabels: []string{"label_version"}, merge: merge, modelOf: func(d string) string { return d },
		generation: model.Matrix{series(map[string]string{"namespace": "ns", "deployment": "m"}, grid, gen)},
		spec:       model.Matrix{series(map[string]string{"namespace": "ns", "deployment": "m"}, grid, spec)},
		podLabels: model.Matrix{
			series(map[string]string{"namespace": "ns", "pod": "m-a-1", "label_app": "m", "label_version": "v1"}, grid, v1),
			series(map[string]string{"namespace": "ns", "pod": "m-b-1", "label_app": "m", "label_version": "v2"}, grid, v2),
		}}
	stored, _ := splitKubeEvents(deriveKubeEvents(in), qFrom.Add(merge), window{wFrom, wFrom.Add(30 * time.Minute)})
	found := false
	for _, e := range stored {
		found = found || e.Kind == correlate.KindDeploy && e.Version == "v2"
	}
	if !found {
		t.Errorf("the rollout to v2 is not stored: %+v", stored)
	}
}

// A StatefulSet's rollout deletes and recreates each pod under its name:
// the pod's start time changes and its restart counter begins again at 0.
// The second life's start was not derived (only a series' first start
// time was read), and its first restart had the id of the first life's
// (namespace, pod, container, count), so storing it moved that restart to
// the new time: one of the two was lost from the timeline.
func TestStatefulSetPodRecreated(t *testing.T) {
	const n = 60
	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	in := &kubeInput{merge: 10 * time.Minute, modelOf: func(s string) string { return s }}
	for i := range n {
		in.grid = append(in.grid, base.Add(time.Duration(i)*15*time.Second).UnixMilli())
	}
	nan := math.NaN()
	firstLife := float64(base.Add(-time.Hour).Unix())
	secondLife := float64(base.Add(30*15*time.Second - 10*time.Second).Unix())
	start, restarts, other := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		other[i] = firstLife // another pod's start: the data's start is known
		switch {
		case i < 25: // first life, restarts once at step 5
			start[i], restarts[i] = firstLife, 0
			if i >= 5 {
				restarts[i] = 1
			}
		case i < 30: // deleted by the rollout
			start[i], restarts[i] = nan, nan
		default: // second life, restarts once at step 45
			start[i], restarts[i] = secondLife, 0
			if i >= 45 {
				restarts[i] = 1
			}
		}
	}
	pod := map[string]string{"namespace": "prod", "pod": "llm-0"}
	in.podStart = model.Matrix{series(pod, in.grid, start), series(map[string]string{"namespace": "prod", "pod": "llm-1"}, in.grid, other)}
	in.restarts = model.Matrix{series(map[string]string{"namespace": "prod", "pod": "llm-0", "container": "server"}, in.grid, restarts)}
	var starts, restartIDs []string
	for _, e := range deriveKubeEvents(in) {
		switch e.Kind {
		case correlate.KindReplicaStart:
			starts = append(starts, e.Time.Format(time.RFC3339))
		case correlate.KindReplicaRestart:
			restartIDs = append(restartIDs, e.ID)
		}
	}
	if want := time.Unix(int64(secondLife), 0).UTC().Format(time.RFC3339); len(starts) != 1 || starts[0] != want {
		t.Errorf("replica starts %v, want the second life's at %s", starts, want)
	}
	if len(restartIDs) != 2 || restartIDs[0] == restartIDs[1] {
		t.Errorf("restart ids %v: want two distinct", restartIDs)
	}
}
