package pull

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// t0 starts the fixtures backfilled into Prometheus: 06:00 two days before
// the test clock (Prometheus and its look-back read the real clock).
var t0 = testclock.Now().Truncate(24 * time.Hour).Add(-2*24*time.Hour + 6*time.Hour)

// tpod is a replica of the test fleets: 10 requests/s in batches of 4,
// every request 90 ms end to end (so all of them fall in the (80 ms,
// 100 ms] bucket, where histogram_quantile interpolates linearly: P(q) =
// 80 + 20·q ms), 5 ms in every stage, two queued, its GPU half busy.
func tpod(name, model, version, node string, from, to int) sim.ScriptPod {
	return sim.ScriptPod{Name: name, Model: model, Version: version, Node: node, From: from, To: to,
		QPS: 10, Batch: 4, LatencyMs: 90, StageMs: 5, Queue: 2, GPUUtil: 50, GPUMemUsedMiB: 30000, GPUMemFreeMiB: 50000}
}

// tnode is a node a quarter busy: CPU, memory, and 1 MB/s received.
func tnode(name string) sim.ScriptNode {
	return sim.ScriptNode{Name: name, CPUBusy: 0.25, MemUsed: 0.25, NetRx: 1e6}
}

// eventsFleet has, in one hour at 15 s: a rollout of chat v1 → v2 (step
// 80), a manual scale-down of embed that also bumps its generation (step
// 100), an HPA scale-up of chat followed by its spec (140, 142) and the new
// replica (144), a NotReady flap of n3 (170–180) and two restarts of one
// chat replica (190, 200).
func eventsFleet() *sim.Script {
	restarting := tpod("chat-bbbb-1", "chat", "v2", "n1", 80, 240)
	restarting.Restarts = []int{190, 200}
	flapping := tnode("n3")
	flapping.NotReady = [][2]int{{170, 180}}
	return &sim.Script{
		Start: t0, Step: 15 * time.Second, Steps: 240,
		Nodes: []sim.ScriptNode{tnode("n1"), tnode("n2"), flapping},
		Pods: []sim.ScriptPod{
			tpod("chat-aaaa-1", "chat", "v1", "n1", 0, 90),
			tpod("chat-aaaa-2", "chat", "v1", "n2", 0, 90),
			restarting,
			tpod("chat-bbbb-2", "chat", "v2", "n3", 80, 240),
			tpod("chat-bbbb-3", "chat", "v2", "n2", 144, 240),
			tpod("embed-cccc-1", "embed", "v5", "n2", 0, 240),
			tpod("embed-cccc-2", "embed", "v5", "n3", 0, 100),
		},
		Deployments: []sim.ScriptDeployment{
			{Name: "chat", Generation: map[int]float64{0: 1, 80: 2}, Spec: map[int]float64{0: 2, 142: 3}, HPA: map[int]float64{0: 2, 140: 3}},
			{Name: "embed", Generation: map[int]float64{0: 1, 100: 2}, Spec: map[int]float64{0: 2, 100: 1}},
		},
	}
}

// wantFleetEvents is what eventsFleet must yield, and nothing else.
var wantFleetEvents = []string{
	"deploy@80 model=chat version=v2",
	"replica_start@80 model=chat version=v2 replica=chat-bbbb-1 node=n1",
	"replica_start@80 model=chat version=v2 replica=chat-bbbb-2 node=n3",
	"scale_down@100 model=embed",
	"scale_up@140 model=chat",
	"replica_start@144 model=chat version=v2 replica=chat-bbbb-3 node=n2",
	"node_fault@170 node=n3",
	"node_recovered@180 node=n3",
	"replica_restart@190 model=chat version=v2 replica=chat-bbbb-1 node=n1",
	"replica_restart@200 model=chat version=v2 replica=chat-bbbb-1 node=n1",
}

func runFleet(t testing.TB, f *sim.Script) *promtest.Prometheus {
	t.Helper()
	var buf bytes.Buffer
	if err := f.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	return promtest.Run(t, &buf)
}

func newPuller(t testing.TB, st *store.Store, url, yaml string, now time.Time) *Puller {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(cfg, Backend{URL: url}, st, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func eventStrings(t testing.TB, st *store.Store, f *sim.Script) []string {
	t.Helper()
	evs, err := st.Events(context.Background(), store.EventFilter{From: f.Start.Add(-24 * time.Hour), To: f.End().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		step := int(e.Time.Sub(f.Start) / f.Step)
		out = append(out, fmt.Sprintf("%s@%d %s", e.Kind, step, e.Scope.String()))
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestKubeEventsFromHistoryAndRepull(t *testing.T) {
	f := eventsFleet()
	prom := runFleet(t, f)
	st, pool := storetest.NewWithPool(t)
	ctx := context.Background()
	p := newPuller(t, st, prom.URL, "", f.End())

	pr, err := p.History(ctx, f.Start, f.End(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr.SourcesDone != pr.Sources || pr.Points == 0 {
		t.Fatalf("progress = %+v", pr)
	}
	got := eventStrings(t, st, f)
	if strings.Join(got, "\n") != strings.Join(sortedCopy(wantFleetEvents), "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortedCopy(wantFleetEvents), "\n"))
	}
	evs, _ := st.Events(ctx, store.EventFilter{From: f.Start, To: f.End().Add(time.Minute), Kinds: []correlate.EventKind{correlate.KindDeploy, correlate.KindScaleUp, correlate.KindScaleDown}})
	for _, e := range evs {
		switch e.Kind {
		case correlate.KindDeploy:
			if e.Attrs["from_version"] != "v1" || e.Attrs["to_version"] != "v2" || !strings.Contains(e.Summary, "v1 → v2") {
				t.Errorf("deploy = %+v", e)
			}
		case correlate.KindScaleDown: // embed has no autoscaler: no limits
			if _, ok := e.Attrs["hpa_max_replicas"]; ok {
				t.Errorf("scale_down of a deployment without an autoscaler has limits: %+v", e)
			}
		case correlate.KindScaleUp:
			// The script's autoscaler: min its initial 2, max twice that.
			// Stored numbers come back as written (json.Number).
			num := func(k string) string { return fmt.Sprint(e.Attrs[k]) }
			if num("from") != "2" || num("to") != "3" || !strings.Contains(e.Summary, "2 → 3") ||
				num("hpa_min_replicas") != "2" || num("hpa_max_replicas") != "4" {
				t.Errorf("scale_up = %+v", e)
			}
		}
	}

	// The pool's state as model curves: desired replicas from the
	// deployment spec, the autoscaler's limits where there is one.
	pools, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute),
		Roles: []correlate.Role{correlate.RoleReplicas, correlate.RoleReplicasMin, correlate.RoleReplicasMax}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(c correlate.Curve, step int) float64 {
		tm := f.Start.Add(time.Duration(step) * f.Step).UnixMilli()
		for _, pt := range c.Points {
			if pt.T == tm {
				return pt.V
			}
		}
		return -1
	}
	var poolRows []string
	for _, c := range pools {
		if c.Level != correlate.LevelModel {
			t.Errorf("pool curve at level %s: %+v", c.Level, c.Scope)
		}
		poolRows = append(poolRows, fmt.Sprintf("%s %s %g→%g", c.Role, c.Scope.Model, at(c, 10), at(c, 190)))
	}
	sort.Strings(poolRows)
	if want := "replicas chat 2→3|replicas embed 2→1|replicas_max chat 4→4|replicas_min chat 2→2"; strings.Join(poolRows, "|") != want {
		t.Errorf("pool curves %q, want %q", strings.Join(poolRows, "|"), want)
	}

	// Re-pulling the same range leaves exactly the same rows.
	var points, distinct int
	count := func() {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (series_id, time)) FROM points`).Scan(&points, &distinct); err != nil {
			t.Fatal(err)
		}
	}
	count()
	before := points
	if _, err := p.History(ctx, f.Start, f.End(), nil); err != nil {
		t.Fatal(err)
	}
	count()
	if points != before || points != distinct {
		t.Fatalf("after re-pull: %d points (%d distinct), before %d", points, distinct, before)
	}
	if got2 := eventStrings(t, st, f); strings.Join(got2, "\n") != strings.Join(got, "\n") {
		t.Fatalf("events changed on re-pull:\n%s", strings.Join(got2, "\n"))
	}
}

// The live loop sees the same history in small steps; the events must be
// exactly those of one history pull, whatever the window edges cut.
func TestKubeEventsIncrementalMatchHistory(t *testing.T) {
	f := eventsFleet()
	prom := runFleet(t, f)
	st := storetest.New(t)
	ctx := context.Background()
	now := f.Start.Add(20 * time.Minute)
	cfg, err := ParseConfig("test.yaml", []byte("lookback: 20m\ndelay: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the events source: curves are covered elsewhere and slow this down.
	cfg.Queries = nil
	p, err := New(cfg, Backend{URL: prom.URL}, st, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for ; !now.After(f.End().Add(7 * time.Minute)); now = now.Add(7 * time.Minute) {
		if err := p.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventStrings(t, st, f); strings.Join(got, "\n") != strings.Join(sortedCopy(wantFleetEvents), "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortedCopy(wantFleetEvents), "\n"))
	}
	evs, _ := st.Events(ctx, store.EventFilter{From: f.Start, To: f.End(), Kinds: []correlate.EventKind{correlate.KindDeploy}})
	if len(evs) != 1 || evs[0].Version != "v2" {
		t.Fatalf("deploy = %+v", evs)
	}
}

func curveAt(t testing.TB, cs []correlate.Curve, key string, at time.Time) float64 {
	t.Helper()
	for _, c := range cs {
		if c.Key() != key {
			continue
		}
		for _, p := range c.Points {
			if p.T == at.UnixMilli() {
				return p.V
			}
		}
		t.Fatalf("%s has no point at %s (%d points)", key, at.Format(time.RFC3339), len(c.Points))
	}
	keys := make([]string, 0, len(cs))
	for _, c := range cs {
		keys = append(keys, c.Key())
	}
	t.Fatalf("no curve %s; have:\n%s", key, strings.Join(keys, "\n"))
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestInferencePresetCurves(t *testing.T) {
	f := eventsFleet()
	prom := runFleet(t, f)
	st := storetest.New(t)
	ctx := context.Background()
	p := newPuller(t, st, prom.URL, "", f.End())
	if _, err := p.History(ctx, f.Start, f.End(), nil); err != nil {
		t.Fatal(err)
	}
	cs, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	at := f.Start.Add(40 * f.Step) // before the rollout: chat has two v1 replicas
	for key, want := range map[string]float64{
		"latency_p99|model|model=chat":                                                          99.8,
		"latency_p95|model|model=chat":                                                          99,
		"latency_p50|model|model=chat":                                                          90,
		"latency_p99|version|model=chat version=v1":                                             99.8,
		"latency_p99|replica|model=chat version=v1 replica=chat-aaaa-1 node=n1":                 99.8,
		"qps|model|model=chat":                                                                  20,
		"qps|replica|model=chat version=v1 replica=chat-aaaa-2 node=n2":                         10,
		"queue|model|model=chat":                                                                4,
		"batch_size|model|model=chat":                                                           4,
		"stage_time|model|model=chat|stage=exec":                                                5,
		"stage_time|replica|model=chat version=v1 replica=chat-aaaa-1 node=n1|stage=batch_wait": 5,
		// DCGM knows only pod and Hostname: model and version come from
		// the kube_pod_labels join.
		"gpu_util|replica|model=chat version=v1 replica=chat-aaaa-1 node=n1":       50,
		"gpu_mem_used|replica|model=chat version=v1 replica=chat-aaaa-1 node=n1":   30000,
		"gpu_mem_free|replica|model=embed version=v5 replica=embed-cccc-1 node=n2": 50000,
		"gpu_util|node|node=n2":     50,
		"node_cpu|node|node=n1":     0.25,
		"node_memory|node|node=n3":  0.25,
		"node_network|node|node=n2": 1e6,
	} {
		if got := curveAt(t, cs, key, at); !near(got, want) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	for _, c := range cs {
		if c.Role == correlate.RoleErrorRate {
			t.Errorf("error_rate curve without an errors metric: %s", c.Key())
		}
		if c.Level == correlate.LevelReplica && (c.Scope.Model == "" || c.Scope.Version == "" || c.Scope.Node == "") {
			t.Errorf("replica curve without model/version/node: %s", c.Key())
		}
	}
}

// An interrupted history pull resumes from each source's committed
// progress instead of starting over, and ends with the same data.
func TestHistoryResumes(t *testing.T) {
	f := eventsFleet()
	prom := runFleet(t, f)
	st := storetest.New(t)
	p := newPuller(t, st, prom.URL, "max_chunk: 10m\nparallelism: 2\n", f.End())
	ctx, cancel := context.WithCancel(context.Background())
	first, err := p.History(ctx, f.Start, f.End(), func(pr Progress) {
		if pr.ChunksDone >= 20 {
			cancel()
		}
	})
	if err == nil || first.ChunksDone >= first.Chunks {
		t.Fatalf("first run was not interrupted: %+v, %v", first, err)
	}
	second, err := p.History(context.Background(), f.Start, f.End(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Chunks > first.Chunks-first.ChunksDone {
		t.Fatalf("resumed run planned %d chunks; %d of %d were already done", second.Chunks, first.ChunksDone, first.Chunks)
	}
	if got := eventStrings(t, st, f); strings.Join(got, "\n") != strings.Join(sortedCopy(wantFleetEvents), "\n") {
		t.Fatalf("events after resume:\n%s", strings.Join(got, "\n"))
	}
	cs, err := st.Curves(context.Background(), store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute),
		Roles: []correlate.Role{correlate.RoleNodeMemory}, Scope: correlate.Scope{Node: "n2"}})
	if err != nil || len(cs) != 1 || len(cs[0].Points) != f.Steps {
		t.Fatalf("node_memory after resume: %v, %v", cs, err)
	}
	// A finished range pulled again is a new, complete job.
	third, err := p.History(context.Background(), f.Start, f.End(), nil)
	if err != nil || third.Chunks != first.Chunks {
		t.Fatalf("re-pull: %+v, %v; want all %d chunks", third, err, first.Chunks)
	}
}

func TestChunksRespectPointLimitAndGrid(t *testing.T) {
	step := 15 * time.Second
	from := t0.Add(-5*24*time.Hour + 7*time.Second)
	to := from.Add(30 * 24 * time.Hour)
	cs := chunks(from, to, step, 0)
	if len(cs) < 2 {
		t.Fatalf("%d chunks", len(cs))
	}
	for i, c := range cs {
		if n := c.to.Sub(c.from) / step; n > maxPointsPerSeries {
			t.Fatalf("chunk %d has %d points", i, n)
		}
		if c.from.UnixNano()%int64(step) != 0 || c.to.UnixNano()%int64(step) != 0 {
			t.Fatalf("chunk %d off the grid: %v", i, c)
		}
		if i > 0 && !c.from.Equal(cs[i-1].to) {
			t.Fatalf("chunks %d and %d do not meet", i-1, i)
		}
	}
	if !cs[0].from.Equal(alignUp(from, step)) || !cs[len(cs)-1].to.Equal(alignUp(to, step)) {
		t.Fatalf("chunks cover %v – %v", cs[0].from, cs[len(cs)-1].to)
	}
	if got := chunks(from, from.Add(3*time.Hour), step, time.Hour); len(got) != 4 {
		t.Fatalf("3 h in 1 h chunks from an unaligned start: %d chunks", len(got))
	}
}

// kube-state-metrics 1.x named the autoscaler's series kube_hpa_* with
// the label hpa (2.0 renamed both): its limits are read as 2.x's, so "could
// the pool still grow" is answered on older clusters too.
func TestKubeStateMetrics1AutoscalerNames(t *testing.T) {
	f, st := pullEditedFleet(t, strings.NewReplacer("kube_horizontalpodautoscaler_", "kube_hpa_", "horizontalpodautoscaler=", "hpa=").Replace)
	ctx := context.Background()
	pools, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute),
		Roles: []correlate.Role{correlate.RoleReplicasMin, correlate.RoleReplicasMax}, Scope: correlate.Scope{Model: "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, c := range pools {
		if len(c.Points) > 0 {
			roles = append(roles, fmt.Sprintf("%s %g", c.Role, c.Points[len(c.Points)-1].V))
		}
	}
	sort.Strings(roles)
	if want := "replicas_max 4|replicas_min 2"; strings.Join(roles, "|") != want {
		t.Errorf("autoscaler limits from kube_hpa_*: %q, want %q", strings.Join(roles, "|"), want)
	}
}

// kube-state-metrics scraped without honorLabels (the standalone chart's
// ServiceMonitor default, bitnami's kube-prometheus): the workload's
// namespace, pod and container are exported_namespace, exported_pod and
// exported_container, namespace, pod and container being
// kube-state-metrics' own. Every pod of the cluster was one pod
// ("monitoring/kube-state-metrics-0"): no replica starts or restarts, and
// events named kube-state-metrics' namespace. They are the fleet's events
// as with honorLabels, in the workload's namespace and container.
func TestKubeEventsKubeStateMetricsWithoutHonorLabels(t *testing.T) {
	own := regexp.MustCompile(`([{,])(namespace|pod|container)="`)
	f, st := pullEditedFleet(t, func(om string) string {
		lines := strings.Split(om, "\n")
		for i, l := range lines {
			if name, labels, ok := strings.Cut(l, "{"); ok && strings.HasPrefix(name, "kube_") {
				lines[i] = name + `{namespace="monitoring",pod="kube-state-metrics-0",container="kube-state-metrics",` +
					`job="kube-state-metrics",instance="10.2.0.3:8080",` + own.ReplaceAllString("{"+labels, "${1}exported_${2}=\"")[1:]
			}
		}
		return strings.Join(lines, "\n")
	})
	ctx := context.Background()
	checkFleetEvents(t, st, f)
	evs, err := st.Events(ctx, store.EventFilter{From: f.Start, To: f.End().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if ns, ok := e.Attrs["namespace"]; ok && ns != "inference" {
			t.Errorf("%s %s: namespace %v, want the workload's", e.Kind, e.Summary, ns)
		}
		if c, ok := e.Attrs["container"]; ok && c != "model-server" {
			t.Errorf("%s %s: container %v, want the workload's", e.Kind, e.Summary, c)
		}
	}
	// The replica curves join their pods' model, version and node too.
	cs, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute), Roles: []correlate.Role{correlate.RoleGPUUtil}})
	if err != nil {
		t.Fatal(err)
	}
	curveAt(t, cs, "gpu_util|replica|model=chat version=v2 replica=chat-bbbb-3 node=n2", f.Start.Add(200*f.Step))
}

// A fleet labelled as Kubernetes recommends (app.kubernetes.io/name and
// app.kubernetes.io/version, as Helm charts set them) rather than app and
// version: its rollouts carry their versions and its replicas their model,
// as with app and version. They had none: a deploy without a version, and
// replica starts and restarts of no model.
func TestKubeEventsRecommendedLabels(t *testing.T) {
	f, st := pullEditedFleet(t, strings.NewReplacer("label_app=", "label_app_kubernetes_io_name=", "label_version=", "label_app_kubernetes_io_version=").Replace)
	checkFleetEvents(t, st, f)
}

// One series whose curve key Postgres cannot index (a 3,000-character
// model label that does not compress: the unique index takes ~2.7 kB)
// failed EnsureSeries for the whole chunk, every round: the query's
// healthy series were never stored again. It is now skipped alone.
func TestLongLabelSkippedAlone(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	long := make([]byte, 3000)
	x := uint32(12345)
	for i := range long {
		x = x*1664525 + 1013904223
		long[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[x>>24%36]
	}
	var om strings.Builder
	om.WriteString("# TYPE p99_ms gauge\n")
	for i := range 480 {
		ts := start.Add(time.Duration(i) * 15 * time.Second).Unix()
		fmt.Fprintf(&om, "p99_ms{model=\"healthy\"} 100 %d\np99_ms{model=\"%s\"} 100 %d\n", ts, long, ts)
	}
	om.WriteString("# EOF\n")
	prom := promtest.Run(t, strings.NewReader(om.String()))
	st := storetest.New(t)
	p := newPuller(t, st, prom.URL, "lookback: 1h\npresets: []\nqueries:\n  - {role: latency_p99, level: model, labels: {model: model}, expr: p99_ms}\n", start.Add(90*time.Minute))
	if err := p.Tick(context.Background()); err != nil {
		t.Fatalf("round: %v", err)
	}
	cs, err := st.Curves(context.Background(), store.CurveFilter{From: start, To: start.Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Scope.Model != "healthy" || len(cs[0].Points) == 0 {
		t.Errorf("stored %d curves, want the healthy model's alone", len(cs))
	}
}

// A label with a NUL byte (which Postgres' text and jsonb refuse) or
// invalid UTF-8 makes its series unstorable, not the chunk.
func TestUnstorableLabelsSkipped(t *testing.T) {
	from := time.Now().Truncate(time.Minute).Add(-time.Hour)
	w := window{from, from.Add(time.Hour)}
	at := []int64{from.Add(time.Minute).UnixMilli()}
	m := model.Matrix{
		series(map[string]string{"model": "ok"}, at, []float64{1}),
		series(map[string]string{"model": "nul", "path": "a\x00b"}, at, []float64{1}),
		series(map[string]string{"model": "bad\xffutf8"}, at, []float64{1}),
	}
	q := Query{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Labels: LabelMap{Model: "model"}}
	out, _, _, invalid := curvesFrom(q, m, podIndex{}, nil, w)
	if len(out) != 1 || out[0].curve.Scope.Model != "ok" || invalid != 2 {
		t.Errorf("%d curves, %d invalid; want the ok model's alone, 2 invalid", len(out), invalid)
	}
}

// The same fleet run as StatefulSets (kube_statefulset_metadata_generation
// and kube_statefulset_replicas, pods created by a StatefulSet): its
// rollouts and scaling are the same events. They were never seen: only
// Deployments' series were read.
func TestKubeEventsStatefulSets(t *testing.T) {
	owner := regexp.MustCompile(`created_by_kind="ReplicaSet",created_by_name="([a-z]+)-[a-z0-9]+"`)
	f, st := pullEditedFleet(t, func(om string) string {
		lines := strings.Split(om, "\n")
		for i, l := range lines {
			if strings.Contains(l, "kube_deployment_metadata_generation") || strings.Contains(l, "kube_deployment_spec_replicas") {
				l = strings.NewReplacer("kube_deployment_metadata_generation", "kube_statefulset_metadata_generation",
					"kube_deployment_spec_replicas", "kube_statefulset_replicas", `deployment="`, `statefulset="`).Replace(l)
			}
			lines[i] = owner.ReplaceAllString(l, `created_by_kind="StatefulSet",created_by_name="$1"`)
		}
		sts := strings.Join(lines, "\n")
		if strings.Contains(sts, "kube_deployment_") || !strings.Contains(sts, `created_by_kind="StatefulSet"`) {
			t.Fatal("the fixture still has Deployments")
		}
		return sts
	})
	checkFleetEvents(t, st, f)
}

// pullEditedFleet pulls the events fleet's history from a Prometheus
// holding its OpenMetrics text as edit rewrites it (another version of
// kube-state-metrics, another scrape, other workloads).
func pullEditedFleet(t *testing.T, edit func(om string) string) (*sim.Script, *store.Store) {
	t.Helper()
	f := eventsFleet()
	var buf bytes.Buffer
	if err := f.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	prom := promtest.Run(t, strings.NewReader(edit(buf.String())))
	st := storetest.New(t)
	p := newPuller(t, st, prom.URL, "", f.End())
	if _, err := p.History(context.Background(), f.Start, f.End(), nil); err != nil {
		t.Fatal(err)
	}
	return f, st
}

// checkFleetEvents checks that the fleet's pull stored wantFleetEvents.
func checkFleetEvents(t *testing.T, st *store.Store, f *sim.Script) {
	t.Helper()
	if got := eventStrings(t, st, f); strings.Join(got, "\n") != strings.Join(sortedCopy(wantFleetEvents), "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortedCopy(wantFleetEvents), "\n"))
	}
}
