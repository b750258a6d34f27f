package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/vmtest"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/wire"
)

// TestVictoriaMetrics: VictoriaMetrics (single node, Debian's package)
// serves a simulated fleet through the Prometheus query API; `waterline
// pull` stores its curves, the spikes of the stored curves show the
// injected incident, and GET /api/v1/spikes?query= finds it in PromQL
// VictoriaMetrics evaluates.
func TestVictoriaMetrics(t *testing.T) {
	t.Parallel()
	// Real time: VictoriaMetrics reads the real clock (it refuses data
	// too far in its future), so the fleet lies in the last two hours.
	start := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	f, err := sim.New(sim.Options{Seed: 4, Scenario: sim.Release, Start: start, Duration: 90 * time.Minute, Onset: 60 * time.Minute,
		Models: 2, ReplicasPerModel: 2, Nodes: 3, Tenants: 4, TrafficScale: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	var om bytes.Buffer
	if err := f.WriteOpenMetrics(&om, nil); err != nil {
		t.Fatal(err)
	}
	vm := vmtest.Run(t, &om)
	truth, desc := f.Truth(), f.Description()

	dbURL := storetest.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": dbURL, "PROMETHEUS_URL": vm.URL}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"pull", "--from", desc.Start.Format(time.RFC3339), "--to", desc.End.Format(time.RFC3339)},
		envMap(env), io.Discard, &stderr); err != nil {
		t.Fatalf("waterline pull from VictoriaMetrics: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "pulled ") {
		t.Fatalf("no summary:\n%s", stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))

	srv := startServe(t, dbURL, "PROMETHEUS_URL", vm.URL)
	get := func(q url.Values) wire.SpikeList {
		t.Helper()
		code, raw := srv.spikes(t, q)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/spikes?%s: %d %s", q.Encode(), code, raw)
		}
		var l wire.SpikeList
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	onset := *truth.Onset
	near := func(at time.Time) bool { d := at.Sub(onset); return d >= -5*time.Minute && d <= 5*time.Minute }
	q := url.Values{"from": {desc.Start.Format(time.RFC3339)}, "to": {desc.End.Format(time.RFC3339)}}

	// The stored curves (pulled from VictoriaMetrics) show the spike.
	found := false
	for _, sp := range get(q).Spikes {
		if sp.Scope.Model == truth.Target.Model && near(sp.Onset) {
			found = true
		}
	}
	if !found {
		t.Errorf("no spike of %s within 5 minutes of %s in the curves pulled from VictoriaMetrics", truth.Target.Model, onset.Format(time.TimeOnly))
	}

	// Ad-hoc PromQL, evaluated by VictoriaMetrics.
	q.Set("query", `histogram_quantile(0.99, sum by (model, le) (rate(inference_request_duration_seconds_bucket[1m])))`)
	found = false
	adhoc := get(q)
	for _, sp := range adhoc.Spikes {
		if (sp.Labels["model"] == truth.Target.Model || strings.Contains(sp.Series, `model="`+truth.Target.Model+`"`)) && near(sp.Onset) {
			found = true
		}
	}
	if !found {
		t.Errorf("ad-hoc query: no spike of %s near %s: %+v", truth.Target.Model, onset.Format(time.TimeOnly), adhoc.Spikes)
	}
}

// An ad-hoc query VictoriaMetrics refuses for its limits (its 422,
// errorType "422", naming -search.maxSamplesPerQuery) is the client's to
// narrow: a 400 naming the query, as Prometheus' execution errors are, not
// a 502 to retry.
func TestVictoriaMetricsAdHocLimitIsBadQuery(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	var om strings.Builder
	om.WriteString("# TYPE p99_ms gauge\n")
	for m := range 10 {
		for i := range 480 {
			fmt.Fprintf(&om, "p99_ms{model=\"m-%d\"} %d %d\n", m, 100+i%7, start.Add(time.Duration(i)*15*time.Second).Unix())
		}
	}
	om.WriteString("# EOF\n")
	vm := vmtest.StartWith(t, "-search.maxSamplesPerQuery=2000")
	vm.Import(t, strings.NewReader(om.String()))
	srv := startServe(t, storetest.NewDatabase(t), "PROMETHEUS_URL", vm.URL)
	q := url.Values{"from": {start.Add(time.Hour).Format(time.RFC3339)}, "to": {start.Add(2 * time.Hour).Format(time.RFC3339)}, "query": {"p99_ms"}}
	code, raw := srv.spikes(t, q)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	if code != http.StatusBadRequest || body["field"] != "query" || !strings.Contains(string(raw), "maxSamplesPerQuery") {
		t.Errorf("a query over VictoriaMetrics' limits: %d %s, want 400 naming the query and the limit", code, raw)
	}
}
