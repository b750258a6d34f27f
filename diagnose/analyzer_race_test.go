package diagnose_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"

	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Every serve replica runs an analyzer. Two analysing one incident at
// once each read "no previous version", and the second to finish was
// stored as a new version whose previous top cause was "" — a spurious
// cause.changed webhook. One incident is analysed by one replica at a
// time: the other leaves it, and finds the same data analysed after.
func TestReplicasAnalyseOneIncidentOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(130 * time.Minute)
	nodeFault(t, st, onset, end)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "node", Start: onset.Add(-60 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		ready []string
		wg    sync.WaitGroup
	)
	for range 4 { // four replicas
		an := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{OnReady: func(id int64, v int, prev, top string) {
			mu.Lock()
			ready = append(ready, fmt.Sprintf("%d:%s>%s", v, prev, top))
			mu.Unlock()
		}})
		wg.Go(func() {
			if _, err := an.Analyze(ctx, in.ID, false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(ready) != 1 || ready[0] != "1:>local_replica" {
		t.Fatalf("OnReady calls %v, want one first version", ready)
	}
}

// A history pull records the spikes it finds (the home page lists them).
// A regression that holds was recorded as over once the trailing
// baseline took in the new level — "ended at 20:11" with the latency
// still ×2 — while the incident page said ongoing. Recording sees a held
// rise as the live detector does.
func TestRecordedHistoryKeepsAHeldRegressionOngoing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := onset.Add(150 * time.Minute) // still ×4 at the end of the data
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, end.Add(time.Hour), end)})
	if _, err := diagnose.NewDetector(st, diagnose.DetectorOptions{}).Record(ctx, onset.Add(-time.Hour), end); err != nil {
		t.Fatal(err)
	}
	rec, err := st.RecordedSpikes(ctx, onset.Add(-time.Hour), end, 10)
	if err != nil || len(rec) == 0 {
		t.Fatalf("recorded %d spikes (%v)", len(rec), err)
	}
	for _, r := range rec {
		if r.Scope.Model == "chat" && r.Role == correlate.RoleLatencyP99 && r.Onset.Sub(onset).Abs() < 5*time.Minute && !r.Ongoing {
			t.Fatalf("the held regression was recorded as over at %v", r.End)
		}
	}
}

// Latency "recovers" when requests start failing fast: a model whose
// requests now error out in a millisecond has a lower P99 than a slow
// one. The detector resolved that incident as the outage got worse. An
// incident stays open while its model's error rate stands well above
// where it was before the incident.
func TestDetectorKeepsAnIncidentOpenWhileErrorsReplaceLatency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	failing := onset.Add(20 * time.Minute) // latency back down, errors up
	end := failing.Add(90 * time.Minute)
	errs := correlate.Curve{Role: correlate.RoleErrorRate, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
		v := 0.001
		if !ts.Before(failing) {
			v = 0.3
		}
		errs.Points = append(errs.Points, correlate.Point{T: ts.UnixMilli(), V: v})
	}
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, failing, end), errs})
	var now time.Time
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	for now = onset.Add(2 * time.Minute); now.Before(end); now = now.Add(5 * time.Minute) {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("incidents %+v (%v), want one", list, err)
	}
	if list[0].Status != store.IncidentOpen {
		t.Fatalf("with 30%% of requests failing for 90 minutes the incident is %s", list[0].Status)
	}
}

// A spike that joins an open incident just as someone resolves it: the
// detector found the incident open, then attached the spike after the
// resolution, and the spike sat on a resolved incident with nobody
// paged. Here vision's spike joins chat's incident, which is resolved
// between the join (the widening to the fleet tells the watchers) and the
// attach: vision gets an incident of its own, open.
func TestSpikeJoiningAsItsIncidentResolvesOpensAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	spikeEnd := t0.Add(115 * time.Minute)
	end := t0.Add(170 * time.Minute)
	rng := rand.New(rand.NewPCG(2, 2))
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rng, onset, spikeEnd, end), modelP99("vision", rng, onset, spikeEnd, end)})
	now := spikeEnd.Add(-5 * time.Minute)
	clock := func() time.Time { return now }
	var resolved int64
	resolveWhenWidened := func(id int64) {
		in, err := st.Incident(ctx, id)
		if err != nil {
			t.Error(err)
			return
		}
		if in.Status == store.IncidentOpen && in.Scope.Model == "" { // the second model is joining
			if _, err := st.ResolveIncident(ctx, id, now); err != nil {
				t.Error(err)
			}
			resolved = id
		}
	}
	incidents := incident.New(st, incident.Options{Now: clock, Watchers: []func(int64){resolveWhenWidened}})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if resolved == 0 {
		t.Fatal("no incident was widened to the fleet: the second spike did not join the first's")
	}
	rec, err := st.RecordedSpikes(ctx, t0, end, 20)
	if err != nil {
		t.Fatal(err)
	}
	var on []string // the models of the resolved incident's spikes
	for _, r := range rec {
		if r.IncidentID == nil {
			continue
		}
		if *r.IncidentID == resolved {
			on = append(on, r.Scope.Model)
			continue
		}
		in, err := st.Incident(ctx, *r.IncidentID)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != store.IncidentOpen || in.Scope.Model != r.Scope.Model {
			t.Errorf("%s's spike on incident %d (%s, scope %q), want an open incident of its own", r.Scope.Model, in.ID, in.Status, in.Scope.Model)
		}
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen})
	if err != nil || len(list) != 1 {
		t.Fatalf("open incidents %+v (%v), want the second model's", list, err)
	}
	if len(on) != 1 {
		t.Fatalf("the resolved incident holds the spikes of %v, want the first model's alone", on)
	}
}

// The detector lease moves between replicas while the old holder's pass
// closes a quiet incident: it has read the incident's spikes as over, and
// before it resolves, the new holder's pass finds the model slow again
// and attaches the new, ongoing spike to the still-open incident. The
// resolution then left a resolved incident holding an ongoing spike, and
// nobody was paged until the detector paged again ten minutes later. The
// close pass resolves only an incident its spikes still say is quiet.
func TestDetectorHandOverDoesNotResolveAnIncidentAsASpikeJoinsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	spikeEnd := t0.Add(115 * time.Minute)
	// The second spike: once its baseline has left the first behind (it
	// is not told from the first one's tail before), and within the
	// window's merge, which is longer for it.
	again := spikeEnd.Add(65 * time.Minute)
	const merge = 55 * time.Minute
	end := again.Add(20 * time.Minute)
	rng := rand.New(rand.NewPCG(3, 3))
	chat := modelP99("chat", rng, onset, spikeEnd, end)
	for i, p := range chat.Points {
		if !p.Time().Before(again) {
			chat.Points[i].V *= 4
		}
	}
	storetest.WriteCurves(t, st, []correlate.Curve{chat})

	lease := func() *store.Lease {
		t.Helper()
		l, ok, err := st.TryLease(ctx, "detect")
		if err != nil || !ok {
			t.Fatalf("taking the detector lease: held elsewhere %v (%v)", !ok, err)
		}
		return l
	}
	oldLease := lease()
	defer func() { oldLease.Release() }()
	oldNow := spikeEnd.Add(-5 * time.Minute)
	newNow := again.Add(10 * time.Minute)
	newDetector := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: merge,
		Now: func() time.Time { return newNow }})
	var (
		handOver bool  // the old pass is closing the incident: the lease moves now
		joined   int64 // the incident the new pass attached its spike to
	)
	// The old detector's service tells its watchers after each change:
	// the close pass's move of the window's end comes after it read the
	// spikes and before it resolves.
	watch := func(id int64) {
		if !handOver {
			return
		}
		in, err := st.Incident(ctx, id)
		if err != nil || in.Status != store.IncidentOpen || in.End == nil {
			return
		}
		handOver = false
		oldLease.Release()
		newLease := lease()
		defer newLease.Release()
		if err := newDetector.Once(ctx); err != nil {
			t.Error(err)
			return
		}
		rec, err := st.RecordedSpikes(ctx, again.Add(-5*time.Minute), newNow, 10)
		if err != nil {
			t.Error(err)
			return
		}
		for _, r := range rec {
			if r.Ongoing && r.IncidentID != nil {
				joined = *r.IncidentID
			}
		}
	}
	oldIncidents := incident.New(st, incident.Options{Now: func() time.Time { return oldNow }, Watchers: []func(int64){watch}})
	oldDetector := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: merge,
		Now: func() time.Time { return oldNow }, Incidents: oldIncidents})
	if err := oldDetector.Once(ctx); err != nil { // opens the incident
		t.Fatal(err)
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("incidents %+v (%v), want the first spike's", list, err)
	}
	first := list[0].ID
	// Long after the first spike, just before the second shows in the
	// data the old pass reads.
	oldNow = again.Add(-time.Minute)
	handOver = true
	if err := oldDetector.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if handOver {
		t.Fatal("the old pass never moved the incident's end: it did not close it")
	}
	if joined != first {
		t.Fatalf("the new pass put the second spike on incident %d, want it joining incident %d", joined, first)
	}
	in, err := st.Incident(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != store.IncidentOpen || in.End != nil {
		t.Fatalf("incident %d is %s (end %v) holding an ongoing spike; want it open and open-ended", first, in.Status, in.End)
	}
}
