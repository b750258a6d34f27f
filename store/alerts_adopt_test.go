package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// An alert group adopts the open detector incident of its model rather
// than open a second one. One being resolved at that moment (a person, or
// the detector closing it) was adopted all the same: its window reopened
// (end cleared) on a resolved incident, and the alert, filed under it,
// opened nothing — nobody was paged. The adoption waits for the
// resolution, sees the incident resolved, and opens the alert's own.
func TestAlertDoesNotAdoptAnIncidentBeingResolved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	now := time.Now().UTC().Truncate(time.Second)
	onset := now.Add(-10 * time.Minute)
	det, _, err := st.FindOrOpenDetectorIncident(ctx, "chat", onset, 30*time.Minute, store.NewIncident{
		Title: "P99 spike on chat", Source: store.SourceDetector, Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	// A resolution in flight: its row is written, not yet committed.
	resolving, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer resolving.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := resolving.Exec(ctx, `UPDATE incidents SET status = 'resolved', resolved_at = $2, end_at = $2, updated_at = now() WHERE id = $1`,
		det.ID, now); err != nil {
		t.Fatal(err)
	}
	starts := onset.Add(2 * time.Minute)
	type result struct {
		out store.AlertOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := st.ApplyAlertGroup(ctx, store.AlertGroup{GroupKey: "{}:{alertname=\"ChatSlow\"}", Status: store.AlertFiring,
			Title: "ChatSlow", Scope: correlate.Scope{Model: "chat"},
			Alerts: []store.Alert{{Fingerprint: "f1", Status: store.AlertFiring, StartsAt: starts,
				Event: correlate.Event{ID: "alert-f1", Kind: correlate.KindAlert, Time: starts, Source: "alertmanager",
					Scope: correlate.Scope{Model: "chat"}, Summary: "ChatSlow"}}}}, 30*time.Minute, now)
		done <- result{out, err}
	}()
	// Commit once the notification waits on the incident's row (or is
	// done without waiting).
	var res *result
	for waiting := false; !waiting; {
		select {
		case r := <-done: // finished without waiting
			res, waiting = &r, true
		default:
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if !waiting {
				time.Sleep(5 * time.Millisecond) // polling the database's state
			}
		}
	}
	if err := resolving.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if res == nil {
		r := <-done
		res = &r
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	got, err := st.Incident(ctx, det.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.out.Adopted || got.GroupKey != "" || got.End == nil {
		t.Fatalf("outcome %+v; resolved incident group key %q, end %v: want it left alone", res.out, got.GroupKey, got.End)
	}
	if !res.out.Opened || res.out.IncidentID == det.ID {
		t.Fatalf("outcome %+v, want the alert's own incident opened", res.out)
	}
}
