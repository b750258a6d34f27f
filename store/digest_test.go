package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store/storetest"
)

// The digest of a past window changes when data can have arrived in it,
// not on every pull round: a live pull far past the window moved it every
// 30 s, and an open postmortem incident was re-analysed 2,880 times a day.
// A history pull filling the window moves it.
func TestWindowDigestOfAPastWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	from := time.Date(2026, 10, 6, 8, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	now := to.Add(6 * time.Hour)
	digest := func() string {
		t.Helper()
		d, err := st.WindowDigest(ctx, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A source still pulling inside the window moves it.
	must(st.AdvancePullCursor(ctx, "lagging", from.Add(30*time.Minute), now, 100))
	d0 := digest()
	must(st.AdvancePullCursor(ctx, "lagging", from.Add(40*time.Minute), now, 100))
	d1 := digest()
	if d1 == d0 {
		t.Error("a pull inside the window did not change its digest")
	}
	// Live pulls hours past the window do not.
	must(st.AdvancePullCursor(ctx, "live", now, now, 5000))
	d2 := digest()
	for i := 1; i <= 3; i++ {
		must(st.AdvancePullCursor(ctx, "live", now.Add(time.Duration(i)*30*time.Second), now, 5000))
		if d := digest(); d != d2 {
			t.Fatalf("round %d of a pull past the window changed its digest: %s → %s", i, d2, d)
		}
	}
	// A history pull over the window does.
	g, err := st.OpenHistoryGap(ctx, "live", from, to, now)
	must(err)
	d3 := digest()
	if d3 == d2 {
		t.Error("opening a history pull over the window did not change its digest")
	}
	must(st.AdvanceGap(ctx, g.ID, from.Add(30*time.Minute), now))
	if d := digest(); d == d3 {
		t.Error("a history pull's progress in the window did not change its digest")
	}
}

// A version left pending by an analyzer that died, on an incident resolved
// meanwhile, is dropped once stale: nothing finishes it (a resolved
// incident is not recomputed) and the page said "recomputing" for ever.
// A fresh one, one of an open incident, or one with nothing ready before
// it (retried instead) stays.
func TestDropAbandonedAnalyses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	mk := func(resolve bool, ready int, age string) int64 {
		t.Helper()
		id := incidentWithSpikes(t, st, base)
		for v := 0; v < ready; v++ {
			readyAnalysis(t, st, id, `{}`)
		}
		v, err := st.StartAnalysis(ctx, id, "d2")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().Exec(ctx, `UPDATE analyses SET created_at = now() - $3::interval WHERE incident_id = $1 AND version = $2`, id, v, age); err != nil {
			t.Fatal(err)
		}
		if resolve {
			if _, err := st.DB().Exec(ctx, `UPDATE incidents SET status = 'resolved', end_at = $2 WHERE id = $1`, id, base.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	abandoned := mk(true, 1, "3 hours")
	fresh := mk(true, 1, "10 seconds")
	open := mk(false, 1, "3 hours")
	nothingReady := mk(true, 0, "3 hours")
	n, err := st.DropAbandonedAnalyses(ctx)
	if err != nil || n != 1 {
		t.Fatalf("dropped %d (%v), want 1", n, err)
	}
	for id, want := range map[int64]string{abandoned: "ready", fresh: "pending", open: "pending", nothingReady: "pending"} {
		latest, err := st.LatestAnalysis(ctx, id)
		if err != nil || string(latest.Status) != want {
			t.Errorf("incident %d: latest %s (%v), want %s", id, latest.Status, err, want)
		}
	}
}
