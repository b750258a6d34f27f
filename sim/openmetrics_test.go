package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every scenario's OpenMetrics passes the format checks, counters included.
func TestOpenMetricsValidAndCountersMonotonic(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			o := Small(7, sc)
			o.Confounders = true
			out := generate(t, o)
			m := out.metrics(t)
			for _, fam := range []string{
				"inference_request_duration_seconds", "inference_stage_duration_seconds", "inference_batches", "inference_queue_size",
				"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
				"node_cpu_seconds", "node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_network_receive_bytes",
				"kube_pod_info", "kube_pod_labels", "kube_pod_start_time", "kube_pod_container_status_restarts",
				"kube_deployment_spec_replicas", "kube_deployment_metadata_generation",
				"kube_horizontalpodautoscaler_status_desired_replicas", "kube_node_status_condition",
				"kube_horizontalpodautoscaler_spec_min_replicas", "kube_horizontalpodautoscaler_spec_max_replicas",
			} {
				if _, ok := m.types[fam]; !ok {
					t.Errorf("family %s missing", fam)
				}
			}
		})
	}
}

// The real promtool backfills the small fleet and ingests every sample: a
// sample out of order or with a bad timestamp would be dropped silently,
// so the block table's sample count must equal our line count.
func TestOpenMetricsPromtoolBackfill(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	o := Small(11, ColdStart)
	o.Confounders = true
	out := generate(t, o)
	m := out.metrics(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.om")
	if err := os.WriteFile(file, out.om, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "tsdb"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	// BLOCK ULID  MIN TIME  MAX TIME  DURATION  NUM SAMPLES  NUM CHUNKS  NUM SERIES  SIZE
	total := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || f[0] == "BLOCK" {
			continue
		}
		n, err := strconv.Atoi(f[4])
		if err != nil {
			t.Fatalf("promtool output %q", line)
		}
		total += n
	}
	if total != m.samples {
		t.Fatalf("promtool ingested %d samples, the file has %d\n%s", total, m.samples, stdout.String())
	}
}

// Pods that start mid-window start their series then, and counters of pods
// that were already running do not start at zero.
func TestOpenMetricsSeriesLifetimes(t *testing.T) {
	out := generate(t, Small(3, ColdStart))
	from, to := out.window()
	m := out.metrics(t, "inference_request_duration_seconds_count", "kube_pod_start_time")
	newPods := map[string]bool{}
	for _, ss := range m.byLabel("kube_pod_start_time", "pod") {
		s := ss[0]
		start := int64(s.points[0].v)
		if start >= from {
			newPods[s.labels["pod"]] = true
			if s.points[0].t < start || s.points[0].t > start+int64(out.desc.StepSeconds) {
				t.Errorf("pod %s started at %d but its first kube sample is at %d", s.labels["pod"], start, s.points[0].t)
			}
		}
	}
	if len(newPods) == 0 {
		t.Fatal("no pod started in the window")
	}
	for pod, ss := range m.byLabel("inference_request_duration_seconds_count", "pod") {
		s := ss[0]
		if newPods[pod] {
			if s.points[0].t == from || s.points[0].v > 100 {
				t.Errorf("new pod %s: series starts at %d with %v", pod, s.points[0].t, s.points[0].v)
			}
		} else if s.points[0].t != from || s.points[0].v < 1000 {
			t.Errorf("old pod %s: series starts at %d with %v, want at the window start with its history", pod, s.points[0].t, s.points[0].v)
		}
		if s.points[len(s.points)-1].t > to {
			t.Errorf("series past the window")
		}
	}
}
