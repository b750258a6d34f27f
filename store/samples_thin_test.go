package store_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestThinnedSamplesStayUnbiased: thinning keeps every slow sample and a
// hash-chosen 1 in k of the fast ones with k times the weight, so weighted
// counts match the unthinned read.
func TestThinnedSamplesStayUnbiased(t *testing.T) {
	t.Parallel()
	ctx, st := context.Background(), storetest.New(t)
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	var in []correlate.Sample
	for i := 0; i < 20000; i++ {
		s := correlate.Sample{RequestID: fmt.Sprintf("r-%d", i), Time: t0.Add(time.Duration(i) * 100 * time.Millisecond),
			Model: "m", TotalMs: 100, SampleRate: 2}
		if i%100 == 0 {
			s.TotalMs = 1000
		}
		in = append(in, s)
	}
	if _, _, err := st.InsertSamples(ctx, in); err != nil {
		t.Fatal(err)
	}
	f := store.SampleFilter{From: t0, To: t0.Add(time.Hour), Bulk: true, Thin: 4, KeepAbove: 500}
	got, err := st.Samples(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	var slow, fastW float64
	fast := 0
	for _, s := range got {
		if s.TotalMs >= 500 {
			slow++
			if s.SampleRate != 2 {
				t.Fatalf("a slow sample was re-weighted: %v", s.SampleRate)
			}
			continue
		}
		fast++
		fastW += s.SampleRate
	}
	if slow != 200 {
		t.Errorf("kept %v slow samples, want all 200", slow)
	}
	if fast < 4000 || fast > 6000 {
		t.Errorf("kept %d of 19,800 fast samples, want about a quarter", fast)
	}
	if want := 19800.0 * 2; math.Abs(fastW-want)/want > 0.05 {
		t.Errorf("weighted fast requests %.0f, want %.0f ±5%%", fastW, want)
	}
	est, p90, err := st.SampleVolume(ctx, t0, t0.Add(time.Hour))
	if err != nil || p90 <= 0 || est < 0 {
		t.Errorf("volume estimate %d, p90 %.0f (%v)", est, p90, err)
	}
	// A window this small is counted exactly: a 2 % block sample of it
	// is a few runs of neighbouring rows, off by a third depending on the
	// hour of the day (how the window falls across the daily partitions).
	if est != 20000 {
		t.Errorf("volume of a 20,000-sample window: %d, want it exact", est)
	}
}
