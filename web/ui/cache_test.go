package ui

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// The page-data cache is bounded in bytes, not only in entries: one
// heatmap's samples can be tens of MB, and a key per window asked for
// (a millisecond apart) kept 512 of them.
func TestViewDataCacheIsBoundedInBytes(t *testing.T) {
	var c viewDataCache
	ctx := context.Background()
	load := func(n int) func(context.Context) (any, error) {
		return func(context.Context) (any, error) { return make([]correlate.Sample, n), nil }
	}
	for i := range 200 {
		v, err := c.get(ctx, fmt.Sprintf("heat|%d", i), viewDataLiveTTL, load(20_000)) // ~6 MB each
		if err != nil || len(v.([]correlate.Sample)) != 20_000 {
			t.Fatalf("get: %v", err)
		}
		if c.bytes > viewDataMaxBytes {
			t.Fatalf("after %d loads the cache holds ~%d MB", i+1, c.bytes>>20)
		}
	}
	// A value over a quarter of the bound is shared, not kept.
	if _, err := c.get(ctx, "huge", viewDataLiveTTL, load(200_000)); err != nil {
		t.Fatal(err)
	}
	if _, kept := c.m["huge"]; kept {
		t.Error("a 64 MB value was kept")
	}
	// A small value is served from the cache.
	calls := 0
	small := func(context.Context) (any, error) { calls++; return make([]correlate.Sample, 10), nil }
	c.get(ctx, "small", viewDataLiveTTL, small)
	c.get(ctx, "small", viewDataLiveTTL, small)
	if calls != 1 {
		t.Errorf("a small value loaded %d times", calls)
	}
}

// Live page data is shared by every incident: its cache keys must hold
// what differs between two incidents over one window and scope — the
// story model, whose GPU lanes the timeline adds, and the slow threshold
// the heatmap's thinning keeps samples above. Two such incidents swapped
// their GPU lanes.
func TestViewDataKeysTellIncidentsApart(t *testing.T) {
	from := time.Now().Add(-time.Hour)
	to := from.Add(time.Hour)
	incident := func(model string, p99 float64) *incidentData {
		return &incidentData{an: &correlate.Analysis{Headline: correlate.Headline{Model: model}, P99BeforeMs: p99}}
	}
	a, b, a2 := incident("chat", 100), incident("embed", 400), incident("chat", 100)
	tl := func(d *incidentData) string {
		k, _ := timelineKey(d, from, to, time.Minute, correlate.Scope{})
		return k
	}
	heat := func(d *incidentData) string { k, _ := heatKey(d, from, to, correlate.Scope{}); return k }
	if tl(a) == tl(b) || heat(a) == heat(b) {
		t.Errorf("two incidents share keys: %q / %q, %q / %q", tl(a), tl(b), heat(a), heat(b))
	}
	if tl(a) != tl(a2) || heat(a) != heat(a2) {
		t.Error("alike incidents do not share their data")
	}
}
