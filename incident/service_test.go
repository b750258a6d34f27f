package incident_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestResolveTellsWatchersOnceAndFreezes: a resolution tells the watchers
// and freezes (before returning for a person); resolving again changes
// nothing and tells nobody.
func TestResolveTellsWatchersOnceAndFreezes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	var told []int64
	svc := incident.New(st, incident.Options{Watchers: []func(int64){func(id int64) { told = append(told, id) }}})
	in, err := svc.Open(ctx, store.NewIncident{Title: "slow", Start: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := svc.Resolve(ctx, in.ID, incident.FreezeNow); err != nil {
			t.Fatal(err)
		}
	}
	if len(told) != 2 || told[0] != in.ID || told[1] != in.ID {
		t.Fatalf("watchers told %v, want the id twice (opened, resolved)", told)
	}
	if _, ok, err := st.SnapshotTime(ctx, in.ID); err != nil || !ok {
		t.Fatalf("not frozen before Resolve returned (%v)", err)
	}
}

// TestRunFreezesResolvedIncidentsWithoutSnapshot: the freeze queue lives
// in memory; an incident resolved without its freeze (a restart came in
// between) is frozen when the worker starts.
func TestRunFreezesResolvedIncidentsWithoutSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now()
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "lost freeze", Start: now.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ResolveIncident(ctx, in.ID, now); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go incident.New(st, incident.Options{}).Run(wctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, ok, err := st.SnapshotTime(ctx, in.ID); err != nil || ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not freeze the resolved incident")
		}
	}
}

// TestConcurrentResolvesTellOnce: two resolving at once (a person and the
// detector) resolve the incident once: one notification, one freeze. And
// the detector's later window moves leave the resolved incident alone.
func TestConcurrentResolvesTellOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	var mu sync.Mutex
	told := 0
	svc := incident.New(st, incident.Options{Watchers: []func(int64){func(int64) { mu.Lock(); told++; mu.Unlock() }}})
	for round := range 5 {
		in, err := svc.Open(ctx, store.NewIncident{Title: fmt.Sprintf("slow %d", round), Start: time.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		told = 0
		mu.Unlock()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := svc.Resolve(ctx, in.ID, incident.FreezeLater); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if told != 1 {
			t.Fatalf("round %d: watchers told %d times, want once", round, told)
		}
		resolved, _ := st.Incident(ctx, in.ID)
		if err := svc.SetEnd(ctx, in.ID, nil); err != nil {
			t.Fatal(err)
		}
		if err := svc.WidenToFleet(ctx, in.ID, "renamed"); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Incident(ctx, in.ID); got.End == nil || !got.End.Equal(*resolved.End) || got.Title != resolved.Title {
			t.Fatalf("resolved incident changed by the detector's moves: end %v title %q", got.End, got.Title)
		}
	}
}

// TestFreezeKeepsTheIncidentsOwnSamples: the snapshot's slow samples are
// capped; the incident's own span comes first, the margin around it after.
// Frozen before any analysis (every sample counts as slow), 25,000
// samples in the half hour before the start filled the cap and none of
// the incident's 50 was kept: after retention, its share link showed none.
func TestFreezeKeepsTheIncidentsOwnSamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	start, end := now.Add(-20*time.Minute), now.Add(-10*time.Minute)
	if err := st.EnsurePartitions(ctx, store.TableSamples, start.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
	var xs []correlate.Sample
	for i := range 25000 {
		xs = append(xs, correlate.Sample{RequestID: fmt.Sprintf("pre-%05d", i), Time: start.Add(-30 * time.Minute).Add(time.Duration(i) * 70 * time.Millisecond),
			Model: "chat", Status: "ok", TotalMs: 100, SampleRate: 1})
	}
	for i := range 50 {
		xs = append(xs, correlate.Sample{RequestID: fmt.Sprintf("own-%02d", i), Time: start.Add(time.Duration(i) * 10 * time.Second),
			Model: "chat", Status: "ok", TotalMs: 900, SampleRate: 1})
	}
	if _, _, err := st.InsertSamples(ctx, xs); err != nil {
		t.Fatal(err)
	}
	svc := incident.New(st, incident.Options{})
	in, err := svc.Open(ctx, store.NewIncident{Title: "slow", Start: start, End: &end})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resolve(ctx, in.ID, incident.FreezeNow); err != nil {
		t.Fatal(err)
	}
	sn, err := st.LoadSnapshot(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	own, pre := 0, 0
	for _, x := range sn.FrozenSamples {
		if strings.HasPrefix(x.RequestID, "own-") {
			own++
		} else {
			pre++
		}
	}
	if own != 50 || pre == 0 || len(sn.FrozenSamples) > 22000 {
		t.Errorf("snapshot holds %d of the incident's 50 samples and %d of the margin's (%d in all)", own, pre, len(sn.FrozenSamples))
	}
}

// TestSweepFreezesSharedIncidentsWhoseWindowEnded: a manual incident over
// a past window stays open, and only resolving froze one: its share link
// read live data, and showed less and less as retention dropped it. Once
// its window has settled, a shared one is frozen; an unshared one is not.
func TestSweepFreezesSharedIncidentsWhoseWindowEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now()
	end := now.Add(-2 * time.Hour)
	shared, err := st.CreateIncident(ctx, store.NewIncident{Title: "postmortem", Start: end.Add(-time.Hour), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateShareLink(ctx, shared.ID); err != nil {
		t.Fatal(err)
	}
	unshared, err := st.CreateIncident(ctx, store.NewIncident{Title: "kept private", Start: end.Add(-time.Hour), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go incident.New(st, incident.Options{}).Run(wctx)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok, err := st.SnapshotTime(ctx, shared.ID); err != nil || ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared incident over a past window was not frozen")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, ok, _ := st.SnapshotTime(ctx, unshared.ID); ok {
		t.Error("an unshared open incident was frozen")
	}
}

// TestOpenIncidentFrozenBeforeRetentionDropsItsData: an alert incident
// whose resolution was lost stays open for weeks, and only a resolution
// froze one: retention dropped its onset's samples first, and the copy
// frozen at the eventual resolution held nothing of it. Open incidents
// about to lose their data are frozen, and a later freeze keeps what that
// copy holds from before the floor.
func TestOpenIncidentFrozenBeforeRetentionDropsItsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	keep := 30 * 24 * time.Hour
	start := now.Add(-29 * 24 * time.Hour).Truncate(time.Hour)
	if err := st.EnsurePartitions(ctx, store.TableSamples, start, now); err != nil {
		t.Fatal(err)
	}
	onset := correlate.Sample{RequestID: "onset", Time: start.Add(10 * time.Minute), Model: "chat", Status: "ok", TotalMs: 900, SampleRate: 1}
	recent := correlate.Sample{RequestID: "recent", Time: now.Add(-time.Minute), Model: "chat", Status: "ok", TotalMs: 100, SampleRate: 1}
	if _, _, err := st.InsertSamples(ctx, []correlate.Sample{onset, recent}); err != nil {
		t.Fatal(err)
	}
	floor := st.NewSamplesFloor(keep)
	refresh := func(at time.Time) {
		if err := floor.Refresh(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	refresh(now)
	svc := incident.New(st, incident.Options{RetentionFloor: floor.At})
	in, err := svc.Open(ctx, store.NewIncident{Title: "InferenceP99High (model=chat)", Source: store.SourceAlertmanager,
		Start: start, Scope: correlate.Scope{Model: "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	go svc.Run(wctx)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok, err := st.SnapshotTime(ctx, in.ID); err != nil || ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an open incident two days from retention's floor was not frozen")
		}
	}
	stop()
	// Two days on: retention drops the onset's day.
	later := now.Add(2 * 24 * time.Hour)
	if err := st.EnsurePartitions(ctx, store.TableSamples, later); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.InsertSamples(ctx, []correlate.Sample{{RequestID: "later", Time: later.Add(-time.Hour), Model: "chat", Status: "ok",
		TotalMs: 100, SampleRate: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Maintain(ctx, later, 0, store.Retention{Samples: keep}); err != nil {
		t.Fatal(err)
	}
	refresh(later)
	if !floor.At().After(onset.Time) {
		t.Fatalf("retention floor %v does not pass the onset %v: the test shows nothing", floor.At(), onset.Time)
	}
	// The resolution, at last, freezes it again.
	if _, err := svc.Resolve(ctx, in.ID, incident.FreezeNow); err != nil {
		t.Fatal(err)
	}
	sn, err := st.LoadSnapshot(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range sn.FrozenSamples {
		ids = append(ids, x.RequestID)
	}
	if !slices.Contains(ids, "onset") || !slices.Contains(ids, "recent") {
		t.Fatalf("the copy frozen at the resolution holds %v; want the onset's sample (dropped by retention since) and the recent one", ids)
	}
}

// TestSnapshotFollowsAnAnalysisFinishedAfterTheFreeze: a version begun
// before the resolution (or a stale one taken over) finishes after the
// incident was frozen. The frozen page kept the older analysis — its
// causes, and the window and slow samples it set — while the API served
// the newer one, and a link's readers and the ticket's saw different
// causes. The worker freezes the incident again: the snapshot follows the
// newest ready version and says which one it holds.
func TestSnapshotFollowsAnAnalysisFinishedAfterTheFreeze(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	svc := incident.New(st, incident.Options{})
	in, err := svc.Open(ctx, store.NewIncident{Title: "slow", Start: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	finish := func(v int, says string) {
		t.Helper()
		if err := st.FinishAnalysis(ctx, in.ID, v, []byte(`{"causes":[],"reconciliation":"`+says+`"}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	v1, err := st.StartAnalysis(ctx, in.ID, "d1")
	if err != nil {
		t.Fatal(err)
	}
	finish(v1, "first")
	v2, err := st.StartAnalysis(ctx, in.ID, "d2") // still running at the resolution
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resolve(ctx, in.ID, incident.FreezeNow); err != nil {
		t.Fatal(err)
	}
	frozen := func() (string, *store.Snapshot) {
		t.Helper()
		sn, err := st.LoadSnapshot(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		var an correlate.Analysis
		if err := json.Unmarshal(sn.Analysis, &an); err != nil {
			t.Fatal(err)
		}
		return an.Reconciliation, sn
	}
	if says, _ := frozen(); says != "first" {
		t.Fatalf("frozen at the resolution with the analysis saying %q, want the first", says)
	}
	finish(v2, "second")
	if rec, err := st.LatestReadyAnalysis(ctx, in.ID); err != nil || rec.Version != v2 {
		t.Fatalf("the API's analysis is version %d (%v), want %d", rec.Version, err, v2)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go svc.Run(wctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		says, sn := frozen()
		if says == "second" {
			if sn.AnalysisVersion != v2 {
				t.Errorf("the snapshot says it holds analysis version %d, want %d", sn.AnalysisVersion, v2)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot still holds the analysis saying %q; the API serves version %d", says, v2)
		}
	}
}
