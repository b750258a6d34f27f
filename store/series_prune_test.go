package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func seriesCount(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	if err := st.DB().QueryRow(context.Background(), `SELECT count(*) FROM series`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Every rollout names new pods: once retention has dropped a series'
// points, maintenance deletes the series too (the table grew for ever,
// and every series lookup with it). A writer holding the deleted id is
// told, not left writing points no series owns.
func TestMaintainPrunesExpiredSeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := testclock.Now().UTC()
	old := now.Add(-40 * 24 * time.Hour).Truncate(time.Hour)
	gone := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
		Scope:  correlate.Scope{Model: "chat", Replica: "chat-7f9c-abcde"},
		Points: ramp(old, 60, 15*time.Second, func(i int) float64 { return 100 })}
	live := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
		Scope: correlate.Scope{Model: "chat", Replica: "chat-0"},
		Points: append(ramp(old, 60, 15*time.Second, func(i int) float64 { return 100 }),
			ramp(now.Add(-time.Hour).Truncate(time.Minute), 60, 15*time.Second, func(i int) float64 { return 100 })...)}
	writeCurves(t, st, []correlate.Curve{gone, live})
	ids, err := st.EnsureSeries(ctx, []store.SeriesDef{{Curve: gone}, {Curve: live}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Maintain(ctx, now, 0, store.Retention{Points: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if n := seriesCount(t, st); n != 1 {
		t.Fatalf("%d series after retention, want 1 (the pod gone 40 days ago deleted)", n)
	}
	cs, err := st.Curves(ctx, store.CurveFilter{From: now.Add(-2 * time.Hour), To: now, Scope: correlate.Scope{Model: "chat"}})
	if err != nil || len(cs) != 1 || cs[0].Scope.Replica != "chat-0" || len(cs[0].Points) != 60 {
		t.Fatalf("curves after retention: %v, %v", cs, err)
	}
	// The pod's name is back (a StatefulSet): its cached id is refused…
	back := []correlate.Point{{T: now.Add(-time.Minute).UnixMilli(), V: 120}}
	_, err = st.UpsertPoints(ctx, []store.SeriesPoints{{SeriesID: ids[gone.Key()], Points: back}})
	if !errors.Is(err, store.ErrSeriesGone) {
		t.Fatalf("points for a deleted series: %v, want ErrSeriesGone", err)
	}
	// … and nothing of the refused batch was written, not even the
	// live series' points in it.
	_, err = st.UpsertPoints(ctx, []store.SeriesPoints{{SeriesID: ids[live.Key()], Points: back}, {SeriesID: ids[gone.Key()], Points: back}})
	if !errors.Is(err, store.ErrSeriesGone) {
		t.Fatalf("a batch with a deleted series: %v, want ErrSeriesGone", err)
	}
	var stray int
	if err := st.DB().QueryRow(ctx, `SELECT count(*) FROM points WHERE time = $1`, time.UnixMilli(back[0].T)).Scan(&stray); err != nil || stray != 0 {
		t.Fatalf("%d points of a refused batch stored (%v)", stray, err)
	}
	// … and looked up again, it is a series anew.
	ids2, err := st.EnsureSeries(ctx, []store.SeriesDef{{Curve: gone}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpsertPoints(ctx, []store.SeriesPoints{{SeriesID: ids2[gone.Key()], Points: back}}); err != nil {
		t.Fatal(err)
	}
	if n := seriesCount(t, st); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
}

// A series being written while maintenance runs is not deleted, even when
// its last points had all expired: its writer's transaction holds it,
// and what it commits moves the series' last point forward.
func TestPruneSkipsASeriesBeingWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := testclock.Now().UTC()
	c := correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	ids, err := st.EnsureSeries(ctx, []store.SeriesDef{{Curve: c}})
	if err != nil {
		t.Fatal(err)
	}
	// A series from long ago, with no point left.
	if _, err := st.DB().Exec(ctx, `UPDATE series SET last_point = $1`, now.Add(-60*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.EnsurePartitions(ctx, store.TablePoints, now); err != nil {
		t.Fatal(err)
	}
	pts := []correlate.Point{{T: now.Add(-time.Minute).UnixMilli(), V: 3}}
	err = st.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.UpsertPoints(ctx, []store.SeriesPoints{{SeriesID: ids[c.Key()], Points: pts}}); err != nil {
			return err
		}
		// Maintenance on another connection, before the points commit.
		n, err := st.PruneSeries(ctx, now.Add(-30*24*time.Hour))
		if err != nil || n != 0 {
			t.Errorf("prune during the write: %d deleted, %v; want 0", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneSeries(ctx, now.Add(-30*24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("prune after the write: %d deleted, %v; want 0", n, err)
	}
	cs, err := st.Curves(ctx, store.CurveFilter{From: now.Add(-time.Hour), To: now, Scope: correlate.Scope{Model: "chat"}})
	if err != nil || len(cs) != 1 || len(cs[0].Points) != 1 {
		t.Fatalf("curves: %v, %v", cs, err)
	}
}

// BenchmarkUpsertPointsLiveRound is one live pull round's write: 1,000
// series, 4 new points each (a minute of 15 s points),
// each round a later minute. What the series lock and last_point cost
// (claimSeries: two statements a write, an update once a day) shows next
// to the COPY itself.
func BenchmarkUpsertPointsLiveRound(b *testing.B) {
	ctx := context.Background()
	st := storetest.New(b)
	t0 := testclock.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	defs := make([]store.SeriesDef, 1000)
	for i := range defs {
		defs[i] = store.SeriesDef{Curve: correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
			Scope: correlate.Scope{Model: fmt.Sprintf("m%d", i%10), Replica: fmt.Sprintf("pod-%d", i)}}}
	}
	ids, err := st.EnsureSeries(ctx, defs)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.EnsurePartitions(ctx, store.TablePoints, t0, t0.Add(48*time.Hour)); err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		at := t0.Add(time.Duration(round) * time.Minute)
		batch := make([]store.SeriesPoints, len(defs))
		for i, d := range defs {
			batch[i] = store.SeriesPoints{SeriesID: ids[d.Curve.Key()], Points: ramp(at, 4, 15*time.Second, func(j int) float64 { return float64(j) })}
		}
		if err := st.InTx(ctx, func(tx *store.Store) error { _, err := tx.UpsertPoints(ctx, batch); return err }); err != nil {
			b.Fatal(err)
		}
		round++
	}
}
