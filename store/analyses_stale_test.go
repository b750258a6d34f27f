package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A replica whose analysis runs past analysisStale has its incident taken
// over: another starts the next version. The slow one still finishes its
// own version, after the newer one started or finished; each version's
// row is written only by the analyzer that started it, and the current
// analysis is the newest ready version, so the late older result neither
// overwrites the newer one nor becomes current over it.
func TestStaleVersionFinishingLateStaysBehindTheNewer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Start: time.Now().UTC().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := st.StartAnalysisOnce(ctx, in.ID, "d1", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartAnalysisOnce(ctx, in.ID, "d2", false); err != store.ErrAnalysisBusy {
		t.Fatalf("second start while the first is fresh: %v, want ErrAnalysisBusy", err)
	}
	// Its analyzer is slow, not dead: past the stale age another takes over.
	if _, err := st.DB().Exec(ctx, `UPDATE analyses SET created_at = now() - interval '3 minutes' WHERE incident_id = $1`, in.ID); err != nil {
		t.Fatal(err)
	}
	newer, err := st.StartAnalysisOnce(ctx, in.ID, "d2", false)
	if err != nil || newer != slow+1 {
		t.Fatalf("take-over: version %d (%v), want %d", newer, err, slow+1)
	}
	if err := st.FinishAnalysis(ctx, in.ID, newer, []byte(`{"causes":[{"category":"capacity","score":0.8}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAnalysis(ctx, in.ID, slow, []byte(`{"causes":[{"category":"release","score":0.8}]}`), ""); err != nil {
		t.Fatal(err)
	}
	cur, err := st.LatestReadyAnalysis(ctx, in.ID)
	if err != nil || cur.Version != newer || cur.InputsDigest != "d2" {
		t.Fatalf("current analysis v%d %q (%v), want v%d from d2", cur.Version, cur.InputsDigest, err, newer)
	}
	got, err := st.Incident(ctx, in.ID)
	if err != nil || got.TopCause == nil || got.TopCause.Category != "capacity" || got.AnalysisStatus != store.AnalysisReady {
		t.Fatalf("incident summary %+v / %q (%v), want the newer version's capacity", got.TopCause, got.AnalysisStatus, err)
	}
	if top, err := st.NewestReadyTopCause(ctx, in.ID); err != nil || top != "capacity" {
		t.Fatalf("newest ready top cause %q (%v), want capacity (what cause.changed checks against)", top, err)
	}
}
