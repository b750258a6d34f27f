package pull

import (
	"fmt"
	"testing"
)

// Review: the "http" preset says it reads the OpenTelemetry Collector's
// Prometheus exporter. That exporter writes job (service.namespace/
// service.name) and instance (service.instance.id) on every series, and a
// Prometheus scraping it with the default honor_labels: false (a
// ServiceMonitor's default too) keeps them only as exported_job and
// exported_instance: job and instance become the collector's own scrape
// target (open-telemetry/opentelemetry-collector-contrib#8355, #10108;
// open-telemetry/opentelemetry-demo#743). The preset groups by job, so
// every service behind one collector collapses into a single "model"
// named after the collector's scrape job, and every replica into the
// collector's address: no per-service curve at all, and the merged
// latency blames a model that does not exist.
func TestHTTPPresetCollectorExporterWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("http_server_request_duration_seconds", "histogram")
	for _, s := range []struct {
		job, instance string
		perSec        float64
	}{
		{"shop/checkout", "checkout-7d9f-abcde", 10},
		{"shop/catalog", "catalog-5c4b-fghij", 20},
	} {
		lb := fmt.Sprintf(`job="otel-collector",instance="10.1.0.5:8889",exported_job=%q,exported_instance=%q,http_request_method="GET",http_route="/x",http_response_status_code="200"`, s.job, s.instance)
		for _, le := range []string{"0.05", "+Inf"} {
			o.counter(`http_server_request_duration_seconds_bucket{`+lb+`,le="`+le+`"}`, s.perSec)
		}
		o.counter("http_server_request_duration_seconds_count{"+lb+"}", s.perSec)
		o.counter("http_server_request_duration_seconds_sum{"+lb+"}", s.perSec*0.02)
	}
	got := pullPreset(t, o.run(t), "presets: [http]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"qps|model|model=shop/checkout": 10,
		"qps|model|model=shop/catalog":  20,
	})
	if _, merged := got["qps|model|model=otel-collector"]; merged {
		t.Errorf("every service behind the collector merged into one model named after its scrape job: %v", got["qps|model|model=otel-collector"])
	}
}

// Review: kube-state-metrics scraped without honorLabels (the standalone
// kube-state-metrics chart's ServiceMonitor default, bitnami's
// kube-prometheus; bitnami/charts#7690) carries the workload's pod and
// namespace as exported_pod and exported_namespace, pod and namespace
// being kube-state-metrics' own. The pod join reads exported_namespace
// but still takes "pod" — kube-state-metrics' own pod — so every pod of a
// namespace lands on one key ("llm/kube-state-metrics-0") and no replica
// finds its model, version or node.
func TestPodJoinKubeStateMetricsWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",pod="llama-0",namespace="llm"}`, 70)
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="llama-1",namespace="llm"}`, 40)
	ksm := `namespace="monitoring",pod="kube-state-metrics-0",exported_namespace="llm"`
	o.family("kube_pod_info", "gauge")
	o.gauge(`kube_pod_info{`+ksm+`,exported_pod="llama-0",node="n1",created_by_kind="StatefulSet",created_by_name="llama"}`, 1)
	o.gauge(`kube_pod_info{`+ksm+`,exported_pod="llama-1",node="n2",created_by_kind="StatefulSet",created_by_name="llama"}`, 1)
	o.family("kube_pod_labels", "gauge")
	o.gauge(`kube_pod_labels{`+ksm+`,exported_pod="llama-0",label_app="llama-3-8b",label_version="v2"}`, 1)
	o.gauge(`kube_pod_labels{`+ksm+`,exported_pod="llama-1",label_app="llama-3-8b",label_version="v1"}`, 1)
	got := pullPreset(t, o.run(t), "presets: [dcgm, kube-state-metrics]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"gpu_util|replica|model=llama-3-8b version=v2 replica=llama-0 node=n1": 70,
		"gpu_util|replica|model=llama-3-8b version=v1 replica=llama-1 node=n2": 40,
	})
}
