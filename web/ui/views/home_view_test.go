package views

import (
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

func TestBuildPullHealthCountsHistoryPulls(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if h := BuildPullHealth(wire.PullStatus{}, now); !strings.HasPrefix(h.Empty, "Nothing pulled yet") {
		t.Errorf("no pulls at all: %q", h.Empty)
	}
	done := now.Add(-10 * time.Minute)
	filled := []wire.PullGap{
		{Source: "latency_p99", Reason: store.GapHistory, To: time.Date(2026, 10, 6, 9, 0, 0, 0, time.UTC), FilledAt: &done},
		{Source: "qps", Reason: store.GapHistory, To: time.Date(2026, 10, 6, 9, 0, 0, 0, time.UTC), FilledAt: &done},
		{Source: "qps", Reason: store.GapOutage, FilledAt: &done},
	}
	h := BuildPullHealth(wire.PullStatus{FilledGaps: filled}, now)
	if !strings.Contains(h.Empty, "filled 2 source ranges") || !strings.Contains(h.Empty, "2026-10-06 09:00 UTC") || !strings.Contains(h.Empty, "live pull loop is off") {
		t.Errorf("history only: %q", h.Empty)
	}
}

// A source pulled without error but without a point is flagged: its
// query matches nothing; the events source never stores points.
func TestBuildPullHealthFlagsSourcesWithoutSeries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ok := now.Add(-time.Minute)
	h := BuildPullHealth(wire.PullStatus{Sources: []wire.PullSource{
		{Source: "inference/qps@model", LastSuccess: &ok, PointsTotal: 1200},
		{Source: "vllm/latency_p99@model", LastSuccess: &ok},
		{Source: "events/kube-state-metrics", LastSuccess: &ok},
		{Source: "triton/qps@model"}, // never pulled yet
		// A fleet that has not failed a request has no status="5xx"
		// series: said, not flagged.
		{Source: "inference/error_rate@model", LastSuccess: &ok},
	}}, now)
	got, quiet := map[string]bool{}, map[string]bool{}
	for _, r := range h.Sources {
		got[r.Source], quiet[r.Source] = r.NoSeries, r.NoErrors
	}
	want := map[string]bool{"inference/qps@model": false, "vllm/latency_p99@model": true, "events/kube-state-metrics": false, "triton/qps@model": false,
		"inference/error_rate@model": false}
	for src, w := range want {
		if got[src] != w {
			t.Errorf("%s: NoSeries %v, want %v", src, got[src], w)
		}
	}
	if !quiet["inference/error_rate@model"] || quiet["vllm/latency_p99@model"] {
		t.Errorf("NoErrors %v: want it for the error-rate source alone", quiet)
	}
}
