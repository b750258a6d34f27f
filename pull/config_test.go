package pull

import (
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
)

func TestDefaultConfigIsInference(t *testing.T) {
	c, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Presets, ","); got != "dcgm,node,kube-state-metrics,inference" {
		t.Errorf("presets = %s", got)
	}
	if !c.Kube.Enabled {
		t.Error("kube-state-metrics events are off by default")
	}
	byName := map[string]Query{}
	for _, q := range c.Queries {
		byName[q.Name] = q
	}
	for _, want := range []string{"inference/latency_p99@model", "inference/latency_p99@version", "inference/latency_p99@replica",
		"inference/stage_time@replica", "inference/batch_size@model", "dcgm/gpu_util@replica", "node/node_cpu@node"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("missing query %s", want)
		}
	}
	if q := byName["dcgm/gpu_mem_used@replica"]; q.Labels.Node != "Hostname" || q.Labels.Replica != "pod" {
		t.Errorf("dcgm labels = %+v", q.Labels)
	}
	if _, ok := c.SLOFor("chat"); ok {
		t.Error("SLO without config")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"bad yaml", "presets: [inference\nstep: 15s\n", "w.yaml: line 1:"},
		{"unknown top key", "presets: []\nsteps: 15s\n", "w.yaml: line 2: field steps not found"},
		{"unknown preset", "presets: [prometheus]\n", `unknown preset "prometheus"`},
		{"unknown role", "presets: []\nqueries:\n  - role: latency_p999\n    level: model\n    labels: {model: m}\n    expr: x\n",
			`w.yaml:3: queries[0]: unknown role "latency_p999"`},
		{"unknown scope field", "presets: []\nqueries:\n  - {role: qps, level: model, labels: {model: m, pod: pod}, expr: x}\n",
			`w.yaml:3: queries[0]: labels: unknown scope field "pod"`},
		{"bad label name", "presets: []\nqueries:\n  - {role: qps, level: model, labels: {model: 'model-name'}, expr: x}\n",
			`labels.model: "model-name" is not a Prometheus label name`},
		{"level needs label", "presets: []\nqueries:\n  - {role: qps, level: replica, labels: {model: m}, expr: x}\n",
			"w.yaml:3: queries[0]: level replica needs labels.replica"},
		{"stage on non-stage role", "presets: []\nqueries:\n  - {role: qps, level: model, stage: exec, labels: {model: m}, expr: x}\n",
			"only role stage_time takes a stage"},
		{"unknown query key", "presets: []\nqueries:\n  - {role: qps, level: model, labels: {model: m}, query: x}\n",
			`line 3: unknown query field "query"`},
		{"bad slo", "slos:\n  tiers: {realtime: fast}\n", "w.yaml:2: slos.tiers.realtime"},
		{"slo unknown tier", "slos:\n  models: {chat: realtime}\n", `slos.models.chat: "realtime" is neither`},
		{"bad step", "step: 1500ms\n", "step: want whole seconds"},
		{"disable unknown", "disable: [nope]\n", `disable: no query named "nope"`},
		{"kube label list empty", "kube_events: {model_label: []}\n", "line 1: want a label name or a list of them"},
		{"kube label in list", "kube_events: {version_label: [label_version, app.kubernetes.io/version]}\n",
			`kube_events: "app.kubernetes.io/version" is not a Prometheus label name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("w.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigComposeOverrideAndSLOs(t *testing.T) {
	c, err := ParseConfig("w.yaml", []byte(`
presets: [inference, vllm, triton]
disable: [inference/error_rate@replica]
queries:
  - name: inference/latency_p99@model
    role: latency_p99
    level: model
    labels: {model: model}
    expr: histogram_quantile(0.99, sum by (le, model) (rate(inference_request_duration_seconds_bucket[5m]))) * 1000
slos:
  tiers: {realtime: 300, search: 150ms, batch: 5s}
  models: {chat-7b: realtime, vision-xl: 650}
  default: batch
`))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Query{}
	for _, q := range c.Queries {
		names[q.Name] = q
	}
	if _, ok := names["inference/error_rate@replica"]; ok {
		t.Error("disabled query still there")
	}
	if q := names["inference/latency_p99@model"]; !strings.Contains(q.Expr, "[5m]") || q.Origin != "w.yaml:5" {
		t.Errorf("override = %+v", q)
	}
	if q := names["vllm/kv_cache@replica"]; q.Role != correlate.RoleKVCache || q.Labels.Model != "model_name" {
		t.Errorf("vllm kv cache = %+v", q)
	}
	if q := names["triton/stage_time@model:queue"]; q.Stage != "queue" {
		t.Errorf("triton queue stage = %+v", q)
	}
	for model, want := range map[string]float64{"chat-7b": 300, "vision-xl": 650, "other": 5000} {
		if got, ok := c.SLOFor(model); !ok || got != want {
			t.Errorf("SLOFor(%s) = %v, %v; want %v", model, got, ok, want)
		}
	}
	if c2, err := ParseConfig("w.yaml", []byte("rate_window: 2m\n")); err != nil || !strings.Contains(queryByName(c2, "inference/qps@model").Expr, "[120s]") {
		t.Errorf("rate_window not applied to the presets: %v", err)
	}
	for _, doc := range []string{"", "rate_window: auto\n"} {
		c3, err := ParseConfig("w.yaml", []byte(doc))
		if err != nil || c3.RateWindow != 0 || !c3.autoRate(queryByName(c3, "inference/qps@model")) {
			t.Errorf("%q: rate window not automatic: %v", doc, err)
		}
	}
	if _, err := ParseConfig("w.yaml", []byte("step: 15s\nrate_window: 0s\n")); err == nil || !strings.Contains(err.Error(), "w.yaml: line 2: rate_window") {
		t.Errorf("rate_window 0s: %v", err)
	}
	if c.TierOf("chat-7b") != "realtime" || c.TierOf("other") != "batch" {
		t.Errorf("tiers: %q %q", c.TierOf("chat-7b"), c.TierOf("other"))
	}
}

func queryByName(c *Config, name string) Query {
	for _, q := range c.Queries {
		if q.Name == name {
			return q
		}
	}
	return Query{}
}

// A server that pulls nothing (no PROMETHEUS_URL: OTLP and pushed data
// only) may say presets: [] beside its otlp: section: reading the file
// refused it, so such a server did not start. Only a puller needs queries.
func TestNothingToPullOnlyStopsAPuller(t *testing.T) {
	cfg, err := ParseConfig("p0.yaml", []byte("presets: []\notlp:\n  grace: 5s\n"))
	if err != nil {
		t.Fatalf("a file with no presets and no queries: %v", err)
	}
	if err := cfg.CheckPullable(); err == nil || !strings.Contains(err.Error(), "p0.yaml: nothing to pull") {
		t.Fatalf("nothing to pull: %v", err)
	}
}

// kube_events.model_label and version_label take one label (as before) or
// a list whose first non-empty label wins; the preset's lists fall back on
// Kubernetes' recommended app.kubernetes.io labels.
func TestKubeEventsLabelLists(t *testing.T) {
	for _, tc := range []struct{ yaml, model, version string }{
		{"", "label_app,label_app_kubernetes_io_name", "label_version,label_app_kubernetes_io_version"},
		{"presets: []\n", "label_app,label_app_kubernetes_io_name", "label_version,label_app_kubernetes_io_version"},
		{"kube_events: {model_label: label_model}\n", "label_model", "label_version,label_app_kubernetes_io_version"},
		{"kube_events: {model_label: [label_a, label_b], version_label: label_v}\n", "label_a,label_b", "label_v"},
	} {
		c, err := ParseConfig("w.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if m, v := strings.Join(c.Kube.ModelLabels, ","), strings.Join(c.Kube.VersionLabels, ","); m != tc.model || v != tc.version {
			t.Errorf("%q: model labels %s, version labels %s; want %s, %s", tc.yaml, m, v, tc.model, tc.version)
		}
	}
}
