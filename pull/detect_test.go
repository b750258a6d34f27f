package pull

import (
	"context"
	"slices"
	"testing"
)

// A Prometheus that scrapes vLLM and DCGM (no in-house inference_*
// metrics, an OTel-instrumented gateway in front): presets "auto" picks
// vllm and dcgm, not http; an explicit preset stays; a Prometheus with
// none of the known metrics keeps the built-in default.
func TestDetectPresets(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model_name="llama-3-8b",pod="vllm-0",node="n2"`
	o.family("vllm:e2e_request_latency_seconds", "histogram")
	o.counter(`vllm:e2e_request_latency_seconds_bucket{`+lb+`,le="0.2"}`, 4)
	o.counter(`vllm:e2e_request_latency_seconds_bucket{`+lb+`,le="+Inf"}`, 4)
	o.counter("vllm:e2e_request_latency_seconds_count{"+lb+"}", 4)
	o.counter("vllm:e2e_request_latency_seconds_sum{"+lb+"}", 0.6)
	o.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	o.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="vllm-0"}`, 70)
	// The gateway in front is instrumented with OpenTelemetry: its HTTP
	// metrics are no fleet of models beside vLLM.
	o.family("http_server_request_duration_seconds", "histogram")
	o.counter(`http_server_request_duration_seconds_bucket{job="gateway",le="+Inf"}`, 4)
	prom := o.run(t)
	ctx := context.Background()
	end := t0.Add(39 * 15e9)

	cfg, err := ParseConfig("test.yaml", []byte("presets: [auto, http]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := cfg.DetectPresets(ctx, Backend{URL: prom.URL}, end)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, []string{"vllm", "dcgm"}) {
		t.Errorf("detected %v, want [vllm dcgm]", found)
	}
	for _, p := range []string{"vllm", "dcgm", "http"} {
		if !slices.Contains(got.Presets, p) {
			t.Errorf("presets in effect %v lack %s", got.Presets, p)
		}
	}
	if slices.Contains(got.Presets, "inference") {
		t.Errorf("presets in effect %v: inference_* is not scraped", got.Presets)
	}
	// The built-in default (no WATERLINE_CONFIG) detects too.
	def, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if d, found, err := def.DetectPresets(ctx, Backend{URL: prom.URL}, end); err != nil || !slices.Equal(found, []string{"vllm", "dcgm"}) || !slices.Contains(d.Presets, "vllm") {
		t.Errorf("default config detected %v (%v), presets %v", found, err, d.Presets)
	}
	// Named presets are kept as they are, whatever is scraped.
	named, _ := ParseConfig("test.yaml", []byte("presets: [triton]\n"))
	if d, found, _ := named.DetectPresets(ctx, Backend{URL: prom.URL}, end); len(found) != 0 || !slices.Equal(d.Presets, []string{"triton"}) {
		t.Errorf("explicit presets became %v (detected %v)", d.Presets, found)
	}
	// Only node, GPU and cluster exporters scraped so far: the in-house
	// latency preset stays beside them (detection runs once, at start-up).
	infra := &omBuilder{steps: 4}
	infra.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	infra.gauge(`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n2",pod="p-0"}`, 70)
	infra.family("node_cpu_seconds_total", "counter")
	infra.counter(`node_cpu_seconds_total{cpu="0",mode="idle",instance="n2"}`, 4)
	if d, found, err := def.DetectPresets(ctx, Backend{URL: infra.run(t).URL}, t0.Add(45e9)); err != nil ||
		!slices.Equal(found, []string{"dcgm", "node"}) || !slices.Contains(d.Presets, "inference") {
		t.Errorf("infrastructure only: detected %v (%v), presets %v", found, err, d.Presets)
	}
	// Nothing known scraped: the default stays.
	empty := (&omBuilder{steps: 4})
	empty.family("up", "gauge")
	empty.gauge(`up{job="x"}`, 1)
	if d, found, err := def.DetectPresets(ctx, Backend{URL: empty.run(t).URL}, t0.Add(45e9)); err != nil || len(found) != 0 || !slices.Contains(d.Presets, "inference") {
		t.Errorf("nothing known: detected %v (%v), presets %v", found, err, d.Presets)
	}
}

// With presets "auto", disable may name queries of presets detection
// takes (or not): the file loads before detection, and after it the named
// query is gone.
func TestDetectPresetsWithDisable(t *testing.T) {
	o := &omBuilder{steps: 40}
	lb := `model_name="llama-3-8b",pod="vllm-0",node="n2"`
	o.family("vllm:e2e_request_latency_seconds", "histogram")
	o.counter(`vllm:e2e_request_latency_seconds_bucket{`+lb+`,le="+Inf"}`, 4)
	o.counter("vllm:e2e_request_latency_seconds_count{"+lb+"}", 4)
	o.counter("vllm:e2e_request_latency_seconds_sum{"+lb+"}", 0.6)
	prom := o.run(t)
	cfg, err := ParseConfig("test.yaml", []byte("presets: [auto]\ndisable: [vllm/qps@model, inference/qps@model, triton/qps@model]\n"))
	if err != nil {
		t.Fatalf("loading before detection: %v", err)
	}
	got, found, err := cfg.DetectPresets(context.Background(), Backend{URL: prom.URL}, t0.Add(39*15e9))
	if err != nil || !slices.Equal(found, []string{"vllm"}) {
		t.Fatalf("detected %v, %v", found, err)
	}
	for _, q := range got.Queries {
		if q.Name == "vllm/qps@model" {
			t.Errorf("disabled query %s still pulled", q.Name)
		}
	}
	if _, err := ParseConfig("test.yaml", []byte("presets: [vllm]\ndisable: [vllm/nope@model]\n")); err == nil {
		t.Error("without auto, an unknown query in disable is still an error")
	}
}
