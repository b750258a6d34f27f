package pull

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// presetSignatures name, per preset, a metric only its exporter publishes.
// Order is the order detected presets apply in.
var presetSignatures = []struct{ preset, metric string }{
	{"inference", "inference_request_duration_seconds_bucket"},
	{"vllm", "vllm:e2e_request_latency_seconds_bucket"},
	{"triton", "nv_inference_request_success"},
	{"sglang", "sglang:e2e_request_latency_seconds_bucket"},
	{"tgi", "tgi_request_duration_bucket"},
	{"http", "http_server_request_duration_seconds_bucket"},
	{"http", "http_server_request_duration_seconds"},            // a native histogram (OTel's exponential histograms)
	{"http-legacy", "http_server_duration_milliseconds_bucket"}, // OTel HTTP conventions before v1.20
	{"dcgm", "DCGM_FI_DEV_GPU_UTIL"},
	{"dcgm", "DCGM_FI_DEV_FB_USED"}, // MIG GPUs publish no GPU_UTIL
	{"node", "node_cpu_seconds_total"},
	{"kube-state-metrics", "kube_pod_info"},
}

// isLatencyPreset reports whether a preset reads request latency.
func isLatencyPreset(p string) bool {
	return isServerPreset(p) || isHTTPPreset(p)
}

// isServerPreset reports whether a preset reads a model server's requests.
func isServerPreset(p string) bool {
	return p == "inference" || p == "vllm" || p == "triton" || p == "sglang" || p == "tgi"
}

// isHTTPPreset reports whether a preset reads a plain HTTP service fleet.
func isHTTPPreset(p string) bool {
	return p == "http" || p == "http-legacy"
}

// DetectPresets resolves "auto" among the presets: it asks Prometheus
// which of the presets' signature metrics it holds (over the day before
// at) and returns the config with those presets in effect, and their
// names. Without "auto", or when none is found, the config is returned as
// it is (the built-in default then reads the in-house inference_*
// metrics), with found empty. A vLLM, Triton, SGLang or TGI fleet thus
// gets its own queries without a WATERLINE_CONFIG.
func (c *Config) DetectPresets(ctx context.Context, b Backend, at time.Time) (*Config, []string, error) {
	if !c.auto {
		return c, nil, nil
	}
	p, err := newProm(b)
	if err != nil {
		return c, nil, err
	}
	names := make([]string, len(presetSignatures))
	for i, s := range presetSignatures {
		names[i] = regexp.QuoteMeta(s.metric)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Only the exporters of the environment match: names.
	sel := c.scoped(`{__name__=~"` + strings.Join(names, "|") + `"}`)
	vals, _, _, err := p.api.LabelValues(ctx, "__name__", []string{sel}, at.Add(-24*time.Hour), at)
	if err != nil {
		return c, nil, fmt.Errorf("detecting presets at %s: %w", redactURL(b.URL), err)
	}
	have := map[string]bool{}
	for _, v := range vals {
		have[string(v)] = true
	}
	var found []string
	servers := false
	for _, s := range presetSignatures {
		if !have[s.metric] {
			continue
		}
		// "http" reads a plain HTTP fleet, each job a model: beside model
		// servers it would take their gateway and auth services for
		// models (and count them in every breadth). A fleet midway
		// between the two OTel conventions is read by the current one
		// (both would write the same curves).
		if isHTTPPreset(s.preset) && (servers || slices.ContainsFunc(found, isHTTPPreset)) || slices.Contains(found, s.preset) {
			continue
		}
		servers = servers || isServerPreset(s.preset)
		found = append(found, s.preset)
	}
	if len(found) == 0 {
		return c, nil, nil
	}
	// Node, GPU or cluster exporters without any model server's latency
	// (its metrics not scraped yet, or not in the last day): "inference"
	// stays, as without detection. Detection runs once, at start-up;
	// dropping it would leave the process without a latency curve, and
	// so without spikes, until a restart.
	inEffect := found
	if !servers && !slices.ContainsFunc(found, isHTTPPreset) && !slices.ContainsFunc(c.autoRest, isLatencyPreset) {
		inEffect = append([]string{"inference"}, found...)
	}
	out, err := parseConfig(c.source, c.data, inEffect)
	if err != nil {
		return c, nil, err
	}
	return out, found, nil
}
