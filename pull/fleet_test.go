package pull

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// tFleet is a small inference fleet for tests, written as OpenMetrics with
// the series names and labels the real exporters use (DESIGN §6): the
// inference server's histogram and stage summary, DCGM, node_exporter and
// kube-state-metrics.
type tFleet struct {
	start time.Time
	step  time.Duration
	steps int
	pods  []tPod
	nodes []string
	// notReady holds, per node, step ranges [from, to) with Ready=false.
	notReady map[string][][2]int
	deploys  []tDeploy
	// lo, hi restrict the output to steps [lo, hi) (hi 0: all), so a big
	// fleet can be written one backfill window at a time.
	lo, hi int
}

// tPod lives in steps [from, to); its requests all take latency seconds,
// which must lie in the bucket (0.05, 0.1] so quantiles are exact:
// histogram_quantile interpolates linearly inside the bucket, giving
// (50 + 50·q) ms for every quantile q.
type tPod struct {
	name, model, version, node string
	from, to                   int
	restarts                   []int // steps at which the restart counter goes up by one
	qps                        float64
	batch                      float64 // requests per batch
	stageMs                    float64 // every stage takes this long (ms)
	gpuUtil                    float64
}

// tDeploy is a deployment whose generation, spec replicas and HPA desired
// replicas change at given steps (the value at step 0 first).
type tDeploy struct {
	name                  string
	generation, spec, hpa []tChange // hpa nil: no HPA
}

type tChange struct {
	at    int
	value float64
}

func valueAt(cs []tChange, i int) float64 {
	v := math.NaN()
	for _, c := range cs {
		if c.at <= i {
			v = c.value
		}
	}
	return v
}

func (f *tFleet) ts(i int) int64 { return f.start.Add(time.Duration(i) * f.step).Unix() }

func (f *tFleet) end() time.Time { return f.start.Add(time.Duration(f.steps-1) * f.step) }

var tStages = []string{"gateway", "auth", "route", "queue", "batch_wait", "exec", "postprocess", "downstream"}

// write streams the fleet's OpenMetrics: family by family, each series in
// time order, "# EOF" at the end.
func (f *tFleet) write(out io.Writer) error {
	w := bufio.NewWriterSize(out, 1<<20)
	stepS := f.step.Seconds()
	podLabels := func(p tPod) string {
		return fmt.Sprintf(`model="%s",version="%s",pod="%s",node="%s",namespace="inference"`, p.model, p.version, p.name, p.node)
	}
	hi := f.hi
	if hi == 0 {
		hi = f.steps
	}
	// counter emits a counter per pod that grows by inc per step of life.
	counter := func(p tPod, series string, inc float64) {
		for i := max(p.from, f.lo); i < p.to && i < hi; i++ {
			fmt.Fprintf(w, "%s %g %d\n", series, inc*float64(i-p.from+1), f.ts(i))
		}
	}
	gauge := func(from, to int, series string, val func(i int) float64) {
		for i := max(from, f.lo); i < to && i < hi; i++ {
			if v := val(i); !math.IsNaN(v) {
				fmt.Fprintf(w, "%s %g %d\n", series, v, f.ts(i))
			}
		}
	}

	fmt.Fprintln(w, "# HELP inference_request_duration_seconds End-to-end inference request latency.")
	fmt.Fprintln(w, "# TYPE inference_request_duration_seconds histogram")
	for _, p := range f.pods {
		n := p.qps * stepS
		for _, le := range []string{"0.05", "0.1", "0.25", "+Inf"} {
			inc := n
			if le == "0.05" {
				inc = 0
			}
			counter(p, fmt.Sprintf(`inference_request_duration_seconds_bucket{%s,le="%s"}`, podLabels(p), le), inc)
		}
		counter(p, fmt.Sprintf(`inference_request_duration_seconds_count{%s}`, podLabels(p)), n)
		counter(p, fmt.Sprintf(`inference_request_duration_seconds_sum{%s}`, podLabels(p)), n*0.075)
	}
	fmt.Fprintln(w, "# TYPE inference_stage_duration_seconds summary")
	for _, p := range f.pods {
		n := p.qps * stepS
		for _, st := range tStages {
			counter(p, fmt.Sprintf(`inference_stage_duration_seconds_count{%s,stage="%s"}`, podLabels(p), st), n)
			counter(p, fmt.Sprintf(`inference_stage_duration_seconds_sum{%s,stage="%s"}`, podLabels(p), st), n*p.stageMs/1000)
		}
	}
	fmt.Fprintln(w, "# TYPE inference_batches counter")
	for _, p := range f.pods {
		counter(p, fmt.Sprintf(`inference_batches_total{%s}`, podLabels(p)), p.qps*stepS/p.batch)
	}
	fmt.Fprintln(w, "# TYPE inference_queue_size gauge")
	for _, p := range f.pods {
		gauge(p.from, p.to, fmt.Sprintf(`inference_queue_size{%s}`, podLabels(p)), func(int) float64 { return 2 })
	}
	for _, m := range []struct {
		name string
		val  func(p tPod) float64
	}{{"DCGM_FI_DEV_GPU_UTIL", func(p tPod) float64 { return p.gpuUtil }},
		{"DCGM_FI_DEV_FB_USED", func(tPod) float64 { return 30000 }},
		{"DCGM_FI_DEV_FB_FREE", func(tPod) float64 { return 50000 }}} {
		fmt.Fprintf(w, "# TYPE %s gauge\n", m.name)
		for gi, p := range f.pods {
			series := fmt.Sprintf(`%s{gpu="0",UUID="GPU-%04d",Hostname="%s",modelName="NVIDIA A100-SXM4-80GB",pod="%s",namespace="inference",container="server"}`,
				m.name, gi, p.node, p.name)
			v := m.val(p)
			gauge(p.from, p.to, series, func(int) float64 { return v })
		}
	}
	fmt.Fprintln(w, "# TYPE node_cpu_seconds counter")
	for _, n := range f.nodes {
		for _, mode := range []string{"idle", "user"} {
			frac := 0.75 // 25 % busy
			if mode == "user" {
				frac = 0.25
			}
			counter(tPod{from: 0, to: f.steps}, fmt.Sprintf(`node_cpu_seconds_total{node="%s",cpu="0",mode="%s"}`, n, mode), stepS*frac)
		}
	}
	fmt.Fprintln(w, "# TYPE node_network_receive_bytes counter")
	for _, n := range f.nodes {
		counter(tPod{from: 0, to: f.steps}, fmt.Sprintf(`node_network_receive_bytes_total{node="%s",device="eth0"}`, n), 1e6*stepS)
	}
	for _, m := range []struct {
		name string
		v    float64
	}{{"node_memory_MemAvailable_bytes", 384e9}, {"node_memory_MemTotal_bytes", 512e9}} {
		fmt.Fprintf(w, "# TYPE %s gauge\n", m.name)
		for _, n := range f.nodes {
			gauge(0, f.steps, fmt.Sprintf(`%s{node="%s"}`, m.name, n), func(int) float64 { return m.v })
		}
	}
	f.writeKube(w, gauge)
	if f.lo == 0 && f.hi == 0 {
		fmt.Fprintln(w, "# EOF")
	}
	return w.Flush()
}

func (f *tFleet) writeKube(w *bufio.Writer, gauge func(from, to int, series string, val func(int) float64)) {
	one := func(int) float64 { return 1 }
	fmt.Fprintln(w, "# TYPE kube_pod_info gauge")
	for _, p := range f.pods {
		rs := p.name[:strings.LastIndexByte(p.name, '-')]
		gauge(p.from, p.to, fmt.Sprintf(`kube_pod_info{namespace="inference",pod="%s",node="%s",created_by_kind="ReplicaSet",created_by_name="%s"}`, p.name, p.node, rs), one)
	}
	fmt.Fprintln(w, "# TYPE kube_pod_labels gauge")
	for _, p := range f.pods {
		gauge(p.from, p.to, fmt.Sprintf(`kube_pod_labels{namespace="inference",pod="%s",label_app="%s",label_version="%s"}`, p.name, p.model, p.version), one)
	}
	fmt.Fprintln(w, "# TYPE kube_pod_start_time gauge")
	for _, p := range f.pods {
		started := float64(f.ts(p.from))
		if p.from == 0 {
			started = float64(f.ts(0) - 86400) // running since the day before
		}
		gauge(p.from, p.to, fmt.Sprintf(`kube_pod_start_time{namespace="inference",pod="%s"}`, p.name), func(int) float64 { return started })
	}
	fmt.Fprintln(w, "# TYPE kube_pod_container_status_restarts counter")
	for _, p := range f.pods {
		gauge(p.from, p.to, fmt.Sprintf(`kube_pod_container_status_restarts_total{namespace="inference",pod="%s",container="server"}`, p.name),
			func(i int) float64 {
				n := 0
				for _, r := range p.restarts {
					if r <= i {
						n++
					}
				}
				return float64(n)
			})
	}
	for _, fam := range []struct {
		name, label string
		get         func(d tDeploy) []tChange
	}{
		{"kube_deployment_spec_replicas", "deployment", func(d tDeploy) []tChange { return d.spec }},
		{"kube_deployment_metadata_generation", "deployment", func(d tDeploy) []tChange { return d.generation }},
		{"kube_horizontalpodautoscaler_status_desired_replicas", "horizontalpodautoscaler", func(d tDeploy) []tChange { return d.hpa }},
	} {
		fmt.Fprintf(w, "# TYPE %s gauge\n", fam.name)
		for _, d := range f.deploys {
			if cs := fam.get(d); cs != nil {
				gauge(0, f.steps, fmt.Sprintf(`%s{namespace="inference",%s="%s"}`, fam.name, fam.label, d.name), func(i int) float64 { return valueAt(cs, i) })
			}
		}
	}
	fmt.Fprintln(w, "# TYPE kube_node_status_condition gauge")
	for _, n := range f.nodes {
		down := func(i int) bool {
			for _, r := range f.notReady[n] {
				if i >= r[0] && i < r[1] {
					return true
				}
			}
			return false
		}
		for _, status := range []string{"true", "false", "unknown"} {
			gauge(0, f.steps, fmt.Sprintf(`kube_node_status_condition{node="%s",condition="Ready",status="%s"}`, n, status), func(i int) float64 {
				if (status == "true") != down(i) && status != "unknown" {
					return 1
				}
				return 0
			})
		}
	}
}
