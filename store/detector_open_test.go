package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Two detectors pass at once while the detect lease changes hands (the
// old holder learns it lost the lease only at its next check): each
// found no open incident for the spike and opened one, and the spike
// joined only one of them — the other stayed open for good. Finding and
// opening are one step: however many race, one incident.
func TestDetectorsRacingOpenOneIncident(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	onset := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[int64]bool{}
		created int
	)
	for range 8 {
		wg.Go(func() {
			in, made, err := st.FindOrOpenDetectorIncident(ctx, "chat", onset, 15*time.Minute, store.NewIncident{
				Title: "P99 spike on chat", Source: store.SourceDetector, Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "chat"}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[in.ID] = true
			if made {
				created++
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 || created != 1 {
		t.Fatalf("%d incidents, %d created; want one", len(ids), created)
	}
}

// Replicas configured with different public URLs name one event with
// different keys; enqueueing it at once from all of them queues it once.
func TestConcurrentEnqueuesWithDifferentKeysQueueOnce(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	in, w := incidentAndWebhook(t, st)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: in.ID, Event: store.EventIncidentOpened,
				IdempotencyKey: fmt.Sprintf("host-%d/incidents/%d/incident.opened", i, in.ID), Body: []byte(`{}`), DueAt: time.Now()}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ds, _, err := st.Deliveries(ctx, w.ID, "", 50)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%d deliveries (%v), want 1", len(ds), err)
	}
}

// An incident's analysis.ready goes out once per webhook: when a slow
// analyzer's older version finishes after a newer one was announced, it
// was announced again, the older cause last.
func TestAnalysisReadyQueuedOncePerIncident(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	in, w := incidentAndWebhook(t, st)
	for _, v := range []int{2, 1} {
		if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: in.ID, Event: store.EventAnalysisReady, AnalysisVersion: v,
			IdempotencyKey: fmt.Sprintf("host/incidents/%d/analysis.ready/%d", in.ID, v), Body: []byte(`{}`), DueAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ds, _, err := st.Deliveries(ctx, w.ID, "", 50)
	if err != nil || len(ds) != 1 || ds[0].AnalysisVersion != 2 {
		t.Fatalf("%d deliveries (%v), want only the first announced (version 2)", len(ds), err)
	}
}

// A webhook is not sent cause.changed to the cause it was last told of:
// two replicas' notifiers, each reading "release" as last sent, queued
// the change to capacity twice, for versions 2 and 3. Queued under the
// webhook's lock, the second is refused; a change back is news again.
func TestCauseChangedNotQueuedToTheCauseLastTold(t *testing.T) {
	t.Parallel()
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	in, w := incidentAndWebhook(t, st)
	for _, top := range []string{"release", "capacity", "capacity", "release"} {
		readyAnalysis(t, st, in.ID, fmt.Sprintf(`{"causes":[{"category":%q,"score":0.8}]}`, top))
	}
	var queued []int
	for _, d := range []struct {
		v     int
		event string
	}{{1, store.EventAnalysisReady}, {2, store.EventCauseChanged}, {3, store.EventCauseChanged}, {4, store.EventCauseChanged}} {
		ok, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: in.ID, Event: d.event, AnalysisVersion: d.v,
			IdempotencyKey: fmt.Sprintf("host/incidents/%d/%s/%d", in.ID, d.event, d.v), DueAt: time.Now(),
			Render: func(store.Incident) ([]byte, error) { return []byte(`{}`), nil }})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			queued = append(queued, d.v)
		}
	}
	if fmt.Sprint(queued) != "[1 2 4]" {
		t.Fatalf("queued versions %v, want [1 2 4] (release, capacity, release again)", queued)
	}
}

// incidentAndWebhook opens an incident and registers a webhook for every
// event.
func incidentAndWebhook(t *testing.T, st *store.Store) (store.Incident, store.Webhook) {
	t.Helper()
	ctx := context.Background()
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "x", Start: time.Now().UTC().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "http://receiver.test/", Secret: "0123456789abcdef0123", Format: store.WebhookFormatWaterline, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	return in, w
}

// The detector finds the incident a spike joins in one transaction and
// attaches the spike in another. Resolved in between (a person, or
// another replica's detector closing it), the new spike went onto the
// resolved incident and nobody was paged for it. The attach is refused
// instead, and the spike, looked for again, opens a new incident.
func TestSpikeDoesNotJoinAnIncidentResolvedMeanwhile(t *testing.T) {
	t.Parallel()
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	onset := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	spike, _, _, err := st.RecordSpike(ctx, "latency_p99|model|chat", correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "chat"}, Start: onset, End: onset.Add(5 * time.Minute), Onset: onset, Ongoing: true,
		PeakTime: onset.Add(time.Minute), PeakValue: 900, Baseline: 200, Direction: correlate.Up, DetectedAt: onset, Severity: "page"})
	if err != nil {
		t.Fatal(err)
	}
	find := func() (store.Incident, bool) {
		t.Helper()
		in, made, err := st.FindOrOpenDetectorIncident(ctx, "chat", onset, 30*time.Minute, store.NewIncident{
			Title: "P99 spike on chat", Source: store.SourceDetector, Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		return in, made
	}
	first, _ := find()
	found, made := find() // the detector's next pass, which the spike joins
	if made || found.ID != first.ID {
		t.Fatalf("found incident %d (created %v), want the open %d", found.ID, made, first.ID)
	}
	if _, err := st.ResolveIncident(ctx, first.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.AttachSpike(ctx, spike, found.ID); !errors.Is(err, store.ErrIncidentResolved) {
		t.Fatalf("attach to the incident resolved meanwhile: %v, want ErrIncidentResolved", err)
	}
	again, made := find()
	if !made || again.ID == first.ID {
		t.Fatalf("looked for again: incident %d (created %v), want a new one", again.ID, made)
	}
	if err := st.AttachSpike(ctx, spike, again.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := st.RecordedSpikes(ctx, onset, onset.Add(time.Second), 10)
	if err != nil || len(rec) != 1 || rec[0].IncidentID == nil || *rec[0].IncidentID != again.ID {
		t.Fatalf("spikes %+v (%v), want the spike on incident %d", rec, err, again.ID)
	}
}

// The old detector's close pass reads an incident's spikes as over and
// then resolves it; another replica's detector (the lease changing hands)
// may attach a new, ongoing spike in between — before the resolution,
// which AttachSpike cannot refuse, or while it is in flight. The resolved
// incident held an ongoing spike, and nobody was paged. The close pass's
// resolution checks the spikes again under the incident's row lock: an
// attach committed first, or waited for, keeps the incident open; a quiet
// incident resolves.
func TestQuietIncidentNotResolvedOnceASpikeJoinsIt(t *testing.T) {
	t.Parallel()
	st, pool := storetest.NewWithPool(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	spike := func(model string, onset time.Time, ongoing bool) int64 {
		t.Helper()
		id, _, _, err := st.RecordSpike(ctx, "latency_p99|model|"+model, correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
			Scope: correlate.Scope{Model: model}, Start: onset, End: onset.Add(5 * time.Minute), Onset: onset, Ongoing: ongoing,
			PeakTime: onset.Add(time.Minute), PeakValue: 900, Baseline: 200, Direction: correlate.Up, DetectedAt: onset, Severity: "page"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// quiet is an open incident of model's whose one spike ended an hour
	// ago, and the close pass's reading of it: no spike ongoing, the last
	// ending then.
	quiet := func(model string) (store.Incident, time.Time) {
		t.Helper()
		onset := now.Add(-time.Hour)
		in, err := st.CreateIncident(ctx, store.NewIncident{Title: "P99 spike on " + model, Source: store.SourceDetector,
			Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: model}})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.AttachSpike(ctx, spike(model, onset, false), in.ID); err != nil {
			t.Fatal(err)
		}
		ongoing, lastEnd, ok, err := st.IncidentSpikeSpan(ctx, in.ID)
		if err != nil || ongoing || !ok {
			t.Fatalf("spike span: ongoing %v, any %v (%v); want one spike, over", ongoing, ok, err)
		}
		return in, lastEnd
	}
	resolve := func(in store.Incident, quietSince time.Time, want bool) {
		t.Helper()
		got, resolved, err := st.ResolveQuietIncident(ctx, in.ID, now, quietSince)
		if err != nil {
			t.Fatal(err)
		}
		if resolved != want || (got.Status == store.IncidentResolved) != want {
			t.Fatalf("incident %d resolved %v (status %s), want %v", in.ID, resolved, got.Status, want)
		}
	}

	in, lastEnd := quiet("chat")
	resolve(in, lastEnd, true)

	// Attached between the reading and the resolution.
	in, lastEnd = quiet("embed")
	if err := st.AttachSpike(ctx, spike("embed", now.Add(-2*time.Minute), true), in.ID); err != nil {
		t.Fatal(err)
	}
	resolve(in, lastEnd, false)

	// Attached while the resolution runs: the resolution waits for the
	// attach's transaction, then sees its spike.
	in, lastEnd = quiet("rerank")
	late := spike("rerank", now.Add(-time.Minute), true)
	err := resolveDuringTx(ctx, st, pool, in.ID, now, lastEnd, "attach", func(tx *store.Store) error {
		return tx.AttachSpike(ctx, late, in.ID)
	})
	if err != nil {
		t.Fatalf("incident %d with a spike attached during its resolution: %v, want it left open", in.ID, err)
	}
	if got, err := st.Incident(ctx, in.ID); err != nil || got.Status != store.IncidentOpen {
		t.Fatalf("incident %+v (%v), want open", got, err)
	}
}

// A detector re-recording a spike an incident holds (its points
// extended: over, then up again) while another replica's close pass
// resolves that incident (the lease changing hands). The re-record did
// not lock the incident: landing just after the close pass had read the
// spike as over, it left a resolved incident holding an ongoing spike,
// and nobody was paged until the detector paged again ten minutes later.
// A re-record in flight is waited for, and keeps the incident open; one
// that comes after the resolution finds the spike back up after its
// incident was resolved as quiet, and hands it back unattached, so that
// the detector opens an incident for it now.
func TestQuietIncidentNotResolvedAsItsSpikeIsRerecorded(t *testing.T) {
	t.Parallel()
	st, pool := storetest.NewWithPool(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	onset := now.Add(-time.Hour)
	record := func(st *store.Store, model string, ongoing bool, end time.Time) (int64, *int64) {
		t.Helper()
		id, _, inc, err := st.RecordSpike(ctx, "latency_p99|model|"+model, correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
			Scope: correlate.Scope{Model: model}, Start: onset, End: end, Onset: onset, Ongoing: ongoing,
			PeakTime: onset.Add(time.Minute), PeakValue: 900, Baseline: 200, Direction: correlate.Up, DetectedAt: onset, Severity: "page"})
		if err != nil {
			t.Fatal(err)
		}
		return id, inc
	}
	// quiet is an open incident of model's whose one spike ended 55
	// minutes ago, and the close pass's reading of it.
	quiet := func(model string) (store.Incident, time.Time) {
		t.Helper()
		in, err := st.CreateIncident(ctx, store.NewIncident{Title: "P99 spike on " + model, Source: store.SourceDetector,
			Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: model}})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := record(st, model, false, onset.Add(5*time.Minute))
		if err := st.AttachSpike(ctx, id, in.ID); err != nil {
			t.Fatal(err)
		}
		ongoing, lastEnd, ok, err := st.IncidentSpikeSpan(ctx, in.ID)
		if err != nil || ongoing || !ok {
			t.Fatalf("spike span: ongoing %v, any %v (%v); want one spike, over", ongoing, ok, err)
		}
		return in, lastEnd
	}

	// Re-recorded up again while the resolution runs: the resolution
	// waits for the re-record's transaction, then sees the spike ongoing.
	in, lastEnd := quiet("chat")
	err := resolveDuringTx(ctx, st, pool, in.ID, now, lastEnd, "re-record", func(tx *store.Store) error {
		if _, inc := record(tx, "chat", true, now); inc == nil || *inc != in.ID {
			return fmt.Errorf("re-recorded spike on incident %v, want %d", inc, in.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("incident %d with its spike re-recorded ongoing during its resolution: %v, want it left open", in.ID, err)
	}
	if got, err := st.Incident(ctx, in.ID); err != nil || got.Status != store.IncidentOpen {
		t.Fatalf("incident %+v (%v), want open", got, err)
	}

	// Re-recorded up again just after the resolution: the spike is news
	// again, no longer the resolved incident's.
	in, lastEnd = quiet("embed")
	if _, ok, err := st.ResolveQuietIncident(ctx, in.ID, now, lastEnd); err != nil || !ok {
		t.Fatalf("quiet incident %d not resolved (%v)", in.ID, err)
	}
	if id, inc := record(st, "embed", true, now); inc != nil {
		t.Fatalf("spike %d back up after its incident was resolved as quiet is handed back on incident %d, want unattached", id, *inc)
	}
	if ongoing, _, ok, err := st.IncidentSpikeSpan(ctx, in.ID); err != nil || ongoing || ok {
		t.Fatalf("resolved incident %d holds spikes (ongoing %v, any %v: %v), want none", in.ID, ongoing, ok, err)
	}

	// A spike still up when a person resolved its incident stays with it,
	// also once it has been over and is back
	// (the detector pages again ten minutes later, once).
	in, err = st.CreateIncident(ctx, store.NewIncident{Title: "P99 spike on rerank", Source: store.SourceDetector,
		Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "rerank"}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := record(st, "rerank", true, now.Add(-3*time.Minute))
	if err := st.AttachSpike(ctx, id, in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ResolveIncident(ctx, in.ID, now.Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	record(st, "rerank", true, now.Add(-time.Minute))
	record(st, "rerank", false, now.Add(-time.Minute))
	if _, inc := record(st, "rerank", true, now); inc == nil || *inc != in.ID {
		t.Fatalf("spike up when its incident was resolved by hand re-recorded on incident %v, want %d", inc, in.ID)
	}
}

// resolveDuringTx runs hold in a transaction and, inside it, starts
// ResolveQuietIncident on another connection; the transaction commits once
// the resolution waits for its lock (seen in pg_locks, not slept for). It
// returns an error if the resolution did not wait, or resolved the
// incident after all.
func resolveDuringTx(ctx context.Context, st *store.Store, pool *pgxpool.Pool, id int64, now, lastEnd time.Time, what string, hold func(tx *store.Store) error) error {
	resolved := make(chan error, 1)
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := hold(tx); err != nil {
			return err
		}
		go func() {
			_, ok, err := st.ResolveQuietIncident(ctx, id, now, lastEnd)
			if err == nil && ok {
				err = errors.New("resolved")
			}
			resolved <- err
		}()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var waiting bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
				WHERE NOT l.granted AND a.datname = current_database())`).Scan(&waiting); err != nil {
				return err
			}
			if waiting {
				return nil
			}
			select {
			case err := <-resolved:
				return fmt.Errorf("the resolution did not wait for the %s in flight: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the resolution never waited for the %s's lock", what)
			}
		}
	})
	if err != nil {
		return err
	}
	return <-resolved
}
