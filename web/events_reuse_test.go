package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An event id names one change. A pipeline that names its events
// "deploy-<model>" sends the next deploy under the id of the last: a 200
// {"duplicates":1} dropped the new deploy silently, and the timeline and
// the release cause kept the old version. Such a reuse is a 422 naming
// the line and the id, and nothing of the request is stored; a true retry
// stays a duplicate, and the same event with the end time it lacked
// completes it.
func TestEventIDReusedForAnotherChange(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	t0 := testNow.Add(-time.Hour).Format(time.RFC3339)
	t1 := testNow.Add(-10 * time.Minute).Format(time.RFC3339)
	first := fmt.Sprintf(`{"id":"deploy-vision-xl","kind":"deploy","time":%q,"model":"vision-xl","version":"v2","summary":"rollout v1 -> v2"}`+"\n", t0)
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(first))); a != 1 || d != 0 {
		t.Fatalf("first deploy: accepted %d duplicates %d", a, d)
	}
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(first))); a != 0 || d != 1 {
		t.Fatalf("retry: accepted %d duplicates %d, want 0 1", a, d)
	}
	// The next deploy under the same id, on line 3 (after a blank line).
	second := fmt.Sprintf(`{"kind":"config_change","time":%q,"summary":"unrelated"}`+"\n\n"+
		`{"id":"deploy-vision-xl","kind":"deploy","time":%q,"model":"vision-xl","version":"v3","summary":"rollout v2 -> v3"}`+"\n", t1, t1)
	r := e.post("/api/v1/events", "application/x-ndjson", []byte(second))
	if r.status != http.StatusUnprocessableEntity || r.err.Line != 3 || r.err.Field != "id" || !strings.Contains(r.err.Error, "time") {
		t.Fatalf("an id reused for another deploy: %d %s; want 422 naming line 3, field id and what differs", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events stored, want the first deploy alone (nothing of the refused request)", n)
	}
	// Two events of one request under one id, saying different things.
	both := fmt.Sprintf(`{"id":"cfg-1","kind":"config_change","time":%q,"summary":"batch 8"}`+"\n"+
		`{"id":"cfg-1","kind":"config_change","time":%q,"summary":"batch 16"}`+"\n", t1, t1)
	if r := e.post("/api/v1/events", "application/x-ndjson", []byte(both)); r.status != 422 || r.err.Line != 2 || r.err.Field != "id" {
		t.Fatalf("one id twice in a request: %d %s", r.status, r.body)
	}
	// The rollout's end, reported once it is over, completes the event…
	end := testNow.Add(-50 * time.Minute).Format(time.RFC3339)
	done := strings.Replace(first, `"summary"`, fmt.Sprintf(`"end_time":%q,"summary"`, end), 1)
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(done))); a != 1 || d != 0 {
		t.Fatalf("the end of the rollout: accepted %d duplicates %d, want 1 0", a, d)
	}
	ev, err := e.st.EventByID(context.Background(), "deploy-vision-xl")
	if err != nil || ev.EndTime == nil || ev.EndTime.Format(time.RFC3339) != end || ev.Version != "v2" {
		t.Fatalf("stored event %+v (%v), want v2 ending at %s", ev, err, end)
	}
	// … and the start's retry, without it, is a duplicate.
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(first))); a != 0 || d != 1 {
		t.Fatalf("the start's retry after the end: accepted %d duplicates %d, want 0 1", a, d)
	}
}
