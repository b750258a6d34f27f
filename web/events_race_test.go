package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// An id reused for another change is a 422 (TestEventIDReusedForAnotherChange)
// also when the other change is being stored at the same moment: the
// request waits for the first one's row, and then compared its event with
// a snapshot taken before that row was committed, found nothing stored,
// and answered 200 {"duplicates":1}, dropping the new deploy silently.
func TestEventIDReusedWhileTheFirstIsBeingStored(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := context.Background()
	t0 := testNow.Add(-time.Hour)
	// The first deploy, stored by another request whose transaction has
	// not committed yet.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, kind, time, model, version, source, summary)
		VALUES ('deploy-vision-xl', 'deploy', $1, 'vision-xl', 'v2', '', 'rollout v1 -> v2')`, t0); err != nil {
		t.Fatal(err)
	}
	// The next deploy under the same id.
	second := fmt.Sprintf(`{"id":"deploy-vision-xl","kind":"deploy","time":%q,"model":"vision-xl","version":"v3","summary":"rollout v2 -> v3"}`+"\n",
		testNow.Add(-10*time.Minute).Format(time.RFC3339))
	done := make(chan response, 1)
	go func() { done <- e.post("/api/v1/events", "application/x-ndjson", []byte(second)) }()
	// Once it waits for the first one's row, the first commits.
	for deadline := time.Now().Add(10 * time.Second); e.count(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO events%'`) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second request never waited for the first one's row")
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.status != http.StatusUnprocessableEntity || r.err.Field != "id" || r.err.Line != 1 {
		t.Fatalf("an id reused for another deploy while the first was being stored: %d %s; want 422 naming line 1 and the id", r.status, r.body)
	}
	ev, err := e.st.EventByID(ctx, "deploy-vision-xl")
	if err != nil || ev.Version != "v2" {
		t.Fatalf("stored %+v (%v), want the first deploy", ev, err)
	}
}
