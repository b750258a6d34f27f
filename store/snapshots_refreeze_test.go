package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A resolved incident's snapshot taken at its resolution lacks the ten
// minutes after the end that the frozen page draws, and one taken before
// the first analysis lacks the analysis (so its slow samples were never
// told from the others): both are listed again for a freeze once the tail
// has passed or the analysis is ready; a complete one is not.
func TestUnfrozenIncidentsListsIncompleteSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	end := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	resolved := func(snapAt time.Time, analysis string, ready bool) int64 {
		t.Helper()
		in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Start: end.Add(-time.Hour), Scope: correlate.Scope{Model: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ResolveIncident(ctx, in.ID, end); err != nil {
			t.Fatal(err)
		}
		if ready {
			readyAnalysis(t, st, in.ID, `{"causes":[]}`)
		}
		sn := store.Snapshot{IncidentID: in.ID, CreatedAt: snapAt}
		if analysis != "" {
			sn.Analysis = json.RawMessage(analysis)
		}
		if err := st.SaveSnapshot(ctx, sn); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	atResolution := resolved(end.Add(time.Second), `{"causes":[]}`, true)
	beforeAnalysis := resolved(end.Add(20*time.Minute), "", true)
	noAnalysisYet := resolved(end.Add(20*time.Minute), "", false)
	complete := resolved(end.Add(20*time.Minute), `{"causes":[]}`, true)
	now := time.Now()
	ids, err := st.UnfrozenIncidents(ctx, now.Add(-24*time.Hour), now.Add(-30*time.Minute), time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]bool{atResolution: true, beforeAnalysis: true, noAnalysisYet: false, complete: false} {
		if got := slices.Contains(ids, id); got != want {
			t.Errorf("incident %d listed %v, want %v (listed %v)", id, got, want, ids)
		}
	}
}
