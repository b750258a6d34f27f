package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// incident fetches one incident, failing the test unless it is there.
func (e *apiEnv) incident(id int64) wire.Incident {
	e.t.Helper()
	var in wire.Incident
	if r := e.get(fmt.Sprintf("/api/v1/incidents/%d", id), &in); r.status != http.StatusOK {
		e.t.Fatalf("GET incident %d: %d %s", id, r.status, r.body)
	}
	return in
}

func (e *apiEnv) createIncident(title string, start, end time.Time) wire.Incident {
	e.t.Helper()
	body := fmt.Sprintf(`{"title":%q,"start":%q,"end":%q,"scope":{"model":"chat-7b"}}`, title,
		start.Format(time.RFC3339), end.Format(time.RFC3339))
	r := e.post("/api/v1/incidents", "application/json", []byte(body))
	if r.status != http.StatusCreated {
		e.t.Fatalf("create incident: %d %s", r.status, r.body)
	}
	var in wire.Incident
	if err := json.Unmarshal(r.body, &in); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func TestIncidentsCreateGetResolve(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	start, end := testNow.Add(-2*time.Hour), testNow.Add(-time.Hour)
	in := e.createIncident("p99 up on chat-7b", start, end)
	if in.ID == 0 || in.URL != fmt.Sprintf("http://waterline.test/incidents/%d", in.ID) {
		t.Fatalf("created %+v", in)
	}
	if ch := e.incidentChanges(); len(ch) != 1 || ch[0] != in.ID {
		t.Fatalf("OnIncidentChanged calls %v, want [%d]", ch, in.ID)
	}
	got := e.incident(in.ID)
	if got.Title != "p99 up on chat-7b" || got.Status != "open" || got.Source != "manual" || !got.StartedAt.Equal(start) ||
		got.EndedAt == nil || !got.EndedAt.Equal(end) || got.Scope.Model != "chat-7b" || got.TopCause != nil ||
		got.AnalysisStatus != "none" || got.URL != in.URL {
		t.Fatalf("GET = %+v", got)
	}

	// Once an analysis is ready, its first cause is the ticket's top cause.
	ctx := context.Background()
	v, err := e.st.StartAnalysis(ctx, in.ID, "digest")
	if err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(correlate.Analysis{Causes: []correlate.Cause{
		{Category: correlate.CatRelease, Score: 0.82, Summary: "v3 rollout 4 min before onset"},
		{Category: correlate.CatCapacity, Score: 0.3}}})
	if err := e.st.FinishAnalysis(ctx, in.ID, v, result, ""); err != nil {
		t.Fatal(err)
	}
	got = e.incident(in.ID)
	if got.TopCause == nil || got.TopCause.Category != "release" || got.TopCause.Score != 0.82 ||
		got.TopCause.Summary != "v3 rollout 4 min before onset" || got.AnalysisStatus != "ready" {
		t.Fatalf("top cause %+v status %q", got.TopCause, got.AnalysisStatus)
	}

	r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", in.ID), "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	got = e.incident(in.ID)
	if got.Status != "resolved" || got.ResolvedAt == nil || !got.ResolvedAt.Equal(testNow) || !got.EndedAt.Equal(end) {
		t.Fatalf("after resolve %+v", got)
	}
	if r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", in.ID), "", nil); r.status != http.StatusOK {
		t.Fatalf("resolve twice: %d", r.status)
	}
	if ch := e.incidentChanges(); len(ch) != 2 {
		t.Fatalf("OnIncidentChanged calls %v, want 2 (create, resolve once)", ch)
	}
	if r := e.get("/api/v1/incidents/999999", nil); r.status != http.StatusNotFound {
		t.Fatalf("missing incident: %d", r.status)
	}
	if r := e.get("/api/v1/incidents/abc", nil); r.status != http.StatusNotFound {
		t.Fatalf("bad id: %d", r.status)
	}
}

func TestIncidentsCreateValidation(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	cases := []struct {
		name, body string
		status     int
		field      string
	}{
		{"empty", ``, 400, ""},
		{"not JSON", `{"title":`, 400, ""},
		{"no title", `{"start":"2026-11-29T10:00:00Z","end":"2026-11-29T11:00:00Z"}`, 422, "title"},
		{"bad start", `{"title":"x","start":"yesterday"}`, 422, "start"},
		{"end before start", `{"title":"x","start":"2026-11-29T10:00:00Z","end":"2026-11-29T09:00:00Z"}`, 422, "end"},
		{"unknown field", `{"title":"x","start":"2026-11-29T10:00:00Z","owner":"me"}`, 422, "owner"},
		{"unknown scope field", `{"title":"x","start":"2026-11-29T10:00:00Z","scope":{"pod":"p"}}`, 422, "scope.pod"},
		{"wrong type", `{"title":5,"start":"2026-11-29T10:00:00Z"}`, 422, "title"},
		// Postgres keeps microseconds: these two are the same instant there.
		{"end within the start's microsecond", `{"title":"x","start":"2026-11-29T10:00:00.0000001Z","end":"2026-11-29T10:00:00.0000009Z"}`, 422, "end"},
	}
	// The cases' times are moved to hours before the test clock.
	dates := strings.NewReplacer(
		"2026-11-29T09:00:00Z", testNow.Add(-4*time.Hour).Format(time.RFC3339),
		"2026-11-29T10:00:00Z", testNow.Add(-3*time.Hour).Format(time.RFC3339),
		"2026-11-29T10:00:00.0000001Z", testNow.Add(-3*time.Hour).Truncate(time.Second).Add(100).Format(time.RFC3339Nano),
		"2026-11-29T10:00:00.0000009Z", testNow.Add(-3*time.Hour).Truncate(time.Second).Add(900).Format(time.RFC3339Nano),
		"2026-11-29T11:00:00Z", testNow.Add(-2*time.Hour).Format(time.RFC3339))
	for _, c := range cases {
		r := e.post("/api/v1/incidents", "application/json", []byte(dates.Replace(c.body)))
		if r.status != c.status || r.err.Field != c.field {
			t.Errorf("%s: %d field %q (%s), want %d field %q", c.name, r.status, r.err.Field, r.err.Error, c.status, c.field)
		}
	}
	// Open-ended incidents are fine.
	if r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"now","start":%q}`, testNow.Add(-2*time.Hour).Format(time.RFC3339)))); r.status != 201 {
		t.Fatalf("open-ended: %d %s", r.status, r.body)
	}
}

func TestIncidentsListPagination(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	var ids []int64
	for i := 0; i < 7; i++ {
		// Two share a start time: the id breaks the tie.
		start := testNow.Add(-time.Duration(10-i/2*2) * time.Hour)
		ids = append(ids, e.createIncident(fmt.Sprintf("i%d", i), start, start.Add(time.Hour)).ID)
	}
	e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", ids[0]), "", nil)

	var seen []int64
	cursor := ""
	for page := 0; ; page++ {
		var p wire.IncidentPage
		q := url.Values{"limit": {"3"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if r := e.get("/api/v1/incidents?"+q.Encode(), &p); r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		for _, in := range p.Incidents {
			seen = append(seen, in.ID)
		}
		if p.NextCursor == "" {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		cursor = p.NextCursor
	}
	// Newest first (by id), each exactly once.
	want := []int64{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v", seen, want)
	}

	var p wire.IncidentPage
	e.get("/api/v1/incidents?status=resolved", &p)
	if len(p.Incidents) != 1 || p.Incidents[0].ID != ids[0] {
		t.Fatalf("status=resolved gave %+v", p.Incidents)
	}
	// from/to select incidents overlapping the window.
	q := url.Values{"from": {testNow.Add(-5*time.Hour - 30*time.Minute).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}}
	e.get("/api/v1/incidents?"+q.Encode(), &p)
	if len(p.Incidents) != 3 {
		t.Fatalf("window gave %d incidents, want 3", len(p.Incidents))
	}
	// A forged cursor whose time Postgres cannot hold is a bad cursor too.
	forged := "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("-1000000000000000000.1"))
	for _, bad := range []string{"status=closed", "from=yesterday", "limit=0", "limit=9999", "cursor=!!", forged} {
		if r := e.get("/api/v1/incidents?"+bad, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, r.status)
		}
	}
}
