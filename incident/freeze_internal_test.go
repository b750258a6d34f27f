package incident

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// The baseline of a frozen copy is an even spread of a stream of unknown
// length, held in bounded memory: a window reaching back a year had all
// its baseline samples in memory before they were thinned.
func TestEvenSampleIsBoundedAndEven(t *testing.T) {
	for _, n := range []int{0, 7, 100, 101, 399, 100000} {
		e := evenSample{max: 100}
		peak := 0
		for i := range n {
			e.add(correlate.Sample{TotalMs: float64(i)})
			peak = max(peak, cap(e.kept))
		}
		got := e.result()
		if want := min(n, 100); len(got) != want {
			t.Errorf("n=%d: kept %d, want %d", n, len(got), want)
		}
		if peak > 400 {
			t.Errorf("n=%d: held room for %d items", n, peak)
		}
		// Evenly spread: consecutive items are about n/100 apart.
		if n >= 1000 {
			for i := 1; i < len(got); i++ {
				gap := got[i].TotalMs - got[i-1].TotalMs
				if want := float64(n) / 100; gap < want/2 || gap > want*2 {
					t.Fatalf("n=%d: gap %v between items %d and %d, want about %v", n, gap, i-1, i, want)
				}
			}
		}
	}
}

// The incident's own span starts at the analysis' onset, as the page's
// sample table does: samples between an earlier onset and the start were
// margin, and a busy half hour before them crowded out half of them.
func TestFrozenSamplesSpanStartsAtTheOnset(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	start, end := now.Add(-20*time.Minute), now.Add(-10*time.Minute)
	onset := start.Add(-10 * time.Minute)
	if err := st.EnsurePartitions(ctx, store.TableSamples, start.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
	var xs []correlate.Sample
	for i := range 40000 {
		xs = append(xs, correlate.Sample{RequestID: fmt.Sprintf("pre-%05d", i), Time: onset.Add(-20 * time.Minute).Add(time.Duration(i) * 29 * time.Millisecond),
			Model: "chat", Status: "ok", TotalMs: 900, SampleRate: 1})
	}
	for i := range 50 {
		xs = append(xs, correlate.Sample{RequestID: fmt.Sprintf("own-%02d", i), Time: onset.Add(time.Duration(i) * 10 * time.Second),
			Model: "chat", Status: "ok", TotalMs: 900, SampleRate: 1})
	}
	if _, _, err := st.InsertSamples(ctx, xs); err != nil {
		t.Fatal(err)
	}
	s := New(st, Options{})
	v := View{Incident: store.Incident{Start: start, End: &end},
		Analysis: &correlate.Analysis{Onset: &onset, Samples: correlate.SampleSummary{SlowMs: map[string]float64{"chat": 500}}}}
	from, to := v.Window(now)
	got, err := s.frozenSamples(ctx, v, from, to.Add(time.Nanosecond), map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, x := range got {
		if strings.HasPrefix(x.RequestID, "own-") {
			own++
		}
	}
	if own != 50 || len(got) > snapshotMaxSlow+snapshotMaxBaseline {
		t.Errorf("kept %d of the 50 samples between the onset and the start (%d in all)", own, len(got))
	}
}
