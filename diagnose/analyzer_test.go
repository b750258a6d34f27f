package diagnose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// t0 starts every fixture: 06:00 two days before the test clock, so the
// detector's "recent" windows and the store's partitions see dates that
// move with the calendar (and with WATERLINE_TEST_CLOCK_SHIFT).
var t0 = testclock.Now().Truncate(24 * time.Hour).Add(-2*24*time.Hour + 6*time.Hour)

// nodeFault writes two models × three replicas for two hours at 15 s, where
// from onset on the replicas on node n2 are three times slower: curves
// (model and replica P99, replica QPS) and samples.
func nodeFault(t testing.TB, st *store.Store, onset time.Time, end time.Time) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	var curves []correlate.Curve
	var samples []correlate.Sample
	for _, m := range []string{"chat", "vision"} {
		mc := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: m}}
		for r := 0; r < 3; r++ {
			sc := correlate.Scope{Model: m, Version: "v1", Replica: fmt.Sprintf("%s-%d", m, r), Node: fmt.Sprintf("n%d", r+1)}
			rc := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica, Scope: sc}
			qc := correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelReplica, Scope: sc}
			for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
				slow := sc.Node == "n2" && !ts.Before(onset)
				v := 200 * math.Exp(0.05*rng.NormFloat64())
				if slow {
					v *= 3
				}
				rc.Points = append(rc.Points, correlate.Point{T: ts.UnixMilli(), V: v})
				qc.Points = append(qc.Points, correlate.Point{T: ts.UnixMilli(), V: 10})
				for k := 0; k < 2; k++ {
					total := 80 * math.Exp(0.3*rng.NormFloat64())
					if slow {
						total *= 3
					}
					s := correlate.Sample{RequestID: fmt.Sprintf("%s-%d-%d", sc.Replica, ts.Unix(), k), Time: ts.Add(time.Duration(k) * 5 * time.Second),
						Model: m, Version: "v1", Tenant: "t1", Replica: sc.Replica, Node: sc.Node, TotalMs: total, SampleRate: 5}
					for i := range s.StagesMs {
						s.StagesMs[i] = total / float64(correlate.NumStages)
					}
					samples = append(samples, s)
				}
			}
			curves = append(curves, rc, qc)
		}
		for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
			v := 200 * math.Exp(0.05*rng.NormFloat64())
			if !ts.Before(onset) {
				v *= 2
			}
			mc.Points = append(mc.Points, correlate.Point{T: ts.UnixMilli(), V: v})
		}
		curves = append(curves, mc)
	}
	storetest.WriteCurves(t, st, curves)
	if _, _, err := st.InsertSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
}

func TestAnalyzerVersionsAndRecompute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(130 * time.Minute)
	nodeFault(t, st, onset, end)
	winEnd := end
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "node", Start: onset.Add(-60 * time.Minute), End: &winEnd})
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	var mu sync.Mutex
	an := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{OnReady: func(id int64, v int, prev, top string) {
		mu.Lock()
		ready = append(ready, fmt.Sprintf("%d:%s>%s", v, prev, top))
		mu.Unlock()
	}})

	rec, err := an.Analyze(ctx, in.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 1 || rec.Status != store.AnalysisReady {
		t.Fatalf("first analysis: version %d status %s", rec.Version, rec.Status)
	}
	var a correlate.Analysis
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	if a.Causes[0].Category != correlate.CatLocalReplica || a.Causes[0].Target.Node != "n2" {
		t.Fatalf("top cause %s %+v, want local_replica on n2", a.Causes[0].Category, a.Causes[0].Target)
	}
	if a.Onset == nil || a.Onset.Sub(onset).Abs() > time.Minute {
		t.Errorf("onset %v, want %v", a.Onset, onset)
	}

	// Same data: no new version.
	if rec, err = an.Analyze(ctx, in.ID, false); err != nil || rec.Version != 1 {
		t.Fatalf("unchanged data: version %d (%v), want 1", rec.Version, err)
	}
	// New samples in the window: a new version.
	late := correlate.Sample{RequestID: "late", Time: onset.Add(10 * time.Minute), Model: "chat", Replica: "chat-1", Node: "n2", TotalMs: 900, SampleRate: 1}
	if _, _, err := st.InsertSamples(ctx, []correlate.Sample{late}); err != nil {
		t.Fatal(err)
	}
	if rec, err = an.Analyze(ctx, in.ID, false); err != nil || rec.Version != 2 {
		t.Fatalf("new data: version %d (%v), want 2", rec.Version, err)
	}
	// Resolved incidents keep their analysis.
	if _, err := st.ResolveIncident(ctx, in.ID, onset.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	late.RequestID, late.TotalMs = "later", 950
	if _, _, err := st.InsertSamples(ctx, []correlate.Sample{late}); err != nil {
		t.Fatal(err)
	}
	if rec, err = an.Analyze(ctx, in.ID, false); err != nil || rec.Version != 2 {
		t.Fatalf("resolved: version %d (%v), want 2", rec.Version, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ready) != 2 || ready[0] != "1:>local_replica" || ready[1] != "2:local_replica>local_replica" {
		t.Errorf("OnReady calls %v", ready)
	}
}

func TestAnalyzerRunsQueue(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(130 * time.Minute)
	nodeFault(t, st, onset, end)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "node", Start: onset.Add(-60 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	an := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{Refresh: time.Hour})
	done := make(chan struct{})
	go func() { an.Run(ctx); close(done) }()
	for i := 0; i < 5; i++ {
		an.Enqueue(in.ID) // bursts collapse into one analysis
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err := st.LatestAnalysis(ctx, in.ID)
		if err == nil && rec.Status == store.AnalysisReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("analysis not ready: %+v %v", rec, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	rec, _ := st.LatestAnalysis(context.Background(), in.ID)
	if rec.Version > 2 {
		t.Errorf("five quick enqueues made %d versions", rec.Version)
	}
}

// modelP99 is a model's P99 curve from t0 to end at 15 s: 200 ms with 5 %
// noise, ×4 in [from, to).
func modelP99(model string, rng *rand.Rand, from, to, end time.Time) correlate.Curve {
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model}}
	for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
		v := 200 * math.Exp(0.05*rng.NormFloat64())
		if !ts.Before(from) && ts.Before(to) {
			v *= 4
		}
		c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v})
	}
	return c
}

func TestDetectorOpensMergesAndResolves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	spikeEnd := t0.Add(115 * time.Minute)
	end := t0.Add(170 * time.Minute)
	rng := rand.New(rand.NewPCG(2, 2))
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rng, onset, spikeEnd, end), modelP99("vision", rng, onset, spikeEnd, end)})

	var opened []int64
	now := spikeEnd.Add(-5 * time.Minute) // the spike is still going
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock, Watchers: []func(int64){func(id int64) { opened = append(opened, id) }}})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute,
		Now: clock, Incidents: incidents})
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Source != store.SourceDetector || list[0].End != nil {
		t.Fatalf("incidents %+v, want one open detector incident (both models' spikes merged)", list)
	}
	// Its analysis must weigh both models: the incident is the fleet's.
	if in := list[0]; in.Scope.Model != "" || !strings.Contains(in.Title, "chat") || !strings.Contains(in.Title, "vision") {
		t.Fatalf("merged incident scope %q, title %q; want the fleet, naming both models", in.Scope.Model, in.Title)
	}
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _, _ = st.ListIncidents(ctx, store.IncidentFilter{}); len(list) != 1 {
		t.Fatalf("a second pass opened another incident: %d", len(list))
	}
	rec, err := st.RecordedSpikes(ctx, t0, end, 10)
	if err != nil || len(rec) < 2 {
		t.Fatalf("recorded spikes %d (%v), want at least the two P99 spikes", len(rec), err)
	}
	// Long after the spike: the window closes and the incident resolves.
	now = end
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.Incident(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.IncidentResolved || got.End == nil {
		t.Fatalf("incident %+v, want resolved with an end", got)
	}
	if len(opened) == 0 || opened[0] != list[0].ID {
		t.Errorf("watcher calls %v", opened)
	}
	// The resolution queued its freeze; the incident worker takes it.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go incidents.Run(wctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, ok, err := st.SnapshotTime(ctx, got.ID); err != nil || ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the detector's resolved incident was not frozen")
		}
	}
}

func TestDetectorRecordsHistoryWithoutIncidents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	nodeFault(t, st, onset, t0.Add(130*time.Minute))
	n, err := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true}).Record(ctx, t0, t0.Add(130*time.Minute))
	if err != nil || n == 0 {
		t.Fatalf("recorded %d spikes (%v), want the model spikes", n, err)
	}
	rec, err := st.RecordedSpikes(ctx, t0, t0.Add(130*time.Minute), 10)
	if err != nil || len(rec) != n {
		t.Fatalf("stored %d spikes (%v), want %d", len(rec), err, n)
	}
	if list, _, _ := st.ListIncidents(ctx, store.IncidentFilter{}); len(list) != 0 {
		t.Fatalf("recording history opened %d incidents", len(list))
	}
}

// TestDetectorSettlesSpikeAcrossDataOutage: a spike still ongoing when the
// data stops is settled at its last seen end: nothing is ongoing without
// data. Its incident waits while the data is missing — nothing says the
// latency came back — but not for ever: a day without data resolves it.
func TestDetectorSettlesSpikeAcrossDataOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(106 * time.Minute) // the data stops mid-spike
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rand.New(rand.NewPCG(3, 3)), onset, end, end)})

	now := end
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 1 || list[0].Status != store.IncidentOpen {
		t.Fatalf("incidents %+v (%v), want one open", list, err)
	}
	rec, err := st.RecordedSpikes(ctx, t0, end, 10)
	if err != nil || len(rec) == 0 || !rec[0].Ongoing {
		t.Fatalf("recorded %+v (%v), want an ongoing spike", rec, err)
	}
	// Three hours without data: the lookback no longer reaches the spike.
	now = end.Add(3 * time.Hour)
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err = st.RecordedSpikes(ctx, t0, end, 10); err != nil || len(rec) == 0 {
		t.Fatalf("recorded %+v (%v)", rec, err)
	}
	for _, r := range rec {
		if r.Ongoing {
			t.Errorf("spike %d (onset %s) still ongoing three hours after its data stopped", r.ID, r.Onset)
		}
	}
	got, err := st.Incident(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.IncidentOpen {
		t.Errorf("incident status %s three hours into a data outage, want open (nothing says the latency came back)", got.Status)
	}
	now = end.Add(25 * time.Hour)
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err = st.Incident(ctx, list[0].ID); err != nil || got.Status != store.IncidentResolved {
		t.Errorf("incident %+v (%v) a day into a data outage, want resolved", got, err)
	}
}

// TestDetectorKeepsASustainedRegressionOpen: the alarm detector lets a
// lasting shift become the new level, so a ×4 regression that holds an
// hour "ends" after some ten minutes. Its incident must stay open for as
// long as the latency is up — also past the detector's lookback — and
// resolve only once the latency came back, with a window reaching the
// recovery.
func TestDetectorKeepsASustainedRegressionOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	recovered := onset.Add(150 * time.Minute) // longer than the 2 h lookback
	end := recovered.Add(60 * time.Minute)
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, recovered, end)})
	var now time.Time
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	var id int64
	for now = onset.Add(2 * time.Minute); now.Before(end); now = now.Add(5 * time.Minute) {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
		list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
		if err != nil || len(list) != 1 {
			t.Fatalf("at onset+%v: incidents %+v (%v), want one", now.Sub(onset), list, err)
		}
		in := list[0]
		id = in.ID
		if now.Before(recovered) && (in.Status != store.IncidentOpen || in.End != nil) {
			t.Fatalf("at onset+%v, latency still ×4: incident %s, end %v; want open with no end", now.Sub(onset), in.Status, in.End)
		}
	}
	in, err := st.Incident(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != store.IncidentResolved || in.End == nil || in.End.Before(recovered) {
		t.Errorf("an hour after the recovery: incident %s, end %v; want resolved, its window reaching the recovery at %v", in.Status, in.End, recovered)
	}
}

// TestDetectorHeldRegressionSurvivesAPullStall: a held ×4 regression whose
// data pauses (12 minutes: a Prometheus restart, a lease failover; 45: more
// than the merge window) and then catches up, still ×4: its incident stays
// open, with no end once caught up, whether the regression began inside
// the detector's lookback or before it.
func TestDetectorHeldRegressionSurvivesAPullStall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ stallAfter, stall time.Duration }{
		{30 * time.Minute, 12 * time.Minute}, {150 * time.Minute, 12 * time.Minute}, {150 * time.Minute, 45 * time.Minute},
	} {
		stallAfter, pause := c.stallAfter, c.stall
		t.Run(fmt.Sprintf("%v+%v", stallAfter, pause), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.New(t)
			onset := t0.Add(100 * time.Minute)
			recovered := onset.Add(4 * time.Hour)
			stall := onset.Add(stallAfter)
			full := modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, recovered, recovered.Add(time.Hour))
			head := full
			head.Points = nil
			for _, p := range full.Points {
				if p.Time().Before(stall) {
					head.Points = append(head.Points, p)
				}
			}
			storetest.WriteCurves(t, st, []correlate.Curve{head})
			var now time.Time
			clock := func() time.Time { return now }
			incidents := incident.New(st, incident.Options{Now: clock})
			det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
			caughtUp := false
			for now = onset.Add(2 * time.Minute); now.Before(recovered); now = now.Add(time.Minute) {
				if !caughtUp && now.After(stall.Add(pause)) {
					storetest.WriteCurves(t, st, []correlate.Curve{full}) // the pull catches up
					caughtUp = true
				}
				if err := det.Once(ctx); err != nil {
					t.Fatal(err)
				}
				list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
				if err != nil || len(list) != 1 || list[0].Status != store.IncidentOpen {
					t.Fatalf("at onset+%v (stall at +%v for %v), latency still ×4: incidents %+v (%v)", now.Sub(onset), stallAfter, pause, list, err)
				}
				if caughtUp && now.After(stall.Add(pause+3*time.Minute)) && list[0].End != nil {
					t.Fatalf("at onset+%v, caught up and still ×4: the incident's window ends at %v", now.Sub(onset), list[0].End)
				}
			}
		})
	}
}

// TestDetectorLaterModelGetsItsOwnIncident: chat holds a ×4 regression;
// three hours in, vision spikes. That is news, and gets its own incident
// (its own page), rather than joining chat's held one unseen.
func TestDetectorLaterModelGetsItsOwnIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	recovered := onset.Add(4 * time.Hour)
	end := recovered.Add(time.Hour)
	vOnset := onset.Add(3 * time.Hour)
	storetest.WriteCurves(t, st, []correlate.Curve{
		modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, recovered, end),
		modelP99("vision", rand.New(rand.NewPCG(5, 5)), vOnset, vOnset.Add(20*time.Minute), end),
	})
	var now time.Time
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	for now = onset.Add(2 * time.Minute); now.Before(vOnset.Add(10 * time.Minute)); now = now.Add(2 * time.Minute) {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("incidents %+v (%v): want chat's and vision's", list, err)
	}
	for _, in := range list {
		if in.Scope.Model != "chat" && in.Scope.Model != "vision" {
			t.Errorf("incident %d scope %q, title %q: want one model each", in.ID, in.Scope.Model, in.Title)
		}
	}
}

// An analysis stopped by a shutdown is no failure: its version stays
// pending (taken over once stale), instead of counting towards the three
// failed versions after which a resolved incident is left failed.
func TestAnalyzerStoppedMidwayRecordsNoFailure(t *testing.T) {
	t.Parallel()
	st, pool := storetest.NewWithPool(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(130 * time.Minute)
	nodeFault(t, st, onset, end)
	in, err := st.CreateIncident(context.Background(), store.NewIncident{Title: "node", Start: onset.Add(-60 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	// Stop the analyzer as soon as its version is started: while it loads
	// its input.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for {
			var n int
			if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM analyses WHERE incident_id = $1`, in.ID).Scan(&n); err != nil || n > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, _ = diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{}).Analyze(ctx, in.ID, false)
	var failed int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM analyses WHERE incident_id = $1 AND status = 'failed'`, in.ID).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if failed != 0 {
		t.Errorf("a stopped analysis recorded %d failed version(s)", failed)
	}
}

// TestDetectorResolvesNoSoonerThanItMerges: a spike of the incident's
// model that began within the merge window joins the incident — also when
// it is recorded, not yet worth an incident, as the window runs out. The
// detector resolved the incident first, and the spike then opened a
// second one for what Merge defines as one episode (and the ticket
// flapped: resolved, then opened).
func TestDetectorResolvesNoSoonerThanItMerges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	spikeEnd := t0.Add(115 * time.Minute)
	second := spikeEnd.Add(29 * time.Minute)
	end := t0.Add(220 * time.Minute)
	rng := rand.New(rand.NewPCG(4, 4))
	p95 := correlate.Curve{Role: correlate.RoleLatencyP95, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
		v := 150 * math.Exp(0.05*rng.NormFloat64())
		if !ts.Before(second) {
			v *= 2
		}
		p95.Points = append(p95.Points, correlate.Point{T: ts.UnixMilli(), V: v})
	}
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rng, onset, spikeEnd, end), p95})
	now := spikeEnd.Add(-5 * time.Minute)
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	for ; now.Before(end); now = now.Add(time.Minute) {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := st.RecordedSpikes(ctx, t0, end, 10)
	for _, r := range rec {
		t.Logf("spike %s onset %s incident %v", r.Role, r.Onset.Sub(t0), r.IncidentID)
	}
	if len(list) != 1 {
		for _, in := range list {
			t.Logf("incident %d %s %s→%v %s", in.ID, in.Title, in.Start.Sub(t0), in.End, in.Status)
		}
		t.Fatalf("%d incidents, want one: the second spike began %s after the first ended, within the merge window", len(list), second.Sub(spikeEnd))
	}
}

// TestDetectorResolvesAnIncidentWithoutSpikes: a detector incident whose
// spike never got attached (the pass stopped between the two, and the
// spike was settled as a blip since) resolves once its merge window has
// passed; it stayed open for ever, analysed again every round.
func TestDetectorResolvesAnIncidentWithoutSpikes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSpikelessIncident(t)
	if err := f.det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.st.Incident(ctx, f.in.ID); got.Status != store.IncidentOpen {
		t.Fatalf("resolved a minute after its onset: %+v", got)
	}
	*f.now = f.onset.Add(45 * time.Minute)
	if err := f.det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.st.Incident(ctx, f.in.ID); got.Status != store.IncidentResolved || got.End == nil {
		t.Fatalf("incident without spikes %+v, want resolved with an end once Merge has passed", got)
	}
}

// spikelessIncident is a detector incident of chat whose spike was never
// attached (its onset 100 min into t0), a detector with a 30 min Merge,
// and their clock (a minute after the onset).
type spikelessIncident struct {
	st    *store.Store
	det   *diagnose.Detector
	in    store.Incident
	onset time.Time
	now   *time.Time
}

func newSpikelessIncident(t *testing.T) spikelessIncident {
	t.Helper()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	now := onset.Add(time.Minute)
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	in, created, err := incidents.OpenForSpike(context.Background(), "chat", onset, 30*time.Minute, store.NewIncident{
		Title: "P99 spike on chat", Source: store.SourceDetector, Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "chat"}})
	if err != nil || !created {
		t.Fatalf("open: %v %v", created, err)
	}
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	return spikelessIncident{st: st, det: det, in: in, onset: onset, now: &now}
}

// TestDetectorClosesItsIncidentsBehindManyOthers: the detector finds its
// own open incidents however many newer ones others opened (it read one
// page of 500 open incidents of any source).
func TestDetectorClosesItsIncidentsBehindManyOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSpikelessIncident(t)
	for i := range 501 {
		if _, err := f.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("manual %d", i), Start: f.onset.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	*f.now = f.onset.Add(45 * time.Minute)
	if err := f.det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.st.Incident(ctx, f.in.ID); got.Status != store.IncidentResolved {
		t.Fatalf("detector incident behind 501 newer manual ones: %s, want resolved", got.Status)
	}
}

// A regression that begins while Waterline reads no data (the pull or
// Postgres down) for longer than the detector's lookback: when the data
// catches up, the first pass saw only a flat ×4 over its two hours and the
// followed pass only re-reads spikes already stored, so no incident ever
// opened while P99 stood ×4. A spike still ongoing is judged whatever its
// onset (up to a day back).
func TestDetectorCatchesUpOnARegressionBegunDuringAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	recovered := onset.Add(6 * time.Hour)
	storetest.WriteCurves(t, st, []correlate.Curve{modelP99("chat", rand.New(rand.NewPCG(4, 4)), onset, recovered, recovered.Add(time.Hour))})
	now := onset.Add(3 * time.Hour) // the detector's first pass since the outage
	clock := func() time.Time { return now }
	incidents := incident.New(st, incident.Options{Now: clock})
	det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: incidents})
	for range 3 {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 1 || list[0].Status != store.IncidentOpen {
		t.Fatalf("three hours into a ×4 regression: incidents %+v (%v), want one open", list, err)
	}
	if list[0].Start.After(onset) {
		t.Errorf("the incident starts at %v, after the onset %v", list[0].Start, onset)
	}
}

// An LLM fleet whose clients began asking for longer answers, stored as a
// pull of the vLLM preset would store it (model-level P99, request rate,
// running and waiting requests, prompt and generated tokens per request,
// time per generated token): the analysis read from the store says the
// requests got longer at the same decode speed, and counts them as
// capacity's demand.
func TestAnalyzerLLMRequestsGotLonger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := t0.Add(100 * time.Minute)
	end := t0.Add(130 * time.Minute)
	rng := rand.New(rand.NewPCG(2, 2))
	m := correlate.Scope{Model: "chat"}
	curve := func(role correlate.Role, before, during float64) correlate.Curve {
		c := correlate.Curve{Role: role, Level: correlate.LevelModel, Scope: m}
		for ts := t0; ts.Before(end); ts = ts.Add(15 * time.Second) {
			v := before
			if !ts.Before(onset) {
				v = during
			}
			c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v * math.Exp(0.03*rng.NormFloat64())})
		}
		return c
	}
	storetest.WriteCurves(t, st, []correlate.Curve{
		curve(correlate.RoleLatencyP99, 4000, 9600), curve(correlate.RoleQPS, 20, 20),
		curve(correlate.RoleBatchSize, 24, 52), curve(correlate.RoleQueue, 0.5, 6),
		curve(correlate.RolePromptTokens, 900, 905), curve(correlate.RoleOutputTokens, 210, 480),
		curve(correlate.RoleTPOT, 42, 42), curve(correlate.RoleTTFT, 300, 900),
	})
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "chat slow", Start: onset.Add(-60 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{}).Analyze(ctx, in.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var a correlate.Analysis
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.RequestLengths) != 1 || a.RequestLengths[0].OutputBefore < 190 || a.RequestLengths[0].OutputDuring < 450 || a.RequestLengths[0].TPOTDuringMs < 38 ||
		a.RequestLengths[0].TTFTBeforeMs < 270 || a.RequestLengths[0].TTFTDuringMs < 800 {
		t.Fatalf("request lengths %+v", a.RequestLengths)
	}
	if top := a.Causes[0]; top.Category != correlate.CatCapacity {
		t.Errorf("top cause %s (%.2f): %s", top.Category, top.Score, top.Summary)
	}
	var timeline string
	for _, s := range a.Checklist {
		if s.Step == "timeline" {
			timeline = s.Answer
		}
	}
	if !strings.Contains(timeline, "as before") || !strings.Contains(timeline, "The servers are not slower: the requests are longer") ||
		!strings.Contains(timeline, "requests wait longer before decoding starts, in the queue or the prefill") ||
		strings.Contains(timeline, "the time goes before decoding starts") {
		t.Errorf("timeline step %q", timeline)
	}
}
