package sim

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Script is a fleet written down instead of simulated: replicas with fixed
// lifetimes and constant load, deployments whose generation, spec and HPA
// change at given steps, container restarts and nodes that go NotReady.
// Every request of a replica takes the same time, so a test can say
// exactly what a query over the metrics must return (all of a replica's
// requests land in one histogram bucket, where histogram_quantile
// interpolates linearly). WriteOpenMetrics exports it with the series of
// a simulated fleet (DESIGN §6).
type Script struct {
	Start       time.Time
	Step        time.Duration
	Steps       int
	Nodes       []ScriptNode
	Pods        []ScriptPod
	Deployments []ScriptDeployment
}

// ScriptNode is a GPU node with constant host load.
type ScriptNode struct {
	Name     string
	NotReady [][2]int // step ranges [from, to) with condition Ready=false
	CPUBusy  float64  // share of its CPU in user mode, 0..1
	MemUsed  float64  // share of its memory in use, 0..1
	NetRx    float64  // bytes received per second
}

// ScriptPod is one replica, alive in steps [From, To).
type ScriptPod struct {
	Name, Model, Version, Node string
	From, To                   int
	Restarts                   []int   // steps at which its restart counter goes up by one
	QPS                        float64 // requests per second
	Batch                      float64 // requests per batch
	LatencyMs                  float64 // every request's end-to-end time
	StageMs                    float64 // every stage's time per request
	Queue                      float64 // requests waiting
	GPUUtil                    float64 // percent
	GPUMemUsedMiB              float64
	GPUMemFreeMiB              float64
}

// ScriptDeployment is a deployment's timelines, each a value from a step
// on ({0: 2, 142: 3}: two replicas, three from step 142); HPA nil means it
// has no autoscaler.
type ScriptDeployment struct {
	Name                  string
	Generation, Spec, HPA map[int]float64
}

// End is the time of the last step.
func (s *Script) End() time.Time { return s.at(s.Steps - 1) }

func (s *Script) at(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Step) }

// WriteOpenMetrics writes every step, then "# EOF".
func (s *Script) WriteOpenMetrics(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := s.write(bw, 0, s.Steps); err != nil {
		return err
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteOpenMetricsWindow writes the steps in [lo, hi) without "# EOF",
// for a backfill one window at a time.
func (s *Script) WriteOpenMetricsWindow(w io.Writer, lo, hi time.Time) error {
	first := max(0, int((lo.Sub(s.Start)+s.Step-1)/s.Step))
	last := min(s.Steps, int((hi.Sub(s.Start)+s.Step-1)/s.Step))
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := s.write(bw, first, last); err != nil {
		return err
	}
	return bw.Flush()
}

// scriptWriter writes steps [lo, hi) of a script with omWriter's lines.
type scriptWriter struct {
	*omWriter
	s      *Script
	lo, hi int
	v      valBuf
}

func (s *Script) write(w *bufio.Writer, lo, hi int) error {
	o := &omWriter{w: w, ts: make([][]byte, s.Steps)}
	for i := range o.ts {
		o.ts[i] = strconv.AppendInt([]byte{' '}, s.at(i).Unix(), 10)
	}
	sw := &scriptWriter{omWriter: o, s: s, lo: lo, hi: hi}
	sw.inference()
	sw.gpu()
	sw.node()
	sw.kube()
	return o.err
}

// series writes name{labels} for the steps of [from, to) in the window
// that val has a value for (NaN: none).
func (w *scriptWriter) series(name string, labels []byte, extra string, from, to int, val func(i int) float64) {
	for i := max(from, w.lo); i < min(to, w.hi); i++ {
		if v := val(i); !math.IsNaN(v) {
			w.sample(name, labels, extra, w.v.float(v, 6), i)
		}
	}
}

// counter is a pod's counter growing by perStep in every step of its life.
func (w *scriptWriter) counter(p ScriptPod, name string, labels []byte, extra string, perStep float64) {
	w.series(name, labels, extra, p.From, p.To, func(i int) float64 { return perStep * float64(i-p.From+1) })
}

func scriptPodLabels(p ScriptPod) []byte {
	return labelSet("model", p.Model, "version", p.Version, "pod", p.Name, "node", p.Node, "namespace", namespace)
}

func (w *scriptWriter) inference() {
	step := w.s.Step.Seconds()
	w.family("inference_request_duration_seconds", "histogram", "End-to-end inference request latency, gateway entry to response.")
	for _, p := range w.s.Pods {
		lab, n, b := scriptPodLabels(p), p.QPS*step, bucketOf(p.LatencyMs/1000)
		for k, le := range leLabels {
			inc := 0.0
			if k >= b {
				inc = n
			}
			w.counter(p, "inference_request_duration_seconds_bucket", lab, le, inc)
		}
		w.counter(p, "inference_request_duration_seconds_count", lab, "", n)
		w.counter(p, "inference_request_duration_seconds_sum", lab, "", n*p.LatencyMs/1000)
	}
	w.family("inference_stage_duration_seconds", "summary", "Time spent per request stage.")
	for _, p := range w.s.Pods {
		lab, n := scriptPodLabels(p), p.QPS*step
		for k := 0; k < correlate.NumStages; k++ {
			extra := `stage="` + correlate.Stage(k).String() + `"`
			w.counter(p, "inference_stage_duration_seconds_count", lab, extra, n)
			w.counter(p, "inference_stage_duration_seconds_sum", lab, extra, n*p.StageMs/1000)
		}
	}
	w.family("inference_batches", "counter", "Batches executed by the model server.")
	for _, p := range w.s.Pods {
		w.counter(p, "inference_batches_total", scriptPodLabels(p), "", p.QPS*step/p.Batch)
	}
	w.family("inference_queue_size", "gauge", "Requests waiting in the model server's queue (mean over the scrape interval).")
	for _, p := range w.s.Pods {
		w.series("inference_queue_size", scriptPodLabels(p), "", p.From, p.To, func(int) float64 { return p.Queue })
	}
}

func (w *scriptWriter) gpu() {
	for _, m := range []struct {
		name, help string
		val        func(ScriptPod) float64
	}{
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(p ScriptPod) float64 { return p.GPUUtil }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(p ScriptPod) float64 { return p.GPUMemUsedMiB }},
		{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", func(p ScriptPod) float64 { return p.GPUMemFreeMiB }},
	} {
		w.family(m.name, "gauge", m.help)
		for k, p := range w.s.Pods {
			lab := labelSet("gpu", "0", "UUID", fmt.Sprintf("GPU-%04d", k), "modelName", gpuA100.name, "Hostname", p.Node,
				"pod", p.Name, "namespace", namespace, "container", "model-server")
			v := m.val(p)
			w.series(m.name, lab, "", p.From, p.To, func(int) float64 { return v })
		}
	}
}

func (w *scriptWriter) node() {
	step := w.s.Step.Seconds()
	all := ScriptPod{From: 0, To: w.s.Steps}
	w.family("node_cpu_seconds", "counter", "Seconds the CPUs spent in each mode.")
	for _, n := range w.s.Nodes {
		for mode, share := range map[string]float64{"idle": 1 - n.CPUBusy, "user": n.CPUBusy} {
			w.counter(all, "node_cpu_seconds_total", labelSet("node", n.Name, "cpu", "0", "mode", mode), "", share*step)
		}
	}
	const memBytes = 512 << 30
	for _, m := range []struct {
		name string
		val  func(ScriptNode) float64
	}{
		{"node_memory_MemAvailable_bytes", func(n ScriptNode) float64 { return (1 - n.MemUsed) * memBytes }},
		{"node_memory_MemTotal_bytes", func(ScriptNode) float64 { return memBytes }},
	} {
		w.family(m.name, "gauge", "Memory information field "+strings.TrimPrefix(m.name, "node_memory_")+".")
		for _, n := range w.s.Nodes {
			v := m.val(n)
			w.series(m.name, labelSet("node", n.Name), "", 0, w.s.Steps, func(int) float64 { return v })
		}
	}
	w.family("node_network_receive_bytes", "counter", "Network device statistic receive_bytes.")
	for _, n := range w.s.Nodes {
		w.counter(all, "node_network_receive_bytes_total", labelSet("node", n.Name, "device", "eth0"), "", n.NetRx*step)
	}
}

func (w *scriptWriter) kube() {
	one := func(int) float64 { return 1 }
	w.family("kube_pod_info", "gauge", "Information about pod.")
	for _, p := range w.s.Pods {
		rs := p.Name[:max(0, strings.LastIndexByte(p.Name, '-'))]
		w.series("kube_pod_info", labelSet("namespace", namespace, "pod", p.Name, "node", p.Node,
			"created_by_kind", "ReplicaSet", "created_by_name", rs), "", p.From, p.To, one)
	}
	w.family("kube_pod_labels", "gauge", "Kubernetes labels converted to Prometheus labels.")
	for _, p := range w.s.Pods {
		w.series("kube_pod_labels", labelSet("namespace", namespace, "pod", p.Name, "label_app", p.Model, "label_version", p.Version), "", p.From, p.To, one)
	}
	w.family("kube_pod_start_time", "gauge", "Start time in unix timestamp for a pod.")
	for _, p := range w.s.Pods {
		started := w.s.at(p.From)
		if p.From == 0 {
			started = started.Add(-24 * time.Hour) // running since the day before
		}
		w.series("kube_pod_start_time", labelSet("namespace", namespace, "pod", p.Name), "", p.From, p.To,
			func(int) float64 { return float64(started.Unix()) })
	}
	w.family("kube_pod_container_status_restarts", "counter", "The number of container restarts per container.")
	for _, p := range w.s.Pods {
		w.series("kube_pod_container_status_restarts_total", labelSet("namespace", namespace, "pod", p.Name, "container", "model-server"), "",
			p.From, p.To, func(i int) float64 {
				n := 0
				for _, r := range p.Restarts {
					if r <= i {
						n++
					}
				}
				return float64(n)
			})
	}
	for _, fam := range []struct {
		name, key, help string
		changes         func(ScriptDeployment) map[int]float64
	}{
		{"kube_deployment_spec_replicas", "deployment", "Number of desired pods for a deployment.", func(d ScriptDeployment) map[int]float64 { return d.Spec }},
		{"kube_deployment_metadata_generation", "deployment", "Sequence number representing a specific generation of the desired state.",
			func(d ScriptDeployment) map[int]float64 { return d.Generation }},
		{"kube_horizontalpodautoscaler_status_desired_replicas", "horizontalpodautoscaler", "Desired number of replicas of pods managed by this autoscaler.",
			func(d ScriptDeployment) map[int]float64 { return d.HPA }},
	} {
		w.family(fam.name, "gauge", fam.help)
		for _, d := range w.s.Deployments {
			if cs := fam.changes(d); cs != nil {
				w.series(fam.name, labelSet("namespace", namespace, fam.key, d.Name), "", 0, w.s.Steps, func(i int) float64 { return scriptValueAt(cs, i) })
			}
		}
	}
	// The autoscalers' spec limits: min the first desired replicas, max
	// twice that (or the most it ever desires), fixed for the script.
	for k, fam := range []struct{ name, help string }{
		{"kube_horizontalpodautoscaler_spec_min_replicas", "Lower limit for the number of pods that can be set by the autoscaler, default 1."},
		{"kube_horizontalpodautoscaler_spec_max_replicas", "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas."},
	} {
		w.family(fam.name, "gauge", fam.help)
		for _, d := range w.s.Deployments {
			if len(d.HPA) == 0 {
				continue
			}
			first := slices.Min(slices.Collect(maps.Keys(d.HPA)))
			lo, hi := hpaLimits(d.HPA[first], maps.Values(d.HPA))
			v := []float64{lo, hi}[k]
			w.series(fam.name, labelSet("namespace", namespace, "horizontalpodautoscaler", d.Name), "", 0, w.s.Steps, func(int) float64 { return v })
		}
	}
	w.family("kube_node_status_condition", "gauge", "The condition of a cluster node.")
	for _, n := range w.s.Nodes {
		down := func(i int) bool {
			for _, r := range n.NotReady {
				if i >= r[0] && i < r[1] {
					return true
				}
			}
			return false
		}
		for _, st := range []string{"true", "false", "unknown"} {
			w.series("kube_node_status_condition", labelSet("node", n.Name, "condition", "Ready", "status", st), "", 0, w.s.Steps, func(i int) float64 {
				if st != "unknown" && (st == "true") != down(i) {
					return 1
				}
				return 0
			})
		}
	}
}

// hpaLimits are a simulated autoscaler's min and max replicas: min its
// initial desired replicas, max twice that or the most it ever desires.
// Deterministic (no random draw), so no simulated fleet changes.
func hpaLimits(initial float64, desired iter.Seq[float64]) (lo, hi float64) {
	lo, hi = initial, 2*initial
	for v := range desired {
		hi = max(hi, v)
	}
	return lo, hi
}

// scriptValueAt is the value in force at step i (NaN before the first change).
func scriptValueAt(changes map[int]float64, i int) float64 {
	v, at := math.NaN(), -1
	for step, x := range changes {
		if step <= i && step > at {
			v, at = x, step
		}
	}
	return v
}
