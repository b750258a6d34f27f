package web_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/wire"
)

// firingGroup is one Alertmanager notification of group key with the given
// (fingerprint, startsAt) alerts, all firing, about chat-7b.
func firingGroup(key string, alerts map[string]time.Time) []byte {
	var as []wire.AlertmanagerAlert
	for fp, at := range alerts {
		as = append(as, wire.AlertmanagerAlert{Status: "firing",
			Labels:      map[string]string{"alertname": "P99High", "model": "chat-7b", "pod": "p-" + fp, "severity": "page"},
			Annotations: map[string]string{"summary": "p99 above SLO"}, StartsAt: at, Fingerprint: fp})
	}
	b, _ := json.Marshal(wire.AlertmanagerPayload{Version: "4", GroupKey: key, Status: "firing", Receiver: "waterline",
		GroupLabels: map[string]string{"alertname": "P99High"}, CommonLabels: map[string]string{"alertname": "P99High", "model": "chat-7b"},
		Alerts: as})
	return b
}

// listAll pages GET /api/v1/incidents with limit, calling between(page)
// after each page, and returns the ids in the order seen.
func (e *apiEnv) listAll(t *testing.T, query url.Values, between func(page int)) []int64 {
	t.Helper()
	var seen []int64
	cursor := ""
	for page := 0; page < 20; page++ {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p wire.IncidentPage
		if r := e.get("/api/v1/incidents?"+q.Encode(), &p); r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		for _, in := range p.Incidents {
			seen = append(seen, in.ID)
		}
		if p.NextCursor == "" {
			return seen
		}
		cursor = p.NextCursor
		if between != nil {
			between(page)
		}
	}
	t.Fatal("pagination does not end")
	return nil
}

// An integration syncing incidents into tickets pages through
// GET /api/v1/incidents. Between two pages, Alertmanager re-notifies an
// open group with one more alert that started earlier: the incident's
// start moves back, and when pages went by start, the incident already
// returned on page 1 came again on a later one (a second ticket). Pages go
// by id: each incident is listed once.
func TestIncidentPagesListAnIncidentAnAlertExtendsOnce(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	// Two manual incidents, started 60 and 70 minutes ago.
	b := e.createIncident("b", testNow.Add(-60*time.Minute), testNow.Add(-50*time.Minute))
	c := e.createIncident("c", testNow.Add(-70*time.Minute), testNow.Add(-65*time.Minute))
	// An alert group that fired 10 minutes ago: its incident starts at
	// startsAt − 30 min lookback = 40 minutes ago, the newest.
	key := `{}:{alertname="P99High"}`
	a := e.alert(firingGroup(key, map[string]time.Time{"aa01": testNow.Add(-10 * time.Minute)}))
	if !a.Opened {
		t.Fatalf("alert: %+v", a)
	}
	seen := e.listAll(t, url.Values{"limit": {"1"}}, func(page int) {
		if page != 0 {
			return
		}
		// After page 1 (which held the alert incident): the group is
		// re-sent with a second alert of the same episode that started
		// 50 minutes ago.
		r := e.alert(firingGroup(key, map[string]time.Time{"aa01": testNow.Add(-10 * time.Minute), "aa02": testNow.Add(-50 * time.Minute)}))
		if r.IncidentID != a.IncidentID || !r.Extended {
			t.Fatalf("re-notification: %+v, want incident %d extended", r, a.IncidentID)
		}
	})
	count := map[int64]int{}
	for _, id := range seen {
		count[id]++
	}
	for _, id := range []int64{a.IncidentID, b.ID, c.ID} {
		if count[id] != 1 {
			t.Errorf("incident %d listed %d times over the pages (ids seen in order: %v); want once", id, count[id], seen)
		}
	}
}

// GET /api/v1/incidents/{id}/analysis serves the last good analysis when
// a newer version failed ("status":"ready", with "error" saying so: a
// resolved incident is not computed again and must not read "failed" for
// good). The incident summary — what GET /api/v1/incidents/{id}, the list
// and ticket integrations read — took analysis_status from the newest
// row: it said "failed" next to a top_cause, for good, so an integration
// waiting for "ready" before filling the ticket's cause never filled it.
func TestIncidentSummaryAnalysisStatusAgreesWithAnalysis(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := t.Context()
	in := e.createIncident("p99 up", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))
	v, err := e.st.StartAnalysis(ctx, in.ID, "d1")
	if err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(map[string]any{"causes": []map[string]any{{"category": "release", "score": 0.8, "summary": "v3 rollout"}}})
	if err := e.st.FinishAnalysis(ctx, in.ID, v, result, ""); err != nil {
		t.Fatal(err)
	}
	v2, err := e.st.StartAnalysis(ctx, in.ID, "d2")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishAnalysis(ctx, in.ID, v2, nil, "conn reset"); err != nil {
		t.Fatal(err)
	}
	if r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", in.ID), "", nil); r.status != 200 {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	var an struct {
		Status string `json:"status"`
	}
	e.get(fmt.Sprintf("/api/v1/incidents/%d/analysis", in.ID), &an)
	got := e.incident(in.ID)
	var page wire.IncidentPage
	e.get("/api/v1/incidents", &page)
	if an.Status != "ready" {
		t.Fatalf("analysis endpoint: %q, want ready (the last good one)", an.Status)
	}
	if got.AnalysisStatus != an.Status {
		t.Errorf("GET incident: analysis_status %q with top_cause %+v, but the analysis endpoint says %q", got.AnalysisStatus, got.TopCause, an.Status)
	}
	if len(page.Incidents) == 1 && page.Incidents[0].AnalysisStatus != an.Status {
		t.Errorf("list: analysis_status %q, but the analysis endpoint says %q", page.Incidents[0].AnalysisStatus, an.Status)
	}
}

// GET /api/v1/incidents dropped the parameters it did not know without a
// word: an integration filtering by model= (as /timeline and /spikes take)
// or source=, or with a typo (staus=open), got every incident with a 200
// and linked the wrong ones to its ticket. model and source now filter;
// anything else is a 400 naming it.
func TestIncidentListRefusesFiltersItDoesNotApply(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	in := e.createIncident("chat p99", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour)) // scope model chat-7b, source manual
	e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", in.ID), "", nil)
	for q, want := range map[string]int{"model=vision-xl": 0, "source=alertmanager": 0, "model=chat-7b": 1, "source=manual&status=resolved": 1} {
		var p wire.IncidentPage
		if r := e.get("/api/v1/incidents?"+q, &p); r.status != 200 || len(p.Incidents) != want {
			t.Errorf("GET /api/v1/incidents?%s: %d with %d incidents, want 200 with %d", q, r.status, len(p.Incidents), want)
		}
	}
	for q, field := range map[string]string{"staus=open": "staus", "sort=asc": "sort", "source=pagerduty": "source"} {
		if r := e.get("/api/v1/incidents?"+q, nil); r.status != 400 || r.err.Field != field {
			t.Errorf("GET /api/v1/incidents?%s: %d %s, want a 400 naming %s", q, r.status, r.body, field)
		}
	}
}

// from and to are parsed with time.Parse and then tested with IsZero, so
// a `to` of 0001-01-01T00:00:00Z (what a client's zero time serialises
// to: Go's time.Time{}, .NET's DateTime.MinValue) is taken for "no
// bound": the window check ("to must be after from") is skipped and every
// incident is listed, where the window selects none. Other endpoints bound
// times to 1970–9999 with a 400 (request.Time).
func TestIncidentListZeroTimeIsNotNoBound(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	e.createIncident("chat p99", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))
	from := testNow.Add(-3 * time.Hour).Format(time.RFC3339)
	for _, q := range []string{"to=0001-01-01T00:00:00Z", "from=" + from + "&to=0001-01-01T00:00:00Z"} {
		var p wire.IncidentPage
		r := e.get("/api/v1/incidents?"+q, &p)
		if r.status == 200 && len(p.Incidents) > 0 {
			t.Errorf("GET /api/v1/incidents?%s: 200 with %d incidents, none of which starts before year 1; want a 400 (or none)", q, len(p.Incidents))
		}
	}
}
