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
