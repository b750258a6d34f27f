package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/wire"
)

// adhocServer is a server whose ad-hoc PromQL answers with series, and a
// read token for it.
func adhocServer(t *testing.T, series []api.LabeledSeries) (string, string) {
	t.Helper()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	now := func() time.Time { return testNow }
	srv := web.NewServer(web.Config{PublicURL: "http://waterline.test", RequestTimeout: time.Minute,
		IngestMaxAge: 365 * 24 * time.Hour, IngestMaxFuture: time.Hour, IngestMaxBytes: 1 << 20, IngestMaxLines: 1000}, web.Deps{
		Store: st, Incidents: incident.New(st, incident.Options{Log: log, Now: now}), Registry: prometheus.NewRegistry(),
		Gatherer: prometheus.NewRegistry(), Log: log, Now: now,
		Ready: func(ctx context.Context) error { return pool.Ping(ctx) },
		QueryRange: func(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]api.LabeledSeries, error) {
			var out []api.LabeledSeries
			for _, s := range series {
				c := api.LabeledSeries{Labels: s.Labels}
				for _, p := range s.Points {
					if t := time.UnixMilli(p.T); !t.Before(start) && !t.After(end) {
						c.Points = append(c.Points, p)
					}
				}
				out = append(out, c)
			}
			return out, nil
		},
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	tok, _, err := st.CreateToken(context.Background(), "read", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	return hs.URL, tok
}

// stepSeries is a flat series at 15 s over the 2 days before testNow with
// a ×5 rise over its last 20 minutes.
func stepSeries(labels map[string]string, base float64) api.LabeledSeries {
	s := api.LabeledSeries{Labels: labels}
	from := testNow.Add(-48 * time.Hour)
	for t := from; t.Before(testNow); t = t.Add(15 * time.Second) {
		v := base * (1 + 0.02*float64(t.Unix()/15%7))
		if t.After(testNow.Add(-20 * time.Minute)) {
			v *= 5
		}
		s.Points = append(s.Points, correlate.Point{T: t.UnixMilli(), V: v})
	}
	return s
}

func getJSON(t *testing.T, base, tok, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// With query=, the ad-hoc path never read model=, version=, replica=,
// node= or level=: a bot asking "did vision-xl's QPS drop?" with
// query=…&model=vision-xl was answered with chat-7b's drop, with a 200.
// They filter stored curves; with query= they are a 400 saying to select
// the series in the PromQL.
func TestAdhocSpikesRefuseTheStoredCurvesFilters(t *testing.T) {
	t.Parallel()
	base, tok := adhocServer(t, []api.LabeledSeries{
		stepSeries(map[string]string{"model": "chat-7b"}, 100),
		stepSeries(map[string]string{"model": "vision-xl"}, 100),
	})
	q := url.Values{"from": {testNow.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)},
		"query": {"sum by (model) (rate(x[1m]))"}}
	status, body := getJSON(t, base, tok, "/api/v1/spikes?"+q.Encode())
	var got wire.SpikeList
	if err := json.Unmarshal(body, &got); status != 200 || err != nil || len(got.Spikes) != 2 {
		t.Fatalf("spikes: %d %s; want both models' (fixture)", status, body)
	}
	q.Set("model", "vision-xl")
	status, body = getJSON(t, base, tok, "/api/v1/spikes?"+q.Encode())
	var e wire.Error
	if err := json.Unmarshal(body, &e); status != 400 || err != nil || e.Field != "model" {
		t.Errorf("query= with model=vision-xl: %d %s; want a 400 naming model (the PromQL selects the series)", status, body)
	}
}

// GET /api/v1/spikes judged version=, replica= and node= at level=model
// unless level= said otherwise, and model-level curves carry no version,
// replica or node: the filter matched no curve and the answer was a 200
// with no spikes — "nothing happened to chat v3" while its P99 quadrupled.
// The filter now implies its level; level=model with one is a 400.
func TestSpikesVersionFilterImpliesItsLevel(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	e.writeSpikeCurves() // chat's model-level P99 quadruples 100–115 min in
	// The same curve at version level: chat v3.
	rng := rand.New(rand.NewPCG(2, 2))
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelVersion, Scope: correlate.Scope{Model: "chat", Version: "v3"}}
	for ts := curveT0; ts.Before(curveT0.Add(2 * time.Hour)); ts = ts.Add(15 * time.Second) {
		v := 200 * math.Exp(0.05*rng.NormFloat64())
		if !ts.Before(curveT0.Add(100*time.Minute)) && ts.Before(curveT0.Add(115*time.Minute)) {
			v *= 4
		}
		c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v})
	}
	storetest.WriteCurves(t, e.st, []correlate.Curve{c})
	q := url.Values{"from": {curveT0.Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)},
		"model": {"chat"}, "version": {"v3"}}
	var withLevel wire.SpikeList
	ql := url.Values{}
	for k, v := range q {
		ql[k] = v
	}
	ql.Set("level", "version")
	if r := e.get("/api/v1/spikes?"+ql.Encode(), &withLevel); r.status != 200 || len(withLevel.Spikes) == 0 {
		t.Fatalf("level=version (fixture): %d, %d spikes", r.status, len(withLevel.Spikes))
	}
	var got wire.SpikeList
	if r := e.get("/api/v1/spikes?"+q.Encode(), &got); r.status != 200 || len(got.Spikes) != len(withLevel.Spikes) {
		t.Errorf("model=chat&version=v3 (no level): %d with %d spikes, while level=version finds %d for the same version", r.status, len(got.Spikes), len(withLevel.Spikes))
	}
	q.Set("level", "model")
	if r := e.get("/api/v1/spikes?"+q.Encode(), nil); r.status != 400 || r.err.Field != "version" {
		t.Errorf("level=model&version=v3: %d %s; want a 400 naming version", r.status, r.body)
	}
}

// A histogram_quantile whose quantile sits in the +Inf bucket is answered
// with the highest finite bucket bound: an ad-hoc P99 flat at exactly
// 10000 ms through an incident peaked at 10 s or more. Its spike says so
// (peak_at_ceiling); the same curve of another expression is a count or
// a rate, and capped at nothing.
func TestAdhocQuantileSpikeAtCeiling(t *testing.T) {
	t.Parallel()
	s := api.LabeledSeries{Labels: map[string]string{"model": "chat-7b"}}
	for ts := testNow.Add(-48 * time.Hour); ts.Before(testNow); ts = ts.Add(15 * time.Second) {
		v := 400 * (1 + 0.02*float64(ts.Unix()/15%7))
		if ts.After(testNow.Add(-20 * time.Minute)) {
			v = 10 * 1000.0
		}
		s.Points = append(s.Points, correlate.Point{T: ts.UnixMilli(), V: v})
	}
	base, tok := adhocServer(t, []api.LabeledSeries{s})
	spikes := func(query string) []map[string]any {
		q := url.Values{"from": {testNow.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}, "query": {query}}
		status, body := getJSON(t, base, tok, "/api/v1/spikes?"+q.Encode())
		var got struct {
			Spikes []map[string]any `json:"spikes"`
		}
		if err := json.Unmarshal(body, &got); status != 200 || err != nil || len(got.Spikes) != 1 {
			t.Fatalf("%s: %d %s; want one spike", query, status, body)
		}
		return got.Spikes
	}
	got := spikes("histogram_quantile(0.99, sum by (le, model) (rate(x_bucket[1m]))) * 1000")
	if got[0]["peak_at_ceiling"] != true || got[0]["peak_value"] != 10000.0 {
		t.Errorf("P99 flat at 10000 ms: %v; want peak_value 10000 with peak_at_ceiling", got[0])
	}
	got = spikes("sum by (model) (rate(x[1m]))")
	if _, ok := got[0]["peak_at_ceiling"]; ok {
		t.Errorf("a rate's spike: %v; want no peak_at_ceiling", got[0])
	}
}

// The stored latency quantiles are histogram_quantile's answers too: a
// stored P99 flat at exactly 10000 ms through its spike carries
// peak_at_ceiling; the same rise interpolated (moving each scrape) does
// not.
func TestStoredQuantileSpikeAtCeiling(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	rng := rand.New(rand.NewPCG(3, 3))
	var curves []correlate.Curve
	for _, m := range []string{"capped", "measured"} {
		c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: m}}
		for ts := curveT0; ts.Before(curveT0.Add(2 * time.Hour)); ts = ts.Add(15 * time.Second) {
			v := 400 * math.Exp(0.05*rng.NormFloat64())
			if !ts.Before(curveT0.Add(100*time.Minute)) && ts.Before(curveT0.Add(115*time.Minute)) {
				v = 10 * 1000.0
				if m == "measured" {
					v = 9000 + 900*rng.Float64()
				}
			}
			c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v})
		}
		curves = append(curves, c)
	}
	storetest.WriteCurves(t, e.st, curves)
	q := url.Values{"from": {curveT0.Format(time.RFC3339)}, "to": {curveT0.Add(2 * time.Hour).Format(time.RFC3339)}}
	var got wire.SpikeList
	if r := e.get("/api/v1/spikes?"+q.Encode(), &got); r.status != 200 {
		t.Fatalf("spikes: %d %s", r.status, r.body)
	}
	seen := map[string]bool{}
	for _, s := range got.Spikes {
		seen[s.Scope.Model] = true
		if want := s.Scope.Model == "capped"; s.PeakAtCeiling != want {
			t.Errorf("%s: peak %v, peak_at_ceiling %v; want %v", s.Scope.Model, s.PeakValue, s.PeakAtCeiling, want)
		}
	}
	if !seen["capped"] || !seen["measured"] {
		t.Fatalf("spikes of %v; want both models' (fixture)", seen)
	}
}
