package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestPruneAnalyses: an open incident is analysed again every pass, so
// its versions grow by thousands a day. Pruning keeps what anything reads
// — the first ready version, every version whose top cause changed, the
// newest, the last hour's, failed ones' successors, and versions a webhook
// delivery was made from — and drops the rest.
func TestPruneAnalyses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	inc, err := st.CreateIncident(ctx, store.NewIncident{Title: "long", Start: time.Now().Add(-5 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateIncident(ctx, store.NewIncident{Title: "other", Start: time.Now().Add(-5 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// Versions 1–12, two hours old but the last three (10–12) recent.
	tops := []string{"release", "release", "release", "capacity", "capacity", "", "capacity", "release", "release", "release", "release", "release"}
	for i, top := range tops {
		v, err := st.StartAnalysis(ctx, inc.ID, "d")
		if err != nil || v != i+1 {
			t.Fatalf("version %d: %d %v", i+1, v, err)
		}
		failure := ""
		if top == "" {
			failure = "boom"
		}
		if err := st.FinishAnalysis(ctx, inc.ID, v, []byte(fmt.Sprintf(`{"causes":[{"category":%q}]}`, top)), failure); err != nil {
			t.Fatal(err)
		}
		if i < 9 {
			if _, err := pool.Exec(ctx, `UPDATE analyses SET created_at = now() - interval '2 hours', finished_at = now() - interval '2 hours' WHERE incident_id = $1 AND version = $2`, inc.ID, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The other incident's two old versions: its newest stays.
	for range 2 {
		v, _ := st.StartAnalysis(ctx, other.ID, "d")
		_ = st.FinishAnalysis(ctx, other.ID, v, []byte(`{"causes":[{"category":"routing"}]}`), "")
	}
	if _, err := pool.Exec(ctx, `UPDATE analyses SET finished_at = now() - interval '2 hours' WHERE incident_id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	// A delivery was made from version 2.
	hook, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "http://x.test/h", Secret: "0123456789abcdef", Format: "jira", Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: hook.ID, IncidentID: inc.ID, Event: "analysis.ready", AnalysisVersion: 2,
		IdempotencyKey: "k", Body: []byte("{}"), DueAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneAnalyses(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	versions := func(id int64) []int {
		rows, _ := pool.Query(ctx, `SELECT version FROM analyses WHERE incident_id = $1 ORDER BY version`, id)
		var out []int
		for rows.Next() {
			var v int
			_ = rows.Scan(&v)
			out = append(out, v)
		}
		return out
	}
	// 1 first; 2 delivered from; 4 capacity after release; 8 release after
	// capacity (the failed 6 sits between, and goes); 10–12 recent.
	if got, want := versions(inc.ID), []int{1, 2, 4, 8, 10, 11, 12}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if got, want := versions(other.ID), []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("other incident kept %v, want %v (its first and its newest)", got, want)
	}
	if n != 5 {
		t.Errorf("pruned %d, want 5 (3, 5, 6, 7, 9)", n)
	}
	// What reads the versions still sees the same changes.
	if v, err := st.FirstReadyAnalysis(ctx, inc.ID); err != nil || v != 1 {
		t.Errorf("first ready: %d %v", v, err)
	}
	if a, err := st.LatestAnalysis(ctx, inc.ID); err != nil || a.Version != 12 {
		t.Errorf("latest: %+v %v", a.Version, err)
	}
	// A second pass has nothing left to do; the next version is 13.
	if n, err := st.PruneAnalyses(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("second prune: %d %v", n, err)
	}
	if v, _ := st.StartAnalysis(ctx, inc.ID, "d"); v != 13 {
		t.Errorf("next version %d, want 13", v)
	}
}

// The newest ready version stays even when a failed one came after it:
// pages and the API fall back to it (an incident resolved while its last
// analysis failed shows it).
func TestPruneKeepsNewestReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	inc, err := st.CreateIncident(ctx, store.NewIncident{Title: "x", Start: time.Now().Add(-5 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		v, _ := st.StartAnalysis(ctx, inc.ID, "d")
		failure := ""
		if i == 3 {
			failure = "prometheus down"
		}
		if err := st.FinishAnalysis(ctx, inc.ID, v, []byte(`{"causes":[{"category":"release"}]}`), failure); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE analyses SET finished_at = now() - interval '2 hours' WHERE incident_id = $1`, inc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PruneAnalyses(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if a, err := st.LatestReadyAnalysis(ctx, inc.ID); err != nil || a.Version != 3 {
		t.Errorf("newest ready after pruning: %d %v, want 3", a.Version, err)
	}
}
