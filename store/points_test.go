package store_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func writeCurves(t testing.TB, st *store.Store, curves []correlate.Curve) {
	t.Helper()
	ctx := context.Background()
	defs := make([]store.SeriesDef, len(curves))
	var times []time.Time
	for i, c := range curves {
		defs[i] = store.SeriesDef{Curve: c, Labels: map[string]string{"pod": c.Scope.Replica}}
		for _, p := range c.Points {
			times = append(times, p.Time())
		}
	}
	ids, err := st.EnsureSeries(ctx, defs)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsurePartitions(ctx, store.TablePoints, times...); err != nil {
		t.Fatal(err)
	}
	batch := make([]store.SeriesPoints, len(curves))
	for i, c := range curves {
		batch[i] = store.SeriesPoints{SeriesID: ids[c.Key()], Points: c.Points}
	}
	if _, err := st.UpsertPoints(ctx, batch); err != nil {
		t.Fatal(err)
	}
}

func ramp(t0 time.Time, n int, step time.Duration, f func(i int) float64) []correlate.Point {
	out := make([]correlate.Point, n)
	for i := range out {
		out[i] = correlate.Point{T: t0.Add(time.Duration(i) * step).UnixMilli(), V: f(i)}
	}
	return out
}

func TestCurvesUpsertFilterDownsample(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	// The window crosses midnight, so points land in two day partitions.
	t0 := time.Date(2026, 10, 5, 23, 0, 0, 0, time.UTC)
	model := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"},
		Points: ramp(t0, 480, 15*time.Second, func(i int) float64 { return float64(i) })}
	rep := correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelReplica,
		Scope:  correlate.Scope{Model: "chat", Version: "v1", Replica: "chat-a", Node: "n1"},
		Points: ramp(t0, 480, 15*time.Second, func(int) float64 { return 2 })}
	node := correlate.Curve{Role: correlate.RoleNodeCPU, Level: correlate.LevelNode, Scope: correlate.Scope{Node: "n1"},
		Points: ramp(t0, 480, 15*time.Second, func(int) float64 { return 0.5 })}
	writeCurves(t, st, []correlate.Curve{model, rep, node})

	// Re-pull an overlapping range with new values: one point per time.
	over := model
	over.Points = ramp(t0.Add(time.Hour), 480, 15*time.Second, func(i int) float64 { return 1000 + float64(i) })
	writeCurves(t, st, []correlate.Curve{over})
	var n, distinct int
	if err := st.DB().QueryRow(ctx, `SELECT count(*), count(DISTINCT (series_id, time)) FROM points`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 480*2+480+240 || n != distinct {
		t.Fatalf("points = %d (distinct %d), want %d, one per (series, time)", n, distinct, 480*2+480+240)
	}

	all, err := st.Curves(ctx, store.CurveFilter{From: t0, To: t0.Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("got %d curves, want 3", len(all))
	}
	got := map[string]correlate.Curve{}
	for _, c := range all {
		got[c.Key()] = c
	}
	m := got[model.Key()]
	if len(m.Points) != 480+240 || m.Points[0].T != t0.UnixMilli() || m.Points[719].V != 1479 {
		t.Fatalf("model curve: %d points, first %v, last %v", len(m.Points), m.Points[0], m.Points[len(m.Points)-1])
	}
	for i := 1; i < len(m.Points); i++ {
		if m.Points[i].T <= m.Points[i-1].T {
			t.Fatalf("points not sorted at %d", i)
		}
	}

	// Scope fields match exactly when set; Levels and Roles filter.
	for _, tc := range []struct {
		f    store.CurveFilter
		want int
	}{
		{store.CurveFilter{Scope: correlate.Scope{Model: "chat"}}, 2},
		{store.CurveFilter{Scope: correlate.Scope{Node: "n1"}}, 2},
		{store.CurveFilter{Scope: correlate.Scope{Replica: "chat-a"}}, 1},
		{store.CurveFilter{Levels: []correlate.Level{correlate.LevelNode}}, 1},
		{store.CurveFilter{Roles: []correlate.Role{correlate.RoleQPS, correlate.RoleNodeCPU}}, 2},
		{store.CurveFilter{Nodes: []string{"n2"}}, 0},
		{store.CurveFilter{Scope: correlate.Scope{Model: "other"}}, 0},
	} {
		tc.f.From, tc.f.To = t0, t0.Add(3*time.Hour)
		cs, err := st.Curves(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		ser, err := st.CurveSeries(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != tc.want || len(ser) != tc.want {
			t.Errorf("filter %+v: %d curves, %d series, want %d", tc.f, len(cs), len(ser), tc.want)
		}
	}

	// Downsampled: 5-minute buckets keep the max for latency, the mean else.
	ds, err := st.Curves(ctx, store.CurveFilter{From: t0, To: t0.Add(time.Hour), Step: 5 * time.Minute,
		MaxRoles: []correlate.Role{correlate.RoleLatencyP99}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ds {
		if len(c.Points) != 12 {
			t.Fatalf("%s: %d buckets, want 12", c.Key(), len(c.Points))
		}
		if c.Role == correlate.RoleLatencyP99 && c.Points[0].V != 19 {
			t.Errorf("latency bucket 0 = %v, want the max 19", c.Points[0].V)
		}
		if c.Role == correlate.RoleQPS && math.Abs(c.Points[3].V-2) > 1e-9 {
			t.Errorf("qps bucket = %v, want the mean 2", c.Points[3].V)
		}
	}
}

func TestPullCursorsAndGaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	t0 := time.Date(2026, 10, 6, 6, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	if _, ok, err := st.PullCursor(ctx, "q"); err != nil || ok {
		t.Fatalf("fresh cursor: ok=%v err=%v", ok, err)
	}
	if err := st.RecordPullError(ctx, "q", t0, t0.Add(time.Minute), now, "connection refused", true); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPullError(ctx, "q", t0, t0.Add(2*time.Minute), now, "connection refused", true); err != nil {
		t.Fatal(err)
	}
	gaps, err := st.PullGaps(ctx, time.Time{})
	if err != nil || len(gaps) != 1 || !gaps[0].To.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("gaps = %+v, %v; want one open gap extended to +2m", gaps, err)
	}
	if err := st.AdvancePullCursor(ctx, "q", t0.Add(time.Minute), now, 10); err != nil {
		t.Fatal(err)
	}
	gaps, _ = st.PullGaps(ctx, time.Time{})
	if len(gaps) != 1 || gaps[0].FilledAt != nil || !gaps[0].Done.Equal(t0.Add(time.Minute)) {
		t.Fatalf("half-filled gap = %+v", gaps)
	}
	if err := st.AdvancePullCursor(ctx, "q", t0.Add(3*time.Minute), now, 10); err != nil {
		t.Fatal(err)
	}
	if gaps, _ = st.PullGaps(ctx, time.Time{}); len(gaps) != 0 {
		t.Fatalf("gap still open after the cursor passed it: %+v", gaps)
	}
	srcs, err := st.PullSources(ctx)
	if err != nil || len(srcs) != 1 || srcs[0].ErrorsTotal != 2 || srcs[0].PointsTotal != 20 || srcs[0].LastError != "" {
		t.Fatalf("sources = %+v, %v", srcs, err)
	}

	// History jobs: the newest job per source over exactly a range.
	g1, err := st.OpenHistoryGap(ctx, "q", t0, now, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AdvanceGap(ctx, g1.ID, t0.Add(30*time.Minute), now); err != nil {
		t.Fatal(err)
	}
	hg, err := st.HistoryGaps(ctx, t0, now)
	if err != nil || hg["q"].ID != g1.ID || !hg["q"].Done.Equal(t0.Add(30*time.Minute)) || hg["q"].FilledAt != nil {
		t.Fatalf("history gaps = %+v, %v; want job %d done at +30m", hg, err, g1.ID)
	}
	if err := st.AdvanceGap(ctx, g1.ID, now, now); err != nil {
		t.Fatal(err)
	}
	g2, err := st.OpenHistoryGap(ctx, "q", t0, now, now)
	if err != nil {
		t.Fatal(err)
	}
	if hg, _ = st.HistoryGaps(ctx, t0, now); hg["q"].ID != g2.ID || hg["q"].FilledAt != nil {
		t.Fatalf("newest job = %+v, want %d", hg["q"], g2.ID)
	}
	if hg, _ = st.HistoryGaps(ctx, t0, now.Add(time.Second)); len(hg) != 0 {
		t.Fatalf("another range: %+v", hg)
	}
}

func TestLeaseOneHolderAndFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	a, b := store.New(newPool(t, url)), store.New(newPool(t, url))
	la, ok, err := a.TryLease(ctx, "pull")
	if err != nil || !ok {
		t.Fatalf("first lease: ok=%v err=%v", ok, err)
	}
	if _, ok, err := b.TryLease(ctx, "pull"); err != nil || ok {
		t.Fatalf("second holder: ok=%v err=%v", ok, err)
	}
	if err := la.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// A holder whose host dies sends no FIN: the server ends its session,
	// and frees the lock, when TCP keepalives go unanswered — after 25 s,
	// not the kernel's default of two hours and more.
	for name, want := range map[string]string{"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5",
		"tcp_keepalives_count": "3", "tcp_user_timeout": "25000"} {
		if got, err := la.Setting(ctx, name); err != nil || got != want {
			t.Errorf("lease session %s = %q (%v), want %s", name, got, err, want)
		}
	}
	if held, err := b.LeaseHeld(ctx, "pull"); err != nil || !held {
		t.Fatalf("LeaseHeld = %v, %v", held, err)
	}
	la.Release()
	lb, ok, err := b.TryLease(ctx, "pull")
	if err != nil || !ok {
		t.Fatalf("fail-over: ok=%v err=%v", ok, err)
	}
	// The holder dies (its session is killed): the holder notices, and the
	// lock is free for the next replica.
	if _, err := a.DB().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	if err := lb.Check(ctx); err == nil {
		t.Fatal("lease still reported held after its session was killed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		la, ok, err := a.TryLease(ctx, "pull")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			la.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease not free after its holder died")
		}
		time.Sleep(50 * time.Millisecond)
	}
	lb.Release()
}

func TestUpsertDerivedEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	t0 := time.Date(2026, 10, 6, 6, 0, 0, 0, time.UTC)
	ev := correlate.Event{ID: "ksm-1", Kind: correlate.KindDeploy, Time: t0, Scope: correlate.Scope{Model: "m"}, Source: "kube-state-metrics", Summary: "rollout"}
	if n, err := st.UpsertDerivedEvents(ctx, []correlate.Event{ev}, false); err != nil || n != 1 {
		t.Fatalf("insert: %d, %v", n, err)
	}
	ev.Version, ev.Summary = "v2", "rollout to v2"
	if n, err := st.UpsertDerivedEvents(ctx, []correlate.Event{ev}, true); err != nil || n != 0 {
		t.Fatalf("refresh: %d, %v", n, err)
	}
	other := correlate.Event{ID: "ksm-2", Kind: correlate.KindDeploy, Time: t0, Source: "kube-state-metrics"}
	if _, err := st.UpsertDerivedEvents(ctx, []correlate.Event{other}, true); err != nil {
		t.Fatal(err)
	}
	if n, err := st.UpsertDerivedEvents(ctx, []correlate.Event{ev}, false); err != nil || n != 0 {
		t.Fatalf("re-insert: %d, %v", n, err)
	}
	evs, err := st.Events(ctx, store.EventFilter{From: t0, To: t0.Add(time.Hour)})
	if err != nil || len(evs) != 1 || evs[0].Version != "v2" {
		t.Fatalf("events = %+v, %v; want one, refreshed with version v2", evs, err)
	}
}

func BenchmarkCurves1000x500(b *testing.B) {
	ctx := context.Background()
	st := storetest.New(b)
	t0 := time.Date(2026, 10, 6, 6, 0, 0, 0, time.UTC)
	curves := make([]correlate.Curve, 1000)
	for i := range curves {
		curves[i] = correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
			Scope:  correlate.Scope{Model: fmt.Sprintf("m%d", i%10), Replica: fmt.Sprintf("pod-%d", i), Node: "n"},
			Points: ramp(t0, 500, 15*time.Second, func(j int) float64 { return float64(j) })}
	}
	writeCurves(b, st, curves)
	if _, err := st.DB().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		cs, err := st.Curves(ctx, store.CurveFilter{From: t0, To: t0.Add(3 * time.Hour)})
		if err != nil || len(cs) != 1000 {
			b.Fatalf("%d curves, %v", len(cs), err)
		}
	}
}

func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestPointsWriteForgetsADroppedPartition: another replica's retention
// dropped a day partition this process had cached; the failed write
// forgets the cache, so the next round's EnsurePartitions creates it again
// (every later write of that source failed until a restart).
func TestPointsWriteForgetsADroppedPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	day := testclock.Now().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour)
	c := correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "m"},
		Points: ramp(day.Add(time.Hour), 4, 15*time.Second, func(i int) float64 { return float64(i) })}
	writeCurves(t, st, []correlate.Curve{c})
	other := store.New(pool) // another replica: its own partition cache
	if _, err := other.DropPartitionsBefore(ctx, store.TablePoints, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ids, err := st.EnsureSeries(ctx, []store.SeriesDef{{Curve: c}})
	if err != nil {
		t.Fatal(err)
	}
	write := func() error {
		if err := st.EnsurePartitions(ctx, store.TablePoints, day); err != nil {
			return err
		}
		_, err := st.UpsertPoints(ctx, []store.SeriesPoints{{SeriesID: ids[c.Key()], Points: c.Points}})
		return err
	}
	if err := write(); err == nil {
		t.Fatal("a write into the dropped partition succeeded")
	}
	if err := write(); err != nil {
		t.Fatalf("the next round's write: %v", err)
	}
}
