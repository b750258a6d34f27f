package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// waitFrozen waits until incident id has a snapshot.
func (e *apiEnv) waitFrozen(id int64) {
	e.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, ok, err := e.st.SnapshotTime(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("incident %d was not frozen within a minute", id)
		}
	}
}

// writeChatSpike stores chat's P99, noisy around 200 ms over [t0, end),
// ×4 over [onset, spikeEnd), and its steady traffic (20 req/s).
func writeChatSpike(t *testing.T, e *apiEnv, t0, onset, spikeEnd, end time.Time) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	p99 := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	qps := correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for at := t0; at.Before(end); at = at.Add(15 * time.Second) {
		v := 200 * math.Exp(0.05*rng.NormFloat64())
		if !at.Before(onset) && at.Before(spikeEnd) {
			v *= 4
		}
		p99.Points = append(p99.Points, correlate.Point{T: at.UnixMilli(), V: v})
		qps.Points = append(qps.Points, correlate.Point{T: at.UnixMilli(), V: 20})
	}
	storetest.WriteCurves(t, e.st, []correlate.Curve{p99, qps})
}

// TestDetectorIncidentOutlivesRetention: an incident the detector opens
// and later resolves by itself (nobody presses a button) is frozen on the
// incident worker, so once retention has dropped the day's raw data its
// permalink still shows the curves, the slow requests and the analysis.
func TestDetectorIncidentOutlivesRetention(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	// chat's P99 (noisy around 200 ms) rises ×4 for 15 minutes; requests
	// get slow in the queue at the same time.
	t0 := testNow.Add(-6 * time.Hour).Truncate(time.Minute)
	onset, spikeEnd, end := t0.Add(100*time.Minute), t0.Add(115*time.Minute), t0.Add(170*time.Minute)
	writeChatSpike(t, e, t0, onset, spikeEnd, end)
	var b strings.Builder
	for i, at := 0, t0.Add(60*time.Minute); at.Before(end); i, at = i+1, at.Add(2*time.Second) {
		queue := 5.0
		if !at.Before(onset) && at.Before(spikeEnd) {
			queue = 600
		}
		fmt.Fprintf(&b, `{"request_id":"det-%06d","time":%q,"model":"chat","version":"v1","replica":"chat-a","node":"n1","total_ms":%g,"stages_ms":{"queue":%g,"exec":150}}`+"\n",
			i, at.Format(time.RFC3339), queue+150, queue)
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String())))
	accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(fmt.Sprintf(
		`{"id":"cfg-before-onset","kind":"config_change","time":%q,"model":"chat","summary":"batch size 8 -> 32"}`+"\n",
		onset.Add(-3*time.Minute).Format(time.RFC3339)))))

	// The detector sees the spike while it lasts and opens an incident…
	now := spikeEnd.Add(-5 * time.Minute)
	clock := func() time.Time { return now }
	det := diagnose.NewDetector(e.st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute, Now: clock, Incidents: e.incidents})
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	list, _, err := e.st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil || len(list) != 1 || list[0].Source != store.SourceDetector {
		t.Fatalf("incidents %+v (%v), want one opened by the detector", list, err)
	}
	id := list[0].ID
	if _, err := diagnose.NewAnalyzer(e.st, diagnose.AnalyzerOptions{Now: clock}).Analyze(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	// …and resolves it once the spike is long over.
	now = end
	if err := det.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := e.st.Incident(ctx, id); err != nil || in.Status != store.IncidentResolved {
		t.Fatalf("incident %+v (%v), want resolved by the detector", in, err)
	}
	e.waitFrozen(id)

	br := e.browser()
	br.login(e.read)
	path := fmt.Sprintf("/incidents/%d", id)
	live := br.get(path + "?live=1")
	live.mustHave(t, "live page", "sample-row", "cause")
	liveRows := live.testid("sample-row").Text()

	// Retention counts back from the newest data: data three days later
	// puts the incident's days past a one-hour retention.
	later := t0.Add(72 * time.Hour)
	storetest.WriteCurves(t, e.st, []correlate.Curve{{Role: correlate.RoleQPS, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "chat"}, Points: []correlate.Point{{T: later.UnixMilli(), V: 20}}}})
	x := correlate.Sample{RequestID: "later", Time: later, Model: "chat", TotalMs: 100, SampleRate: 1}
	for i := range x.StagesMs {
		x.StagesMs[i] = math.NaN()
	}
	if _, _, err := e.st.InsertSamples(ctx, []correlate.Sample{x}); err != nil {
		t.Fatal(err)
	}
	dropped, err := e.st.Maintain(ctx, later, 0, store.Retention{Samples: time.Hour, Points: time.Hour})
	if err != nil || dropped == 0 {
		t.Fatalf("retention dropped %d partitions (%v)", dropped, err)
	}
	if n := e.count(`SELECT count(*) FROM samples WHERE time < $1`, end) + e.count(`SELECT count(*) FROM points WHERE time < $1`, end); n != 0 {
		t.Fatalf("%d of the incident's samples and points survived retention", n)
	}
	// Events follow the points' retention (they were kept for ever); the
	// frozen copy keeps its own.
	if n := e.count(`SELECT count(*) FROM events WHERE time < $1`, end); n != 0 {
		t.Fatalf("%d of the incident's events survived retention", n)
	}

	after := br.get(path)
	if after.status != http.StatusOK {
		t.Fatalf("permalink after retention: %d", after.status)
	}
	after.mustHave(t, "permalink after retention", "snapshot-banner", "cause", "sample-row")
	if got := after.testid("sample-row").Text(); got != liveRows {
		t.Errorf("the frozen sample table differs from the live one before retention")
	}
	if after.doc.Find(`[data-testid=lane-latency] svg path`).Length() == 0 {
		t.Error("the frozen timeline has no latency curve")
	}
	if !strings.Contains(after.body, "batch size 8 -&gt; 32") && !strings.Contains(after.body, "batch size 8 -> 32") {
		t.Error("the frozen page lost the change event retention deleted")
	}
}

// TestAlertmanagerAnswersBeforeTheFreeze: a resolved notification is
// answered while the incident's freeze is still waiting (here on a lock
// the test holds on the snapshots table), and the freeze completes on the
// incident worker once the lock goes.
func TestAlertmanagerAnswersBeforeTheFreeze(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	start := testNow.Add(-time.Hour)
	opened := e.alert(amNotification("firing", 1, start, nil))
	if !opened.Opened {
		t.Fatalf("firing notification: %+v", opened)
	}

	lock, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `LOCK TABLE snapshots IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	end := start.Add(30 * time.Minute)
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() { // not e.post: it may not fail the test from here
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/alerts/alertmanager", bytes.NewReader(amNotification("resolved", 1, start, &end)))
		req.Header.Set("Authorization", "Bearer "+e.write)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		answered <- answer{res.StatusCode, body, err}
	}()
	select {
	case r := <-answered:
		if r.err != nil || r.status != http.StatusOK || !strings.Contains(string(r.body), `"resolved":true`) {
			t.Fatalf("resolved notification: %d %s %v", r.status, r.body, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Alertmanager webhook waited for the freeze")
	}
	// The freeze has started and is waiting for the lock: not done yet.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if e.count(`SELECT count(*) FROM pg_locks WHERE relation = 'snapshots'::regclass AND NOT granted`) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no freeze is waiting on the snapshots table")
		}
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitFrozen(opened.IncidentID)
}
