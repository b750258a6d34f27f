package pull

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// omBuilder writes OpenMetrics families of constant-rate counters and
// constant gauges over n steps of 15 s from t0.
type omBuilder struct {
	b     strings.Builder
	steps int
}

func (o *omBuilder) family(name, typ string) { fmt.Fprintf(&o.b, "# TYPE %s %s\n", name, typ) }

// counter writes a series growing by perSec per second.
func (o *omBuilder) counter(series string, perSec float64) {
	for i := 0; i < o.steps; i++ {
		fmt.Fprintf(&o.b, "%s %g %d\n", series, perSec*15*float64(i), t0.Add(time.Duration(i)*15*time.Second).Unix())
	}
}

func (o *omBuilder) gauge(series string, v float64) {
	for i := 0; i < o.steps; i++ {
		fmt.Fprintf(&o.b, "%s %g %d\n", series, v, t0.Add(time.Duration(i)*15*time.Second).Unix())
	}
}

func (o *omBuilder) run(t testing.TB) *promtest.Prometheus {
	o.b.WriteString("# EOF\n")
	return promtest.Run(t, strings.NewReader(o.b.String()))
}

func pullPreset(t *testing.T, prom *promtest.Prometheus, yaml string, steps int) map[string]float64 {
	t.Helper()
	st := storetest.New(t)
	end := t0.Add(time.Duration(steps-1) * 15 * time.Second)
	p := newPuller(t, st, prom.URL, yaml, end)
	if err := p.config().Validate(context.Background(), Backend{URL: prom.URL}, end); err != nil {
		t.Fatal(err)
	}
	if _, err := p.History(context.Background(), t0, end, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := st.Curves(context.Background(), store.CurveFilter{From: t0, To: end.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The value of each curve in the middle of the range, by key.
	mid := t0.Add(time.Duration(steps/2) * 15 * time.Second).UnixMilli()
	out := map[string]float64{}
	for _, c := range cs {
		for _, pt := range c.Points {
			if pt.T == mid {
				out[c.Key()] = pt.V
			}
		}
	}
	return out
}

func checkCurves(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			t.Errorf("no curve %s; have %s", k, strings.Join(keys, ", "))
			continue
		}
		if !near(v, w) {
			t.Errorf("%s = %v, want %v", k, v, w)
		}
	}
}

// Triton's own metric names (nv_inference_*), labels model and version, pod
// and node added by the Kubernetes scrape config.
func TestTritonPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model="resnet50",version="1",pod="triton-0",node="n1"`
	for _, c := range []struct {
		name   string
		perSec float64
	}{
		{"nv_inference_request_success", 10},
		{"nv_inference_count", 30}, {"nv_inference_exec_count", 10},
		{"nv_inference_queue_duration_us", 10 * 2000}, {"nv_inference_compute_infer_duration_us", 10 * 8000},
	} {
		o.family(c.name, "counter")
		o.counter(c.name+"{"+lb+"}", c.perSec)
	}
	// Triton 2.4x counts failures per reason: the label the success
	// counter lacks must not keep the two from adding up.
	o.family("nv_inference_request_failure", "counter")
	o.counter(`nv_inference_request_failure{`+lb+`,reason="BACKEND"}`, 0.3)
	o.counter(`nv_inference_request_failure{`+lb+`,reason="REJECTED"}`, 0.2)
	o.counter(`nv_inference_request_failure{`+lb+`,reason="CANCELED"}`, 0)
	o.family("nv_inference_pending_request_count", "gauge")
	o.gauge("nv_inference_pending_request_count{"+lb+"}", 3)
	o.family("nv_inference_request_summary_us", "summary")
	for q, v := range map[string]float64{"0.5": 20000, "0.95": 40000, "0.99": 60000} {
		o.gauge(`nv_inference_request_summary_us{`+lb+`,quantile="`+q+`"}`, v)
	}
	o.counter("nv_inference_request_summary_us_count{"+lb+"}", 10)
	o.counter("nv_inference_request_summary_us_sum{"+lb+"}", 10*25000)
	got := pullPreset(t, o.run(t), "presets: [triton]\n", o.steps)
	rep := "model=resnet50 version=1 replica=triton-0 node=n1"
	checkCurves(t, got, map[string]float64{
		"qps|model|model=resnet50":                    10.5,
		"qps|replica|" + rep:                          10.5,
		"error_rate|model|model=resnet50":             0.5 / 10.5,
		"batch_size|model|model=resnet50":             3,
		"stage_time|model|model=resnet50|stage=queue": 2,
		"stage_time|model|model=resnet50|stage=exec":  8,
		"stage_time|replica|" + rep + "|stage=exec":   8,
		"queue|model|model=resnet50":                  3,
		"latency_p50|model|model=resnet50":            20,
		"latency_p99|model|model=resnet50":            60,
		"latency_p99|replica|" + rep:                  60,
	})
}

// Triton's defaults publish no request summary: the latency is the mean
// from the cumulative request duration (it had no latency curve at all,
// and so no spike and no judged rise, on a stock Triton).
func TestTritonPresetWithoutSummary(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model="resnet50",version="1",pod="triton-0",node="n1"`
	for _, c := range []struct {
		name   string
		perSec float64
	}{
		{"nv_inference_request_success", 10}, {"nv_inference_request_duration_us", 10 * 25000},
	} {
		o.family(c.name, "counter")
		o.counter(c.name+"{"+lb+"}", c.perSec)
	}
	got := pullPreset(t, o.run(t), "presets: [triton]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"latency_mean|model|model=resnet50":                                      25,
		"latency_mean|replica|model=resnet50 version=1 replica=triton-0 node=n1": 25,
	})
}

// vLLM's names (vllm:*, model_name); the replica's version comes from
// kube_pod_labels through the pod join.
func TestVLLMPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model_name="llama-3-8b",pod="vllm-0",node="n2"`
	o.family("vllm:e2e_request_latency_seconds", "histogram")
	for _, le := range []struct {
		le     string
		perSec float64
	}{{"0.1", 0}, {"0.2", 4}, {"+Inf", 4}} {
		o.counter(`vllm:e2e_request_latency_seconds_bucket{`+lb+`,le="`+le.le+`"}`, le.perSec)
	}
	o.counter("vllm:e2e_request_latency_seconds_count{"+lb+"}", 4)
	o.counter("vllm:e2e_request_latency_seconds_sum{"+lb+"}", 4*0.15)
	o.family("vllm:request_queue_time_seconds", "histogram")
	o.counter(`vllm:request_queue_time_seconds_bucket{`+lb+`,le="+Inf"}`, 4)
	o.counter("vllm:request_queue_time_seconds_count{"+lb+"}", 4)
	o.counter("vllm:request_queue_time_seconds_sum{"+lb+"}", 4*0.012)
	o.family("vllm:num_requests_waiting", "gauge")
	o.gauge("vllm:num_requests_waiting{"+lb+"}", 5)
	o.family("vllm:num_requests_running", "gauge")
	o.gauge("vllm:num_requests_running{"+lb+"}", 12)
	o.family("vllm:gpu_cache_usage_perc", "gauge")
	o.gauge("vllm:gpu_cache_usage_perc{"+lb+"}", 0.4)
	for _, h := range []struct {
		name string
		mean float64
	}{{"vllm:request_prompt_tokens", 900}, {"vllm:request_generation_tokens", 210}, {"vllm:inter_token_latency_seconds", 0.042},
		{"vllm:time_to_first_token_seconds", 0.24},
		{"vllm:request_inference_time_seconds", 0.13}} {
		o.family(h.name, "histogram")
		o.counter(h.name+`_bucket{`+lb+`,le="+Inf"}`, 4)
		o.counter(h.name+"_count{"+lb+"}", 4)
		o.counter(h.name+"_sum{"+lb+"}", 4*h.mean)
	}
	o.family("kube_pod_labels", "gauge")
	o.gauge(`kube_pod_labels{namespace="llm",pod="vllm-0",label_app="llama-3-8b",label_version="2024-07"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [vllm, kube-state-metrics]\n", o.steps)
	rep := "model=llama-3-8b version=2024-07 replica=vllm-0 node=n2"
	checkCurves(t, got, map[string]float64{
		"latency_p50|model|model=llama-3-8b":            150,
		"latency_p99|model|model=llama-3-8b":            199,
		"latency_p99|replica|" + rep:                    199,
		"qps|model|model=llama-3-8b":                    4,
		"stage_time|model|model=llama-3-8b|stage=queue": 12,
		"stage_time|model|model=llama-3-8b|stage=exec":  130,
		"queue|replica|" + rep:                          5,
		"batch_size|replica|" + rep:                     12,
		"kv_cache|replica|" + rep:                       0.4,
		"prompt_tokens|model|model=llama-3-8b":          900,
		"output_tokens|model|model=llama-3-8b":          210,
		"tpot|model|model=llama-3-8b":                   42,
		"ttft|model|model=llama-3-8b":                   240,
	})
}

// DCGM's exporter scraped as its Helm chart's ServiceMonitor does
// (honorLabels false): the workload's pod is exported_pod, and pod is the
// exporter's own, which must not become a replica. A GPU without a
// workload has only the exporter's pod.
func TestDCGMPresetExportedPod(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",pod="nvidia-dcgm-exporter-abcde",exported_pod="llama-0",exported_namespace="llm"}`, 80)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="n1",pod="nvidia-dcgm-exporter-abcde"}`, 0)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="llama-1"}`, 60) // honorLabels: true
	o.family("DCGM_FI_DEV_FB_USED", "gauge")
	o.gauge(`DCGM_FI_DEV_FB_USED{gpu="0",Hostname="n1",pod="nvidia-dcgm-exporter-abcde",exported_pod="llama-0",exported_namespace="llm"}`, 30000)
	got := pullPreset(t, o.run(t), "presets: [dcgm]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|replica=llama-0 node=n1":     80,
		"gpu_util|replica|replica=llama-1 node=n2":     60,
		"gpu_mem_used|replica|replica=llama-0 node=n1": 30000,
	})
	for k := range got {
		if strings.Contains(k, "dcgm-exporter") {
			t.Errorf("curve %s: the exporter's own pod taken for a replica", k)
		}
	}
}

// MIG GPUs publish no DCGM_FI_DEV_GPU_UTIL (NVIDIA/dcgm-exporter#50):
// the preset is detected from the memory series, and utilisation is the
// graphics engine's activity; a GPU with both keeps GPU_UTIL.
func TestDCGMPresetOnMIG(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_FB_USED", "gauge")
	o.gauge(`DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID="1",Hostname="n1",pod="llama-0"}`, 20000)
	o.family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge")
	o.gauge(`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",GPU_I_ID="1",Hostname="n1",pod="llama-0"}`, 0.45)
	o.gauge(`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n2",pod="llama-1"}`, 0.9)
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="llama-1"}`, 70)
	prom := o.run(t)
	cfg, err := ParseConfig("test.yaml", []byte("presets: [auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, found, err := cfg.DetectPresets(context.Background(), Backend{URL: prom.URL}, t0.Add(39*15e9))
	if err != nil || !slices.Equal(found, []string{"dcgm"}) {
		t.Errorf("detected %v (%v), want dcgm once", found, err)
	}
	got := pullPreset(t, prom, "presets: [dcgm]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|replica=llama-0 node=n1": 45,
		"gpu_util|replica|replica=llama-1 node=n2": 70,
		"gpu_util|node|node=n1":                    45,
		"gpu_util|node|node=n2":                    70,
	})
}

// node_exporter as kube-prometheus-stack scrapes it: no "node" label,
// only the exporter's namespace and pod, which kube_pod_info places on its
// node. A scrape config that relabels instance to node still works.
func TestNodePresetWithoutNodeLabel(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("node_cpu_seconds_total", "counter")
	for _, cpu := range []string{"0", "1"} {
		o.counter(`node_cpu_seconds_total{cpu="`+cpu+`",mode="idle",namespace="monitoring",pod="node-exporter-x1",instance="10.0.0.7:9100"}`, 0.75)
		o.counter(`node_cpu_seconds_total{cpu="`+cpu+`",mode="idle",node="n9",instance="10.0.0.9:9100"}`, 0.5)
	}
	o.family("node_memory_MemAvailable_bytes", "gauge")
	o.gauge(`node_memory_MemAvailable_bytes{namespace="monitoring",pod="node-exporter-x1",instance="10.0.0.7:9100"}`, 25)
	o.family("node_memory_MemTotal_bytes", "gauge")
	o.gauge(`node_memory_MemTotal_bytes{namespace="monitoring",pod="node-exporter-x1",instance="10.0.0.7:9100"}`, 100)
	o.family("node_network_receive_bytes_total", "counter")
	for dev, rate := range map[string]float64{"eth0": 1000, "lo": 50, "veth12ab": 700, "cali9f": 300} {
		o.counter(`node_network_receive_bytes_total{device="`+dev+`",namespace="monitoring",pod="node-exporter-x1",instance="10.0.0.7:9100"}`, rate)
	}
	o.family("kube_pod_info", "gauge")
	o.gauge(`kube_pod_info{namespace="monitoring",pod="node-exporter-x1",node="n7",host_ip="10.0.0.7"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [node]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"node_cpu|node|node=n7":     0.25,
		"node_cpu|node|node=n9":     0.5,
		"node_memory|node|node=n7":  0.75,
		"node_network|node|node=n7": 1000, // the host's interface, not the pods' veths
	})
}

// The same with kube-state-metrics scraped without honorLabels: the
// exporter's pod is kube_pod_info's exported_pod (and exported_namespace),
// pod and namespace being kube-state-metrics' own, which is on no node an
// exporter runs on. No node curve found its node.
func TestNodePresetKubeStateMetricsWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	ne := `namespace="monitoring",pod="node-exporter-x1",instance="10.0.0.7:9100"`
	o.family("node_cpu_seconds_total", "counter")
	o.counter(`node_cpu_seconds_total{cpu="0",mode="idle",`+ne+`}`, 0.75)
	o.family("node_memory_MemAvailable_bytes", "gauge")
	o.gauge(`node_memory_MemAvailable_bytes{`+ne+`}`, 25)
	o.family("node_memory_MemTotal_bytes", "gauge")
	o.gauge(`node_memory_MemTotal_bytes{`+ne+`}`, 100)
	o.family("node_network_receive_bytes_total", "counter")
	o.counter(`node_network_receive_bytes_total{device="eth0",`+ne+`}`, 1000)
	ksm := `namespace="monitoring",pod="kube-state-metrics-0",instance="10.2.0.3:8080"`
	o.family("kube_pod_info", "gauge")
	o.gauge(`kube_pod_info{`+ksm+`,exported_namespace="monitoring",exported_pod="node-exporter-x1",node="n7",host_ip="10.0.0.7"}`, 1)
	o.gauge(`kube_pod_info{`+ksm+`,exported_namespace="monitoring",exported_pod="kube-state-metrics-0",node="n8",host_ip="10.0.0.8"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [node]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"node_cpu|node|node=n7":     0.25,
		"node_memory|node|node=n7":  0.75,
		"node_network|node|node=n7": 1000,
	})
}

// kube-state-metrics 2.x without --metric-labels-allowlist exports no pod
// labels: a replica's model then comes from its owner (the ReplicaSet's
// deployment, through model_from_deployment), not from nowhere.
func TestPodModelFromOwnerWithoutPodLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",pod="llama-3-8b-7d9f8c6b5-x2k4p"}`, 70)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="embed-0"}`, 40)
	o.family("kube_pod_info", "gauge")
	o.gauge(`kube_pod_info{namespace="llm",pod="llama-3-8b-7d9f8c6b5-x2k4p",node="n1",created_by_kind="ReplicaSet",created_by_name="llama-3-8b-7d9f8c6b5"}`, 1)
	o.gauge(`kube_pod_info{namespace="llm",pod="embed-0",node="n2",created_by_kind="StatefulSet",created_by_name="embed"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [dcgm, kube-state-metrics]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|model=llama-3-8b replica=llama-3-8b-7d9f8c6b5-x2k4p node=n1": 70,
		"gpu_util|replica|model=embed replica=embed-0 node=n2":                         40,
	})
}

// Charts following Kubernetes' recommended labels set
// app.kubernetes.io/name and app.kubernetes.io/version, not app and
// version: a replica's model and version come from those where "app" and
// "version" are absent (they were empty: no model, no version), and
// "app"/"version" still win where a pod has both.
func TestPodJoinRecommendedLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",pod="llama-0",namespace="llm"}`, 70)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="embed-0",namespace="llm"}`, 40)
	o.family("kube_pod_labels", "gauge")
	o.gauge(`kube_pod_labels{namespace="llm",pod="llama-0",label_app_kubernetes_io_name="llama-3-8b",label_app_kubernetes_io_version="v2"}`, 1)
	o.gauge(`kube_pod_labels{namespace="llm",pod="embed-0",label_app="embed",label_app_kubernetes_io_name="embed-chart",label_app_kubernetes_io_version="1.2"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [dcgm, kube-state-metrics]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|model=llama-3-8b version=v2 replica=llama-0 node=n1": 70,
		"gpu_util|replica|model=embed version=1.2 replica=embed-0 node=n2":     40,
	})
}

// A StatefulSet in two namespaces of one cluster (prod and staging) has
// two pods named embed-0: each replica curve joins its own namespace's pod
// (node and model), and they stay two curves. They were one: the join,
// keyed by pod name alone, gave both the same node, and the later series
// overwrote the other. A series that does not say its namespace joins
// neither pod of an ambiguous name rather than the wrong one.
func TestPodJoinByNamespace(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="dcgm-exporter-a",pod="embed-0",namespace="prod"}`, 90)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="dcgm-exporter-b",pod="embed-0",namespace="staging"}`, 10)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="dcgm-exporter-a",pod="nvidia-dcgm-exporter-a",exported_pod="rerank-0",exported_namespace="prod"}`, 70)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="dcgm-exporter-c",pod="rerank-0"}`, 20)
	o.family("kube_pod_info", "gauge")
	for _, p := range []string{
		`namespace="prod",pod="embed-0",node="n1",created_by_kind="StatefulSet",created_by_name="embed"`,
		`namespace="staging",pod="embed-0",node="n2",created_by_kind="StatefulSet",created_by_name="embed"`,
		`namespace="prod",pod="rerank-0",node="n1",created_by_kind="StatefulSet",created_by_name="rerank"`,
		`namespace="staging",pod="rerank-0",node="n3",created_by_kind="StatefulSet",created_by_name="rerank"`,
	} {
		o.gauge(`kube_pod_info{`+p+`}`, 1)
	}
	got := pullPreset(t, o.run(t), "presets: [dcgm, kube-state-metrics]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|model=embed replica=embed-0 node=n1":   90,
		"gpu_util|replica|model=embed replica=embed-0 node=n2":   10,
		"gpu_util|replica|model=rerank replica=rerank-0 node=n1": 70,
		"gpu_util|replica|replica=rerank-0 node=dcgm-exporter-c": 20,
	})
}

// vLLM names a model by its served name (by default the --model path);
// model_aliases maps it onto the name the pods' labels and deployments
// use, so the latency and GPU curves of one model share its name.
func TestModelAliases(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model_name="meta-llama/Llama-3.1-8B-Instruct",pod="llama-0",node="n2"`
	o.family("vllm:num_requests_waiting", "gauge")
	o.gauge("vllm:num_requests_waiting{"+lb+"}", 5)
	o.family("vllm:e2e_request_latency_seconds", "histogram")
	o.counter(`vllm:e2e_request_latency_seconds_bucket{`+lb+`,le="+Inf"}`, 4)
	o.counter("vllm:e2e_request_latency_seconds_count{"+lb+"}", 4)
	o.counter("vllm:e2e_request_latency_seconds_sum{"+lb+"}", 0.6)
	got := pullPreset(t, o.run(t), "presets: [vllm]\nmodel_aliases: {meta-llama/Llama-3.1-8B-Instruct: llama-3-8b}\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"qps|model|model=llama-3-8b":                             4,
		"queue|replica|model=llama-3-8b replica=llama-0 node=n2": 5,
	})
	for k := range got {
		if strings.Contains(k, "meta-llama") {
			t.Errorf("curve %s keeps the served name", k)
		}
	}
}

// detectsAlone checks that presets "auto" finds want, and only want, in
// prom, and that the in-house default does not stay beside it.
func detectsAlone(t *testing.T, prom *promtest.Prometheus, steps int, want string) {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte("presets: [auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := cfg.DetectPresets(context.Background(), Backend{URL: prom.URL}, t0.Add(time.Duration(steps-1)*15*time.Second))
	if err != nil || !slices.Equal(found, []string{want}) {
		t.Errorf("detected %v (%v), want [%s]", found, err, want)
		return
	}
	if !slices.Contains(got.Presets, want) || slices.Contains(got.Presets, "inference") {
		t.Errorf("presets in effect %v, want %s without inference", got.Presets, want)
	}
}

// SGLang's names as python/sglang/srt/metrics/collector.py registers them
// (sglang:*, model_name; the scheduler's gauges also carry tp_rank,
// pp_rank, moe_ep_rank and, under data parallelism, dp_rank). With
// --enable-metrics-for-all-schedulers every TP rank repeats its
// data-parallel rank's running and waiting requests: counted once, the
// data-parallel ranks summed.
func TestSGLangPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model_name="llama-3-8b",engine_type="unified",pod="sglang-0",node="n2"`
	o.family("sglang:e2e_request_latency_seconds", "histogram")
	for _, le := range []struct {
		le     string
		perSec float64
	}{{"0.1", 0}, {"0.2", 4}, {"+Inf", 4}} {
		o.counter(`sglang:e2e_request_latency_seconds_bucket{`+lb+`,le="`+le.le+`"}`, le.perSec)
	}
	o.counter("sglang:e2e_request_latency_seconds_count{"+lb+"}", 4)
	o.counter("sglang:e2e_request_latency_seconds_sum{"+lb+"}", 4*0.15)
	o.family("sglang:time_to_first_token_seconds", "histogram")
	o.counter(`sglang:time_to_first_token_seconds_bucket{`+lb+`,le="+Inf"}`, 4)
	o.counter("sglang:time_to_first_token_seconds_count{"+lb+"}", 4)
	o.counter("sglang:time_to_first_token_seconds_sum{"+lb+"}", 4*0.05)
	o.family("sglang:prompt_tokens_total", "counter")
	o.counter("sglang:prompt_tokens_total{"+lb+"}", 4*500)
	o.family("sglang:generation_tokens_total", "counter")
	o.counter("sglang:generation_tokens_total{"+lb+"}", 4*200)
	// The older release's name for the time per generated token.
	o.family("sglang:time_per_output_token_seconds", "histogram")
	o.counter(`sglang:time_per_output_token_seconds_bucket{`+lb+`,le="+Inf"}`, 4*199)
	o.counter("sglang:time_per_output_token_seconds_count{"+lb+"}", 4*199)
	o.counter("sglang:time_per_output_token_seconds_sum{"+lb+"}", 4*199*0.03)
	ranks := []struct {
		ranks            string
		running, waiting float64
	}{
		{`dp_rank="0",tp_rank="0",pp_rank="0",moe_ep_rank="0"`, 7, 3},
		{`dp_rank="0",tp_rank="1",pp_rank="0",moe_ep_rank="0"`, 7, 3},
		{`dp_rank="1",tp_rank="0",pp_rank="0",moe_ep_rank="0"`, 5, 2},
	}
	o.family("sglang:queue_time_seconds", "histogram")
	for _, r := range ranks[:1] {
		o.counter(`sglang:queue_time_seconds_bucket{`+lb+`,`+r.ranks+`,le="+Inf"}`, 4)
		o.counter(`sglang:queue_time_seconds_count{`+lb+`,`+r.ranks+`}`, 4)
		o.counter(`sglang:queue_time_seconds_sum{`+lb+`,`+r.ranks+`}`, 4*0.012)
	}
	o.family("sglang:num_running_reqs", "gauge")
	for _, r := range ranks {
		o.gauge(`sglang:num_running_reqs{`+lb+`,`+r.ranks+`}`, r.running)
	}
	o.family("sglang:num_queue_reqs", "gauge")
	for _, r := range ranks {
		o.gauge(`sglang:num_queue_reqs{`+lb+`,`+r.ranks+`}`, r.waiting)
	}
	o.family("sglang:token_usage", "gauge")
	for _, r := range ranks {
		o.gauge(`sglang:token_usage{`+lb+`,`+r.ranks+`}`, 0.4)
	}
	prom := o.run(t)
	detectsAlone(t, prom, o.steps, "sglang")
	got := pullPreset(t, prom, "presets: [sglang]\n", o.steps)
	rep := "model=llama-3-8b replica=sglang-0 node=n2"
	checkCurves(t, got, map[string]float64{
		"latency_p50|model|model=llama-3-8b":            150,
		"latency_p95|model|model=llama-3-8b":            195,
		"latency_p99|model|model=llama-3-8b":            199,
		"latency_p99|replica|" + rep:                    199,
		"qps|model|model=llama-3-8b":                    4,
		"qps|replica|" + rep:                            4,
		"stage_time|model|model=llama-3-8b|stage=queue": 12,
		"stage_time|replica|" + rep + "|stage=queue":    12,
		"queue|model|model=llama-3-8b":                  5,
		"queue|replica|" + rep:                          5,
		"batch_size|replica|" + rep:                     12,
		"kv_cache|replica|" + rep:                       0.4,
		"prompt_tokens|model|model=llama-3-8b":          500,
		"output_tokens|model|model=llama-3-8b":          200,
		"tpot|model|model=llama-3-8b":                   30,
		"ttft|model|model=llama-3-8b":                   50,
	})
}

// TGI's names as its router registers them (tgi_*; histograms in seconds
// without a unit suffix, counters without _total, no label but the
// failures' "err"): one model per server, whose name and version come from
// kube_pod_labels through the pod join; without kube-state-metrics the
// curves are the replica's alone.
func TestTGIPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `namespace="llm",pod="tgi-0",node="n3"`
	o.family("tgi_request_duration", "histogram")
	for _, le := range []struct {
		le     string
		perSec float64
	}{{"0.1", 0}, {"0.2", 4}, {"+Inf", 4}} {
		o.counter(`tgi_request_duration_bucket{`+lb+`,le="`+le.le+`"}`, le.perSec)
	}
	o.counter("tgi_request_duration_count{"+lb+"}", 4)
	o.counter("tgi_request_duration_sum{"+lb+"}", 4*0.15)
	for _, h := range []struct {
		name string
		mean float64
	}{
		{"tgi_request_queue_duration", 0.012}, {"tgi_request_inference_duration", 0.1}, {"tgi_request_validation_duration", 0.002},
		{"tgi_request_input_length", 700}, {"tgi_request_generated_tokens", 150}, {"tgi_request_mean_time_per_token_duration", 0.05},
	} {
		o.family(h.name, "histogram")
		o.counter(h.name+`_bucket{`+lb+`,le="+Inf"}`, 4)
		o.counter(h.name+"_count{"+lb+"}", 4)
		o.counter(h.name+"_sum{"+lb+"}", 4*h.mean)
	}
	// TGI's mean time per token is the request's inference time, its
	// prefill included, over its generated tokens (0.05 s above); the
	// decode steps of the running batch take 0.03 s each, the prefills 0.4 s.
	o.family("tgi_batch_inference_duration", "histogram")
	for _, m := range []struct {
		method        string
		perSec, meanS float64
	}{{"prefill", 1, 0.4}, {"decode", 20, 0.03}} {
		ml := lb + `,method="` + m.method + `"`
		o.counter(`tgi_batch_inference_duration_bucket{`+ml+`,le="+Inf"}`, m.perSec)
		o.counter("tgi_batch_inference_duration_count{"+ml+"}", m.perSec)
		o.counter("tgi_batch_inference_duration_sum{"+ml+"}", m.perSec*m.meanS)
	}
	o.family("tgi_request_count", "counter")
	o.counter("tgi_request_count{"+lb+"}", 5)
	o.family("tgi_request_success", "counter")
	o.counter("tgi_request_success{"+lb+"}", 4)
	o.family("tgi_request_failure", "counter")
	o.counter(`tgi_request_failure{`+lb+`,err="validation"}`, 0.6)
	o.counter(`tgi_request_failure{`+lb+`,err="overloaded"}`, 0.4)
	o.family("tgi_queue_size", "gauge")
	o.gauge("tgi_queue_size{"+lb+"}", 3)
	o.family("tgi_batch_current_size", "gauge")
	o.gauge("tgi_batch_current_size{"+lb+"}", 8)
	o.family("kube_pod_labels", "gauge")
	o.gauge(`kube_pod_labels{namespace="llm",pod="tgi-0",label_app="mistral-7b",label_version="v1"}`, 1)
	prom := o.run(t)
	detectsAlone(t, prom, o.steps, "tgi")
	got := pullPreset(t, prom, "presets: [tgi, kube-state-metrics]\n", o.steps)
	rep := "model=mistral-7b version=v1 replica=tgi-0 node=n3"
	checkCurves(t, got, map[string]float64{
		"latency_p50|replica|" + rep:                 150,
		"latency_p95|replica|" + rep:                 195,
		"latency_p99|replica|" + rep:                 199,
		"qps|replica|" + rep:                         5,
		"error_rate|replica|" + rep:                  0.2,
		"stage_time|replica|" + rep + "|stage=queue": 12,
		"stage_time|replica|" + rep + "|stage=exec":  100,
		"queue|replica|" + rep:                       3,
		"batch_size|replica|" + rep:                  8,
		// The model's own, from the pod's labels: the detector watches these.
		"latency_p99|model|model=mistral-7b":            199,
		"qps|model|model=mistral-7b":                    5,
		"error_rate|model|model=mistral-7b":             0.2,
		"stage_time|model|model=mistral-7b|stage=queue": 12,
		"stage_time|model|model=mistral-7b|stage=exec":  100,
		"prompt_tokens|model|model=mistral-7b":          700,
		"output_tokens|model|model=mistral-7b":          150,
		"tpot|model|model=mistral-7b":                   30, // the decode step, not the prefill spread over the tokens
	})
	alone := pullPreset(t, prom, "presets: [tgi]\n", o.steps)
	checkCurves(t, alone, map[string]float64{"latency_p99|replica|replica=tgi-0 node=n3": 199})
}

// TGI's model-level curves join its pods to kube_pod_labels however
// kube-state-metrics is scraped (without honor_labels: the workload's
// namespace and pod in exported_*) and labelled (Kubernetes' recommended
// app.kubernetes.io/name).
func TestTGIModelCurvesFromRecommendedLabelsWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("tgi_request_count", "counter")
	for _, p := range []struct {
		pod    string
		perSec float64
	}{{"tgi-0", 3}, {"tgi-1", 5}} {
		o.counter(`tgi_request_count{namespace="llm",pod="`+p.pod+`",node="n1"}`, p.perSec)
	}
	o.family("tgi_request_duration", "histogram")
	o.counter(`tgi_request_duration_bucket{namespace="llm",pod="tgi-0",node="n1",le="+Inf"}`, 3)
	o.family("kube_pod_labels", "gauge")
	for _, pod := range []string{"tgi-0", "tgi-1"} {
		o.gauge(`kube_pod_labels{namespace="monitoring",pod="kube-state-metrics-0",instance="10.2.0.3:8080",exported_namespace="llm",exported_pod="`+pod+`",label_app_kubernetes_io_name="mistral-7b"}`, 1)
	}
	got := pullPreset(t, o.run(t), "presets: [tgi]\n", o.steps)
	checkCurves(t, got, map[string]float64{"qps|model|model=mistral-7b": 8})
}
