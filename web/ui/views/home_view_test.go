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
