package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestSpikesOnAdHocPromQL: GET /api/v1/spikes?query= evaluates PromQL in a
// real Prometheus and finds the spike in its result; PromQL that
// Prometheus rejects is the client's mistake (400 naming the query).
func TestSpikesOnAdHocPromQL(t *testing.T) {
	t.Parallel()
	// The server runs on the real clock, as in production: the curve
	// lies two days back from it, whatever today's date.
	start := time.Now().UTC().Truncate(time.Hour).Add(-48 * time.Hour)
	var om strings.Builder
	om.WriteString("# HELP gateway_p99_ms Gateway P99.\n# TYPE gateway_p99_ms gauge\n")
	for i := 0; i < 480; i++ { // 2 h at 15 s; ×3 from 07:40 to 07:50
		v := 100 + float64(i%7)
		if i >= 400 && i < 440 {
			v *= 3
		}
		fmt.Fprintf(&om, "gateway_p99_ms{route=\"/v1/chat\"} %g %d\n", v, start.Add(time.Duration(i)*15*time.Second).Unix())
	}
	// 1,001 series of a few points: one more than an ad-hoc query may bring.
	om.WriteString("# HELP many One of many.\n# TYPE many gauge\n")
	for i := 0; i <= 1000; i++ {
		for _, at := range []time.Duration{70 * time.Minute, 100 * time.Minute} {
			fmt.Fprintf(&om, "many{i=\"%d\"} 1 %d\n", i, start.Add(at).Unix())
		}
	}
	om.WriteString("# EOF\n")
	prom := promtest.Run(t, strings.NewReader(om.String()))
	srv := startServe(t, storetest.NewDatabase(t), "PROMETHEUS_URL", prom.URL)

	get := func(q url.Values) (int, map[string]any) {
		code, raw := srv.spikes(t, q)
		var v map[string]any
		_ = json.Unmarshal(raw, &v)
		return code, v
	}
	q := url.Values{"from": {start.Add(time.Hour).Format(time.RFC3339)}, "to": {start.Add(2 * time.Hour).Format(time.RFC3339)},
		"query": {`gateway_p99_ms`}}
	code, body := get(q)
	spikes, _ := body["spikes"].([]any)
	if code != http.StatusOK || len(spikes) != 1 {
		t.Fatalf("ad-hoc spikes: %d %v", code, body)
	}
	sp := spikes[0].(map[string]any)
	if sp["onset"] != start.Add(100*time.Minute).Format(time.RFC3339) || !strings.Contains(fmt.Sprint(sp["series"]), `route="/v1/chat"`) {
		t.Errorf("spike %v", sp)
	}
	q.Set("query", "rate(gateway_p99_ms[5m]")
	if code, body = get(q); code != http.StatusBadRequest || body["field"] != "query" {
		t.Errorf("bad PromQL: %d %v, want 400 naming the query", code, body)
	}
	// An expression is the client's: one that returns every series
	// Prometheus has is refused, naming the query, not joined in memory.
	q.Set("query", "many")
	if code, body = get(q); code != http.StatusBadRequest || body["field"] != "query" || !strings.Contains(fmt.Sprint(body["error"]), "more than 1000 series") {
		t.Errorf("a query of 1,001 series: %d %v, want 400 naming the query", code, body)
	}
	// PromQL that fails as Prometheus runs it (422 execution: a match
	// that is not one-to-one) is the client's too, not a 502 to retry.
	q.Set("query", "gateway_p99_ms * on() many")
	if code, body = get(q); code != http.StatusBadRequest || body["field"] != "query" {
		t.Errorf("a failing match: %d %v, want 400 naming the query", code, body)
	}
	q.Set("query", "gateway_p99_ms")
	// 0.1 s over two hours (with the baseline's history) is 72,000 points:
	// more than Prometheus answers at once, so the server splits the query.
	q.Set("step", "0.1s")
	if code, body = get(q); code != http.StatusOK || len(body["spikes"].([]any)) != 1 {
		t.Errorf("a window of 72,000 steps: %d %v, want 200 with the spike (queries split)", code, body)
	}
	q.Set("step", "30s")
	q.Set("sensitivity", "extreme")
	if code, body = get(q); code != http.StatusBadRequest || body["field"] != "sensitivity" {
		t.Errorf("unknown sensitivity: %d %v, want 400 naming it", code, body)
	}
	q.Del("sensitivity")
	q.Set("step", "0.01s")
	if code, body = get(q); code != http.StatusBadRequest || body["field"] != "step" {
		t.Errorf("too many points: %d %v, want 400 naming the step", code, body)
	}
}
