package sim

import (
	"bytes"
	"testing"
	"time"
)

// TestScriptWritesValidOpenMetrics: a scripted fleet's text passes the
// same checks as a simulated one's (families once, ascending times,
// counters that never fall, cumulative buckets), whole and one backfill
// window at a time, and says what the script says.
func TestScriptWritesValidOpenMetrics(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	s := &Script{Start: start, Step: 15 * time.Second, Steps: 240,
		Nodes: []ScriptNode{{Name: "n1", CPUBusy: 0.25, MemUsed: 0.5, NetRx: 1e6, NotReady: [][2]int{{10, 20}}}},
		Pods: []ScriptPod{
			{Name: "chat-a-1", Model: "chat", Version: "v1", Node: "n1", From: 0, To: 240, Restarts: []int{50},
				QPS: 10, Batch: 4, LatencyMs: 90, StageMs: 5, Queue: 2, GPUUtil: 50, GPUMemUsedMiB: 30000, GPUMemFreeMiB: 50000},
			{Name: "chat-b-1", Model: "chat", Version: "v2", Node: "n1", From: 100, To: 240, QPS: 5, Batch: 1, LatencyMs: 400, StageMs: 50},
		},
		Deployments: []ScriptDeployment{{Name: "chat", Generation: map[int]float64{0: 1, 100: 2}, Spec: map[int]float64{0: 1, 100: 2}}},
	}
	var whole bytes.Buffer
	if err := s.WriteOpenMetrics(&whole); err != nil {
		t.Fatal(err)
	}
	from, to := start.Unix(), s.End().Unix()
	m, err := checkOpenMetrics(whole.Bytes(), from, to, func(n string) bool { return n == "inference_request_duration_seconds_bucket" })
	if err != nil {
		t.Fatal(err)
	}
	// Every request of chat-a-1 lands in (0.08, 0.1]: nothing below, all
	// 150 a step from 0.1 up.
	checked := 0
	for _, sr := range m.series {
		if sr.labels["pod"] != "chat-a-1" {
			continue
		}
		want := map[string]float64{"0.08": 0, "0.1": 150 * 240, "+Inf": 150 * 240}
		if w, ok := want[sr.labels["le"]]; ok {
			checked++
			if got := sr.points[len(sr.points)-1].v; got != w {
				t.Errorf("le=%s ends at %v, want %v", sr.labels["le"], got, w)
			}
		}
	}
	if checked != 3 {
		t.Fatalf("checked %d of chat-a-1's buckets, want 3", checked)
	}
	for lo := start; lo.Before(s.End()); lo = lo.Add(20 * time.Minute) {
		var w bytes.Buffer
		if err := s.WriteOpenMetricsWindow(&w, lo, lo.Add(20*time.Minute)); err != nil {
			t.Fatal(err)
		}
		w.WriteString("# EOF\n")
		if _, err := checkOpenMetrics(w.Bytes(), lo.Unix(), lo.Add(20*time.Minute).Unix()-1, func(string) bool { return false }); err != nil {
			t.Fatalf("window from %s: %v", lo, err)
		}
	}
}
