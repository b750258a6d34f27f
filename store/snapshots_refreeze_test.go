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
// has passed or the analysis is ready; a complete one is not. One holding
// an older analysis version than the newest ready one (a version that
// finished after the freeze) is listed again too, as is one taken before
// snapshots kept their analysis' version.
func TestUnfrozenIncidentsListsIncompleteSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	end := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	// resolved is a resolved incident with ready analysis versions 1 to
	// ready, frozen at snapAt with analysis as version version.
	resolved := func(snapAt time.Time, analysis string, version, ready int) int64 {
		t.Helper()
		in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Start: end.Add(-time.Hour), Scope: correlate.Scope{Model: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ResolveIncident(ctx, in.ID, end); err != nil {
			t.Fatal(err)
		}
		for range ready {
			readyAnalysis(t, st, in.ID, `{"causes":[]}`)
		}
		sn := store.Snapshot{IncidentID: in.ID, CreatedAt: snapAt, AnalysisVersion: version}
		if analysis != "" {
			sn.Analysis = json.RawMessage(analysis)
		}
		if err := st.SaveSnapshot(ctx, sn); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	atResolution := resolved(end.Add(time.Second), `{"causes":[]}`, 1, 1)
	beforeAnalysis := resolved(end.Add(20*time.Minute), "", 0, 1)
	noAnalysisYet := resolved(end.Add(20*time.Minute), "", 0, 0)
	complete := resolved(end.Add(20*time.Minute), `{"causes":[]}`, 1, 1)
	olderVersion := resolved(end.Add(20*time.Minute), `{"causes":[]}`, 1, 2)
	newestVersion := resolved(end.Add(20*time.Minute), `{"causes":[]}`, 2, 2)
	versionUnknown := resolved(end.Add(20*time.Minute), `{"causes":[]}`, 0, 1)
	now := time.Now()
	ids, err := st.UnfrozenIncidents(ctx, now.Add(-24*time.Hour), now.Add(-30*time.Minute), time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]bool{atResolution: true, beforeAnalysis: true, noAnalysisYet: false, complete: false,
		olderVersion: true, newestVersion: false, versionUnknown: true} {
		if got := slices.Contains(ids, id); got != want {
			t.Errorf("incident %d listed %v, want %v (listed %v)", id, got, want, ids)
		}
	}
}

// A snapshot keeps the version of the analysis it froze.
func TestSnapshotKeepsItsAnalysisVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Start: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{3, 0} {
		sn := store.Snapshot{IncidentID: in.ID, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), AnalysisVersion: v}
		if v > 0 {
			sn.Analysis = json.RawMessage(`{"causes":[]}`)
		}
		if err := st.SaveSnapshot(ctx, sn); err != nil {
			t.Fatal(err)
		}
		got, err := st.LoadSnapshot(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.AnalysisVersion != v {
			t.Errorf("snapshot saved with analysis version %d loads with %d", v, got.AnalysisVersion)
		}
	}
}
