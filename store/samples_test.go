package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func testSamples(base time.Time, from, to int) []correlate.Sample {
	var out []correlate.Sample
	for i := from; i < to; i++ {
		s := correlate.Sample{
			RequestID: fmt.Sprintf("r-%06d", i), Time: base.Add(time.Duration(i) * time.Second),
			Model: []string{"a", "b"}[i%2], Version: "v1", Tenant: "t", Replica: fmt.Sprintf("rep-%d", i%4), Node: "n",
			Entry: "/e", BatchSize: i % 9, Status: "ok", TotalMs: float64(i) + 0.25, SampleRate: 1 + float64(i%3),
			InputTokens: i % 700, OutputTokens: 3 * i,
		}
		for k := range s.StagesMs {
			s.StagesMs[k] = math.NaN()
		}
		s.StagesMs[correlate.StageExec] = float64(i) / 2
		out = append(out, s)
	}
	return out
}

func TestSamplesRoundTripAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 23, 50, 0, 0, time.UTC) // crosses midnight
	in := testSamples(base, 0, 1500)
	a, d, err := st.InsertSamples(ctx, in)
	if err != nil || a != 1500 || d != 0 {
		t.Fatalf("insert: %d %d %v", a, d, err)
	}
	got, err := st.Samples(ctx, store.SampleFilter{From: base, To: base.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1500 {
		t.Fatalf("%d samples, want 1500", len(got))
	}
	for i, g := range got {
		w := in[i]
		if g.RequestID != w.RequestID || !g.Time.Equal(w.Time) || g.Model != w.Model || g.Replica != w.Replica ||
			g.BatchSize != w.BatchSize || g.TotalMs != w.TotalMs || g.SampleRate != w.SampleRate ||
			g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens ||
			g.StagesMs[correlate.StageExec] != w.StagesMs[correlate.StageExec] || !math.IsNaN(g.StagesMs[correlate.StageQueue]) {
			t.Fatalf("sample %d = %+v, want %+v", i, g, w)
		}
	}
	got, err = st.Samples(ctx, store.SampleFilter{From: base, To: base.Add(time.Hour),
		Scope: correlate.Scope{Model: "b", Replica: "rep-1"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].RequestID != "r-000001" || got[1].RequestID != "r-000005" {
		t.Fatalf("filtered: %d samples starting %v", len(got), got)
	}
	// ScanSamples stops at the callback's error and returns it.
	stop := errors.New("stop")
	n := 0
	err = st.ScanSamples(ctx, store.SampleFilter{From: base, To: base.Add(time.Hour)}, func(*correlate.Sample) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("scan stopped after %d with %v", n, err)
	}
}

func TestInsertSamplesStreamErrorStoresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	in := testSamples(time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC), 0, 3000)
	bad := errors.New("line 2500 is bad")
	i := 0
	_, _, err := st.InsertSampleStream(ctx, func(dst *correlate.Sample) error {
		if i == 2500 {
			return bad
		}
		*dst = in[i]
		i++
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want the stream's error unchanged", err)
	}
	var rows int
	if err := st.DB().QueryRow(ctx, `SELECT count(*) FROM samples`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows stored, want 0 (%v)", rows, err)
	}
	// An empty stream is fine.
	a, d, err := st.InsertSampleStream(ctx, func(*correlate.Sample) error { return io.EOF })
	if a != 0 || d != 0 || err != nil {
		t.Fatalf("empty stream: %d %d %v", a, d, err)
	}
}

func TestInsertSamplesConcurrentOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	all := testSamples(base, 0, 4000)
	// Six writers with overlapping ranges, in opposite orders: every
	// sample is stored once, and accepted counts add up.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			part := append([]correlate.Sample(nil), all[w*500:w*500+1500]...)
			if w%2 == 1 {
				for i, j := 0, len(part)-1; i < j; i, j = i+1, j-1 {
					part[i], part[j] = part[j], part[i]
				}
			}
			a, d, err := st.InsertSamples(ctx, part)
			if err != nil || a+d != len(part) {
				t.Errorf("writer %d: %d+%d of %d, %v", w, a, d, len(part), err)
			}
			mu.Lock()
			total += a
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	var rows int
	if err := st.DB().QueryRow(ctx, `SELECT count(*) FROM samples`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4000 || total != 4000 {
		t.Fatalf("%d rows, %d accepted in total, want 4000 and 4000", rows, total)
	}
}
