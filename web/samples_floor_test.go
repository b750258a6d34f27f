package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
)

// TestSamplesUnderRetentionFloorRefused: a sample older than what the
// samples retention keeps is refused with a 422 naming its line and
// field, and nothing of the request is stored — accepting it would have
// told the sender it was stored until the next maintenance dropped it.
func TestSamplesUnderRetentionFloorRefused(t *testing.T) {
	t.Parallel()
	floor := testNow.Add(-2 * time.Hour).Add(2500 * time.Millisecond) // between sampleLine(2499) and (2500)
	e := newAPIEnv(t, func(c *web.Config) { c.SamplesFloor = func() time.Time { return floor } })
	post := func(body []byte) response {
		return e.do(request{method: "POST", path: "/api/v1/samples", token: e.write, ctype: "application/x-ndjson", body: body})
	}
	// Lines 1–3 are samples 2500–2502 (kept); line 4 is sample 2000 (under the floor).
	body := append(ndjson(2500, 2503), []byte(sampleLine(2000)+"\n")...)
	r := post(body)
	if r.status != http.StatusUnprocessableEntity || r.err.Line != 4 || r.err.Field != "time" ||
		!strings.Contains(r.err.Error, "samples retention") {
		t.Fatalf("a sample under the floor: %d %+v, want 422 on line 4, field time, naming the retention", r.status, r.err)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored from a refused request, want 0", n)
	}
	if r := post(ndjson(2500, 2503)); r.status != http.StatusOK {
		t.Fatalf("samples above the floor: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 3 {
		t.Fatalf("%d samples stored, want 3", n)
	}
}

// TestEventsUnderRetentionFloorRefused: change events and annotations
// follow the points' retention; one older than it keeps was answered 200
// and deleted by the next maintenance (a CD system replaying its deploy
// log). It is refused with a 422 naming the line and field, as samples
// under their floor are; what retention keeps is stored and stays.
func TestEventsUnderRetentionFloorRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keep := 90 * 24 * time.Hour
	var floor *store.RetentionFloor
	e := newAPIEnv(t, func(c *web.Config) { c.EventsFloor = func() time.Time { return floor.At() } })
	floor = e.st.NewEventsFloor(keep)
	// Points pulled up to now, as under any running serve.
	storetest.WriteCurves(t, e.st, []correlate.Curve{{Role: correlate.RoleQPS, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "chat-7b"}, Points: []correlate.Point{{T: testNow.Add(-time.Minute).UnixMilli(), V: 1}}}})
	if err := floor.Refresh(ctx, testNow); err != nil {
		t.Fatal(err)
	}
	event := func(id string, age time.Duration) string {
		return fmt.Sprintf(`{"id":%q,"kind":"deploy","time":%q,"model":"chat-7b","version":"v1"}`+"\n", id, testNow.Add(-age).Format(time.RFC3339))
	}
	r := e.post("/api/v1/events", "application/x-ndjson", []byte(event("kept", 80*24*time.Hour)+event("too-old", 100*24*time.Hour)))
	if r.status != http.StatusUnprocessableEntity || r.err.Line != 2 || r.err.Field != "time" || !strings.Contains(r.err.Error, "points retention") {
		t.Fatalf("an event under the floor: %d %s; want 422 on line 2, field time, naming the retention", r.status, r.body)
	}
	old := fmt.Sprintf(`{"time":%d,"tags":["deploy","model:chat-7b"],"text":"old deploy"}`, testNow.Add(-100*24*time.Hour).UnixMilli())
	if r := e.post("/api/annotations", "application/json", []byte(old)); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("an annotation under the floor: %d %s, want 422", r.status, r.body)
	}
	if a, _ := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(event("kept", 80*24*time.Hour)))); a != 1 {
		t.Fatalf("an event retention keeps: accepted %d", a)
	}
	if _, err := e.st.Maintain(ctx, testNow, 0, store.Retention{Points: keep}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events after maintenance, want the one retention keeps", n)
	}
}
