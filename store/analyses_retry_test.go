package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A resolved incident whose analysis failed, or whose analyzer died
// between start and finish, showed "failed" or "pending" for good: only
// open incidents were analysed again. Those are listed — once the last
// attempt is older than the pause, so a deterministic failure is not
// retried every pass — and incidents with a ready version are not.
func TestResolvedIncidentsWithoutReadyAnalysisAreRetried(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	now := time.Now().UTC()
	incident := func(status string) int64 {
		in, err := st.CreateIncident(ctx, store.NewIncident{Title: status, Start: now.Add(-2 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		v, err := st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		switch status {
		case "ready":
			err = st.FinishAnalysis(ctx, in.ID, v, []byte(`{}`), "")
		case "failed":
			err = st.FinishAnalysis(ctx, in.ID, v, nil, "boom")
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ResolveIncident(ctx, in.ID, now); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	ready, failed, pending := incident("ready"), incident("failed"), incident("pending")
	got, err := st.ResolvedWithoutReadyAnalysis(ctx, time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("attempts a moment ago are retried at once: %v", got)
	}
	time.Sleep(50 * time.Millisecond)
	got, err = st.ResolvedWithoutReadyAnalysis(ctx, 10*time.Millisecond, 10)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []int64{failed, pending}; !slices.Equal(got, want) || slices.Contains(got, ready) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}

// An analysis that fails every time is tried maxAnalysisFailures times,
// not every five minutes for a week.
func TestAlwaysFailingAnalysisIsLeftAfterThreeTries(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "x", Start: time.Now().UTC().Add(-2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ResolveIncident(ctx, in.ID, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 4; try++ {
		time.Sleep(20 * time.Millisecond)
		got, err := st.ResolvedWithoutReadyAnalysis(ctx, 10*time.Millisecond, 10)
		if err != nil {
			t.Fatal(err)
		}
		if listed := slices.Contains(got, in.ID); listed != (try <= 3) {
			t.Fatalf("try %d: listed %v", try, listed)
		}
		v, err := st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.FinishAnalysis(ctx, in.ID, v, nil, "boom"); err != nil {
			t.Fatal(err)
		}
	}
	// Pruning keeps the failures that count the tries.
	if _, err := st.PruneAnalyses(ctx, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if got, err := st.ResolvedWithoutReadyAnalysis(ctx, 10*time.Millisecond, 10); err != nil || slices.Contains(got, in.ID) {
		t.Fatalf("after pruning: listed %v (%v), want the incident left failed", got, err)
	}
}
