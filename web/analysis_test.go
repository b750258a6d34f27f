package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/wire"
)

// curveT0 starts the curves these tests write: ten days before the test
// clock, on a whole hour, well inside every age limit.
var curveT0 = testNow.Add(-10 * 24 * time.Hour).Truncate(time.Hour)

// writeSpikeCurves stores P99 curves of two models for two hours at 15 s;
// chat's quadruples from 07:40 to 07:55.
func (e *apiEnv) writeSpikeCurves() {
	e.t.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	var curves []correlate.Curve
	for _, m := range []string{"chat", "vision"} {
		c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: m}}
		for ts := curveT0; ts.Before(curveT0.Add(2 * time.Hour)); ts = ts.Add(15 * time.Second) {
			v := 200 * math.Exp(0.05*rng.NormFloat64())
			if m == "chat" && !ts.Before(curveT0.Add(100*time.Minute)) && ts.Before(curveT0.Add(115*time.Minute)) {
				v *= 4
			}
			c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v})
		}
		curves = append(curves, c)
	}
	storetest.WriteCurves(e.t, e.st, curves)
}

func TestAnalysisAPI(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	e.writeSpikeCurves()
	body := fmt.Sprintf(`{"title":"chat slow","start":%q,"end":%q}`,
		curveT0.Add(40*time.Minute).Format(time.RFC3339), curveT0.Add(2*time.Hour).Format(time.RFC3339))
	r := e.do(request{method: "POST", path: "/api/v1/incidents", token: e.write, ctype: "application/json", body: []byte(body)})
	if r.status != http.StatusCreated {
		t.Fatalf("create incident: %d %s", r.status, r.body)
	}
	var created struct{ ID int64 }
	json.Unmarshal(r.body, &created)
	path := fmt.Sprintf("/api/v1/incidents/%d/analysis", created.ID)

	var pending wire.Analysis
	if r := e.get(path, &pending); r.status != http.StatusOK || pending.Status != "pending" {
		t.Fatalf("before the worker ran: %d %s", r.status, r.body)
	}
	if _, err := diagnose.NewAnalyzer(e.st, diagnose.AnalyzerOptions{}).Analyze(context.Background(), created.ID, false); err != nil {
		t.Fatal(err)
	}
	var ready wire.Analysis
	if r := e.get(path, &ready); r.status != http.StatusOK {
		t.Fatalf("analysis: %d %s", r.status, r.body)
	}
	if ready.Status != "ready" || ready.Version != 1 || ready.IncidentID != created.ID || ready.Result == nil || ready.Onset == nil || len(ready.Causes) == 0 {
		t.Fatalf("analysis %+v", ready)
	}
	if d := ready.Onset.Sub(curveT0.Add(100 * time.Minute)); d.Abs() > time.Minute {
		t.Errorf("onset %s", ready.Onset)
	}
	if len(ready.Scope.Models) != 1 || ready.Scope.Models[0] != "chat" {
		t.Errorf("scope %+v, want chat only", ready.Scope)
	}
	if r := e.get(path+"?version=1", &ready); r.status != http.StatusOK || ready.Version != 1 {
		t.Errorf("?version=1: %d %s", r.status, r.body)
	}
	for q, want := range map[string]int{"?version=x": 400, "?version=9": 404} {
		if r := e.do(request{method: "GET", path: path + q, token: e.read}); r.status != want {
			t.Errorf("%s: %d, want %d", q, r.status, want)
		}
	}
	if r := e.do(request{method: "GET", path: "/api/v1/incidents/999/analysis", token: e.read}); r.status != http.StatusNotFound {
		t.Errorf("unknown incident: %d", r.status)
	}
	if r := e.do(request{method: "GET", path: path}); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.status)
	}
}

func TestSpikesAPI(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	e.writeSpikeCurves()
	q := url.Values{"from": {curveT0.Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)}}
	var got wire.SpikeList
	if r := e.get("/api/v1/spikes?"+q.Encode(), &got); r.status != http.StatusOK {
		t.Fatalf("spikes: %d %s", r.status, r.body)
	}
	if len(got.Spikes) != 1 || got.Spikes[0].Scope.Model != "chat" || got.Spikes[0].Role != correlate.RoleLatencyP99 {
		t.Fatalf("spikes %+v, want one P99 spike on chat", got.Spikes)
	}
	s := got.Spikes[0]
	if d := s.Onset.Sub(curveT0.Add(100 * time.Minute)); d.Abs() > 30*time.Second || s.DetectedAt.Before(s.Onset) || s.Baseline <= 0 || s.PeakValue < 3*s.Baseline {
		t.Errorf("spike %+v", s)
	}
	// Filters and an onset range that excludes it.
	for _, tc := range []struct {
		q    url.Values
		want int
	}{
		{url.Values{"from": {curveT0.Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)}, "model": {"vision"}}, 0},
		{url.Values{"from": {curveT0.Add(110 * time.Minute).Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)}}, 0},
		{url.Values{"from": {fmt.Sprint(curveT0.Unix())}, "to": {fmt.Sprint(curveT0.Add(2 * time.Hour).Unix())}, "direction": {"both"}}, 1},
	} {
		got.Spikes = nil
		if r := e.get("/api/v1/spikes?"+tc.q.Encode(), &got); r.status != http.StatusOK || len(got.Spikes) != tc.want {
			t.Errorf("%s: %d spikes (%d), want %d", tc.q.Encode(), len(got.Spikes), r.status, tc.want)
		}
	}
	for _, bad := range []string{
		"to=2026-03-02T08:00:00Z",
		"from=2026-03-02T08:00:00Z&to=2026-03-02T06:00:00Z",
		"from=yesterday&to=2026-03-02T08:00:00Z",
		"from=2026-03-02T06:00:00Z&to=2026-03-02T08:00:00Z&direction=sideways",
		"from=2026-03-02T06:00:00Z&to=2026-03-02T08:00:00Z&level=galaxy",
		"from=2026-03-02T06:00:00Z&to=2026-03-02T08:00:00Z&step=abc",
	} {
		if r := e.do(request{method: "GET", path: "/api/v1/spikes?" + bad, token: e.read}); r.status != http.StatusBadRequest || r.err.Field == "" {
			t.Errorf("%s: %d %s, want 400 naming the field", bad, r.status, r.body)
		}
	}
	// Ad-hoc PromQL needs a Prometheus; this server has none.
	if r := e.do(request{method: "GET", path: "/api/v1/spikes?" + q.Encode() + "&query=up", token: e.read}); r.status != http.StatusServiceUnavailable {
		t.Errorf("query without Prometheus: %d %s", r.status, r.body)
	}
}

func TestTimelineHasSpikes(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	e.writeSpikeCurves()
	q := url.Values{"from": {curveT0.Add(time.Hour).Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)}}
	var tl wire.Timeline
	if r := e.get("/api/v1/timeline?"+q.Encode(), &tl); r.status != http.StatusOK {
		t.Fatalf("timeline: %d %s", r.status, r.body)
	}
	if len(tl.Curves) != 2 || len(tl.Spikes) != 1 || tl.Spikes[0].Scope.Model != "chat" {
		t.Fatalf("timeline has %d curves and spikes %+v, want 2 and chat's spike", len(tl.Curves), tl.Spikes)
	}
}

// A newer version that failed (a database blip, a restart mid-way) does
// not hide the last good one: the API serves it, saying the newer one
// failed. A resolved incident is not computed again, and read "failed"
// for good while a ready result existed.
func TestAnalysisAfterAFailedVersionServesTheLastGoodOne(t *testing.T) {
	e := newUIEnv(t)
	ctx := t.Context()
	v, err := e.st.StartAnalysis(ctx, e.id, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishAnalysis(ctx, e.id, v, nil, "conn reset"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status  string `json:"status"`
		Version int    `json:"version"`
		Error   string `json:"error"`
		Causes  []any  `json:"causes"`
	}
	if r := e.get(fmt.Sprintf("/api/v1/incidents/%d/analysis", e.id), &got); r.status != 200 {
		t.Fatalf("analysis: %d", r.status)
	}
	if got.Status != "ready" || got.Version != v-1 || len(got.Causes) == 0 || !strings.Contains(got.Error, fmt.Sprintf("version %d failed: conn reset", v)) {
		t.Errorf("after a failed version: %+v", got)
	}
}
