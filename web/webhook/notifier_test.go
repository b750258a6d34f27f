package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web/webhook"
)

// TestSweepQueuesChangesNotedOnlyInMemory: an incident opened and resolved,
// and analyses finished, while nothing told the notifier (a restart lost
// its in-memory queue) are queued by the sweep Run starts with — once,
// however often it sweeps — and cause.changed follows the previous ready
// version's top cause.
func TestSweepQueuesChangesNotedOnlyInMemory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook") // the webhook exists before the events
	time.Sleep(10 * time.Millisecond)               // the events come strictly after it, on Postgres' clock
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"capacity", "capacity", "release", "release"} { // v3 changed it; v4 did not
		v, err := f.st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.FinishAnalysis(ctx, in.ID, v, scored(top), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.ResolveIncident(ctx, in.ID, testclock.Now()); err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test", SweepEvery: 20 * time.Millisecond})
	rctx, stop := context.WithCancel(ctx)
	go n.Run(rctx)
	want := map[string]int{store.EventIncidentOpened: 1, store.EventAnalysisReady: 1, store.EventCauseChanged: 3, store.EventIncidentResolved: 1}
	var got map[string]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = map[string]int{}
		for _, d := range f.log(t) {
			if d.IncidentID != in.ID {
				continue
			}
			if d.Event == store.EventCauseChanged {
				got[d.Event] = d.AnalysisVersion
			} else {
				got[d.Event]++
			}
		}
		if len(got) == len(want) {
			break
		}
	}
	time.Sleep(100 * time.Millisecond) // several more sweeps: none may queue anything twice
	stop()
	got = map[string]int{}
	for _, d := range f.log(t) {
		if d.IncidentID != in.ID {
			continue
		}
		if d.Event == store.EventCauseChanged {
			got[d.Event] += d.AnalysisVersion
		} else {
			got[d.Event]++
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("queued %v, want %v (opened, analysis.ready of v1, cause.changed of v3 only — not hidden by v4 — resolved, each once)", got, want)
	}
}

// An open incident is analysed again as its data grows: a day holds
// thousands of ready versions. The sweep must still reach the newest one,
// whose top cause changed, and not only the oldest hundreds.
func TestSweepReachesTheNewestOfManyVersions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond)
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	const versions = 520 // more than one sweep takes of anything
	for i := range versions {
		top := "capacity"
		if i == versions-1 {
			top = "release"
		}
		v, err := f.st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.FinishAnalysis(ctx, in.ID, v, scored(top), ""); err != nil {
			t.Fatal(err)
		}
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	if err := n.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, d := range f.log(t) {
		got[d.Event] = append(got[d.Event], d.AnalysisVersion)
	}
	if fmt.Sprint(got[store.EventCauseChanged]) != fmt.Sprint([]int{versions}) || fmt.Sprint(got[store.EventAnalysisReady]) != "[1]" {
		t.Fatalf("queued %v; want analysis.ready of v1 and cause.changed of v%d only", got, versions)
	}
}

// The analyzer can finish an incident's first analysis before the
// notifier's queue reaches the incident's creation (a busy machine, an
// empty window): a receiver that opens a ticket on incident.opened and
// comments on analysis.ready must still get opened first. Deliveries go
// out in queue order per incident, so analysis.ready queues its
// incident's opened ahead of itself.
func TestAnalysisReadyNeverQueuesAheadOfOpened(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond) // the incident below comes after the webhook, on Postgres' clock
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.st.StartAnalysis(ctx, in.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.FinishAnalysis(ctx, in.ID, v, []byte(`{"causes":[{"category":"release"}]}`), ""); err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	if err := n.NotifyAnalysis(ctx, in.ID, v, "", "release"); err != nil {
		t.Fatal(err)
	}
	if err := n.NotifyIncident(ctx, in.ID); err != nil { // late, and queues nothing twice
		t.Fatal(err)
	}
	var order []string
	log := f.log(t) // newest first
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].IncidentID == in.ID {
			order = append(order, log[i].Event)
		}
	}
	if want := []string{store.EventIncidentOpened, store.EventAnalysisReady}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("queued %v, want %v", order, want)
	}
}

// The idempotency key names this Waterline by its public URL. Setting or
// changing WATERLINE_PUBLIC_URL (or two replicas configured apart) made
// the sweep queue every recent event again under new keys, and receivers
// got each twice. An event is queued once per webhook, whatever its key.
func TestEventsQueuedOnceAcrossPublicURLChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond)
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://localhost:8080", "https://waterline.example.com"} {
		n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: u})
		if err := n.NotifyIncident(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
	}
	var opened int
	for _, d := range f.log(t) {
		if d.IncidentID == in.ID && d.Event == store.EventIncidentOpened {
			opened++
		}
	}
	if opened != 1 {
		t.Fatalf("incident.opened queued %d times across a public URL change, want once", opened)
	}
}

// Two causes scoring alike swap places from one analysis to the next as
// data comes in (every 30 s on an open incident): each swap was a
// cause.changed, a comment on the ticket. A new top cause is news when
// it leads the one last sent by a clear margin; then it is sent, once,
// with the one it replaces.
func TestCauseChangedNeedsAClearLead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond)
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	prev := ""
	// release and capacity flap within 0.02 of each other, then capacity
	// pulls clear ahead.
	for _, s := range [][2]float64{{0.62, 0.60}, {0.60, 0.61}, {0.62, 0.60}, {0.59, 0.61}, {0.45, 0.80}, {0.44, 0.81}} {
		release, capacity := s[0], s[1]
		top := "release"
		if capacity > release {
			top = "capacity"
		}
		body := fmt.Sprintf(`{"causes":[{"category":%q,"score":%v},{"category":%q,"score":%v}]}`, top, max(release, capacity),
			map[bool]string{true: "capacity", false: "release"}[top == "release"], min(release, capacity))
		v, err := f.st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.FinishAnalysis(ctx, in.ID, v, []byte(body), ""); err != nil {
			t.Fatal(err)
		}
		if err := n.NotifyAnalysis(ctx, in.ID, v, prev, top); err != nil {
			t.Fatal(err)
		}
		prev = top
	}
	var changed []int
	for _, d := range f.log(t) {
		if d.IncidentID == in.ID && d.Event == store.EventCauseChanged {
			changed = append(changed, d.AnalysisVersion)
		}
	}
	if fmt.Sprint(changed) != "[5]" {
		t.Fatalf("cause.changed for versions %v, want only v5 (capacity clear ahead)", changed)
	}
}

// scored is a stored analysis whose top cause is top, clearly ahead of
// the other of release and capacity.
func scored(top string) []byte {
	other := "capacity"
	if top == "capacity" {
		other = "release"
	}
	return []byte(fmt.Sprintf(`{"causes":[{"category":%q,"score":0.8},{"category":%q,"score":0.4}]}`, top, other))
}

// A webhook that takes only cause.changed was never sent analysis.ready,
// so nothing was "last sent": a change is judged against the first
// analysis, not the version just before (which may already hold the new
// cause, with too small a lead to have been news then).
func TestCauseChangedWithoutAnEarlierDelivery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	if err := f.st.DeleteWebhook(ctx, f.hook); err != nil {
		t.Fatal(err)
	}
	w, err := f.st.CreateWebhook(ctx, store.NewWebhook{URL: "http://receiver.test/only-changes", Secret: secret,
		Format: store.WebhookFormatWaterline, Events: []string{store.EventCauseChanged}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	prev := ""
	for _, r := range []struct {
		top  string
		body string
	}{
		{"release", `{"causes":[{"category":"release","score":0.8},{"category":"capacity","score":0.4}]}`},
		{"capacity", `{"causes":[{"category":"capacity","score":0.61},{"category":"release","score":0.60}]}`},
		{"capacity", `{"causes":[{"category":"capacity","score":0.8},{"category":"release","score":0.45}]}`},
	} {
		v, err := f.st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.FinishAnalysis(ctx, in.ID, v, []byte(r.body), ""); err != nil {
			t.Fatal(err)
		}
		if err := n.NotifyAnalysis(ctx, in.ID, v, prev, r.top); err != nil {
			t.Fatal(err)
		}
		prev = r.top
	}
	ds, _, err := f.st.Deliveries(ctx, w.ID, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].AnalysisVersion != 3 {
		t.Fatalf("deliveries %+v, want cause.changed of v3 (release → capacity)", ds)
	}
}

// A sweep walks the versions whose top cause changed, in the order they
// became ready, and the live notice of one may have been lost. A version whose cause the
// analysis has left since is not sent: receivers would end on it.
func TestSweepDoesNotEndOnALeftCause(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond)
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	for i, top := range []string{"release", "capacity", "release"} {
		v, err := f.st.StartAnalysis(ctx, in.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.FinishAnalysis(ctx, in.ID, v, scored(top), ""); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // v1's analysis.ready went out live; v2's and v3's notices were lost
			if err := n.NotifyAnalysis(ctx, in.ID, v, "", top); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range f.log(t) {
		if d.IncidentID == in.ID && d.Event == store.EventCauseChanged {
			t.Fatalf("cause.changed of v%d sent: receivers would end on capacity while the analysis says release", d.AnalysisVersion)
		}
	}
}

// An analysis that finishes as its incident resolves: NotifyAnalysis read
// the open incident, was held up (several webhooks, share links, a slow
// database) while the resolution was queued and sent, and then queued
// analysis.ready rendered as open. ServiceNow got severity 0/Closing, then
// severity 2/New for the same message_key and reopened the alert; a Jira
// link lost its strike-through. A body is rendered from the incident as it
// is when it is queued, under the lock that orders the webhook's
// deliveries of the incident, so it never says less than one queued
// before it. The pause is forced here by holding that lock for the webhook
// queued first.
func TestAnalysisQueuedAfterTheResolutionSaysResolved(t *testing.T) {
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	// Hook 1 (a Slack channel for analyses) is queued before hook 2 (ServiceNow).
	h1, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "http://chat.test/hook", Secret: secret, Format: store.WebhookFormatSlack,
		Events: []string{store.EventAnalysisReady}})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "http://acme.service-now.test/api/global/em/jsonv2", Secret: secret,
		Format: store.WebhookFormatServiceNow, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	n := webhook.NewNotifier(st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	if err := n.NotifyIncident(ctx, in.ID); err != nil { // opened, as it happens
		t.Fatal(err)
	}
	v, err := st.StartAnalysis(ctx, in.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAnalysis(ctx, in.ID, v, scored("release"), ""); err != nil {
		t.Fatal(err)
	}

	// Stall NotifyAnalysis after it has read the (open) incident.
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The lock EnqueueDelivery takes for (webhook 1, incident).
	if _, err := blocker.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.delivery'), hashtext($1::bigint::text || '/' || $2::bigint::text))`, h1.ID, in.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := n.NotifyAnalysis(ctx, in.ID, v, "", "release"); err != nil {
			t.Error(err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("NotifyAnalysis never waited")
		}
	}
	// Meanwhile the incident resolves and its notification goes through.
	if _, err := st.ResolveIncident(ctx, in.ID, testclock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := n.NotifyIncident(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	_ = blocker.Rollback(ctx)
	wg.Wait()

	log, _, err := st.Deliveries(ctx, h2.ID, "", 50) // newest first
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for i := len(log) - 1; i >= 0; i-- {
		var b struct {
			Records []struct {
				Severity        string `json:"severity"`
				ResolutionState string `json:"resolution_state"`
			} `json:"records"`
		}
		if err := json.Unmarshal(log[i].Body, &b); err != nil {
			t.Fatal(err)
		}
		seq = append(seq, fmt.Sprintf("%s(sev %s %s)", log[i].Event, b.Records[0].Severity, b.Records[0].ResolutionState))
	}
	closed := false
	for i := len(log) - 1; i >= 0; i-- {
		var b struct {
			Records []struct {
				Severity string `json:"severity"`
			} `json:"records"`
		}
		_ = json.Unmarshal(log[i].Body, &b)
		if b.Records[0].Severity == "0" {
			closed = true
		} else if closed {
			t.Fatalf("ServiceNow is sent, in order: %v — the alert the resolution cleared is raised again (severity 2, New) by a body rendered before the resolution", seq)
		}
	}
}

// After a restart (nothing noted in memory) the sweep queued every
// incident's opened and resolved first and its analyses after: an analysis
// ready before the incident resolved reached Slack as "analysed" after
// "resolved", and a relay that moves a ticket on analysis.ready moved a
// closed one. The sweep queues each incident's events in the order they
// happened — an analysis ready after the resolution still follows it.
func TestSweepQueuesEventsInTheOrderTheyHappened(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t, ok)
	f := newFixture(t, rc.srv.URL)
	time.Sleep(10 * time.Millisecond) // events strictly after the webhook, on Postgres' clock
	in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.st.StartAnalysis(ctx, in.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.FinishAnalysis(ctx, in.ID, v, scored("release"), ""); err != nil { // ready first …
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := f.st.ResolveIncident(ctx, in.ID, testclock.Now()); err != nil { // … resolved after
		t.Fatal(err)
	}
	// Another incident, resolved and then analysed (a last analysis of the
	// finished incident).
	late, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "p50 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ResolveIncident(ctx, late.ID, testclock.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	lv, err := f.st.StartAnalysis(ctx, late.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.FinishAnalysis(ctx, late.ID, lv, scored("release"), ""); err != nil {
		t.Fatal(err)
	}
	// The process restarted: nothing was noted in memory; the sweep is the
	// safety net. Its deliveries fall due on the dispatcher's clock.
	n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test", Now: testclock.Now})
	if err := n.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
	for {
		sent, err := d.DeliverOne(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sent {
			break
		}
	}
	order := map[string][]string{}
	for _, r := range rc.requests() {
		var b struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		order[b.Title] = append(order[b.Title], r.event)
	}
	want := []string{store.EventIncidentOpened, store.EventAnalysisReady, store.EventIncidentResolved}
	if fmt.Sprint(order["p99 up"]) != fmt.Sprint(want) {
		t.Fatalf("receiver got %v, want the order they happened in %v", order["p99 up"], want)
	}
	want = []string{store.EventIncidentOpened, store.EventIncidentResolved, store.EventAnalysisReady}
	if fmt.Sprint(order["p50 up"]) != fmt.Sprint(want) {
		t.Fatalf("receiver got %v for the incident analysed after it resolved, want %v", order["p50 up"], want)
	}
}

// Two replicas' analyzers finish versions of one incident at once (a
// slow one's taken over when stale, see store.StartAnalysisOnce) that
// both moved the top cause from release to capacity. Each notifier read
// "release" as the cause last sent before either had queued its own, and
// receivers got cause.changed twice for one change.
func TestCauseChangedOnceWhenTwoVersionsFinishAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "http://receiver.test/hook")
	time.Sleep(10 * time.Millisecond)
	for round := range 10 {
		in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("p99 up %d", round), Start: testclock.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		n := webhook.NewNotifier(f.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
		var vs []int
		for _, top := range []string{"release", "capacity", "capacity"} {
			v, err := f.st.StartAnalysis(ctx, in.ID, "d")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.st.FinishAnalysis(ctx, in.ID, v, scored(top), ""); err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		if err := n.NotifyAnalysis(ctx, in.ID, vs[0], "", "release"); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, prev := range []string{"release", "capacity"} { // each replica's OnReady
			wg.Go(func() {
				<-start
				if err := n.NotifyAnalysis(ctx, in.ID, vs[i+1], prev, "capacity"); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		var changed []int
		for _, d := range f.log(t) {
			if d.IncidentID == in.ID && d.Event == store.EventCauseChanged {
				changed = append(changed, d.AnalysisVersion)
			}
		}
		if len(changed) != 1 {
			t.Fatalf("round %d: cause.changed for versions %v, want one (release → capacity)", round, changed)
		}
	}
}
