package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// The webhook sweep is a safety net: a ready version whose deliveries are
// queued for every webhook that wants its event is not handed to it
// again. Each minute it re-ran the notify path (reading the full result)
// for every recent incident's first ready version.
func TestSweepSkipsVersionsAlreadyQueued(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	hook, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "https://hooks.example/x", Secret: "0123456789abcdef0123",
		Format: store.WebhookFormatWaterline, Events: []string{store.EventAnalysisReady, store.EventCauseChanged}})
	if err != nil {
		t.Fatal(err)
	}
	inc, err := st.CreateIncident(ctx, store.NewIncident{Title: "slow", Start: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := st.StartAnalysis(ctx, inc.ID, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAnalysis(ctx, inc.ID, v, []byte(`{"causes":[{"category":"release","score":0.8}]}`), ""); err != nil {
		t.Fatal(err)
	}
	versions := func() []store.ReadyVersion {
		rs, err := st.ReadyAnalysesWithin(ctx, time.Hour, 100)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	if rs := versions(); len(rs) != 1 || rs[0].Version != v {
		t.Fatalf("before any delivery: %+v, want version %d", rs, v)
	}
	if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: hook.ID, IncidentID: inc.ID, Event: store.EventAnalysisReady,
		AnalysisVersion: v, IdempotencyKey: "k1", Body: []byte(`{}`), DueAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rs := versions(); len(rs) != 0 {
		t.Errorf("queued for the only webhook: %+v, want none", rs)
	}
	// Versions finishing out of order: v2's analysis.ready was queued, then
	// v1 finished and became the first ready version. It is not news.
	inc2, err := st.CreateIncident(ctx, store.NewIncident{Title: "slow too", Start: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := st.StartAnalysis(ctx, inc2.ID, "a")
	v2, _ := st.StartAnalysis(ctx, inc2.ID, "b")
	if err := st.FinishAnalysis(ctx, inc2.ID, v2, []byte(`{"causes":[{"category":"release","score":0.8}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: hook.ID, IncidentID: inc2.ID, Event: store.EventAnalysisReady,
		AnalysisVersion: v2, IdempotencyKey: "k2", Body: []byte(`{}`), DueAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAnalysis(ctx, inc2.ID, v1, []byte(`{"causes":[{"category":"release","score":0.8}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if rs := versions(); len(rs) != 0 {
		t.Errorf("analysis.ready already queued for a later version: %+v, want none", rs)
	}
	// A second webhook that wants it and has no delivery yet: handed again.
	if _, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "https://hooks.example/y", Secret: "0123456789abcdef0123",
		Format: store.WebhookFormatJira, Events: []string{store.EventAnalysisReady}}); err != nil {
		t.Fatal(err)
	}
	if rs := versions(); len(rs) != 0 {
		t.Errorf("a webhook made after the version was ready: %+v, want none (it hears only what comes after)", rs)
	}
}
