package pull

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/demo/promrun"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestHTTPPresetReadsNativeHistograms: OTel's exponential histograms
// reach Prometheus as native histograms (OTLP ingestion, the Collector's
// remote write, a Prometheus scraping native histograms), and then no
// _bucket, _count or _sum series exist. The http preset read only those:
// such a fleet was not even detected, and had no curve. Here a real
// Prometheus with native histograms on scrapes a service exporting only
// native histograms (as the Collector's Prometheus exporter, scraped
// with honor_labels false: job and instance come as exported_*), and the
// preset's curves come out with the values observed.
func TestHTTPPresetReadsNativeHistograms(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	svc := prometheus.Labels{"job": "checkout", "instance": "checkout-1", "service_version": "v7"}
	server := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_server_request_duration_seconds",
		Help: "Duration of HTTP server requests.", ConstLabels: svc, NativeHistogramBucketFactor: 1.05},
		[]string{"http_route", "http_response_status_code"})
	client := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_client_request_duration_seconds",
		Help: "Duration of HTTP client requests.", ConstLabels: svc, NativeHistogramBucketFactor: 1.05},
		[]string{"server_address"})
	reg.MustRegister(server, client)
	// 92 % of requests at 50 ms and 8 % at 400 ms (P50 50, P95 and P99
	// 400); one in ten answers 500; each calls the vector store for 20 ms.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for range 4 {
				d, code := 0.050, "200"
				if rng.Float64() < 0.08 {
					d = 0.400
				}
				if rng.Float64() < 0.1 {
					code = "500"
				}
				server.WithLabelValues("/v1/checkout", code).Observe(d * (0.98 + 0.04*rng.Float64()))
				client.WithLabelValues("vector-db").Observe(0.020)
			}
		}
	}()
	exp := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer exp.Close()

	prom := promtest.New(t)
	prom.SetFlags("--enable-feature=native-histograms")
	prom.Scrape(t, time.Second, []promrun.Target{{Job: "otel-collector", Addr: strings.TrimPrefix(exp.URL, "http://"), Path: "/metrics"}})
	prom.Start(t)
	began := time.Now()
	time.Sleep(25 * time.Second)
	now := time.Now()

	// Only native histograms are stored: no classic series to read.
	b := Backend{URL: prom.URL}
	pr, err := newProm(b)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := pr.instant(ctx, "check", `count({__name__=~"http_server_request_duration_seconds_(bucket|count|sum)"})`, now); err != nil || len(v) != 0 {
		t.Fatalf("classic series: %v, %v; want none", v, err)
	}

	// The request rate, as observed: the generator runs as fast as the
	// machine lets it.
	ref, err := pr.instant(ctx, "check", `sum(histogram_count(rate(http_server_request_duration_seconds[1m])))`, now)
	if err != nil || len(ref) != 1 || ref[0].Value < 50 {
		t.Fatalf("request rate: %v, %v", ref, err)
	}
	rps := float64(ref[0].Value)
	auto, err := ParseConfig("(test)", []byte("presets: [auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, found, err := auto.DetectPresets(ctx, b, now)
	if err != nil || !slices.Contains(found, "http") {
		t.Fatalf("detected %v, %v; want http", found, err)
	}
	want := map[correlate.Role][2]float64{ // role at model level: value, tolerance
		correlate.RoleLatencyP50: {50, 5},
		correlate.RoleLatencyP95: {400, 40},
		correlate.RoleLatencyP99: {400, 40},
		correlate.RoleQPS:        {rps, rps / 100},
		correlate.RoleErrorRate:  {0.1, 0.03},
		correlate.RoleStageTime:  {20, 1},
	}
	for _, q := range cfg.Queries {
		w, ok := want[q.Role]
		if !ok || q.Level != correlate.LevelModel || !strings.Contains(q.Expr, "http_") {
			continue
		}
		v, err := pr.instant(ctx, q.Name, q.Expr, now)
		if err != nil {
			t.Fatalf("%s: %v", q.Name, err)
		}
		if len(v) != 1 || string(v[0].Metric["job"]) != "checkout" || math.Abs(float64(v[0].Value)-w[0]) > w[1] {
			t.Errorf("%s = %v; want checkout at %v ± %v", q.Name, v, w[0], w[1])
		}
		delete(want, q.Role)
	}
	if len(want) > 0 {
		t.Errorf("no model-level http query for %v", want)
	}

	// The pull itself stores the curves, replicas and versions included.
	st := storetest.New(t)
	p, err := New(cfg, b, st, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.History(ctx, began, now, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		role  correlate.Role
		scope correlate.Scope
	}{
		{correlate.RoleLatencyP99, correlate.Scope{Model: "checkout"}},
		{correlate.RoleLatencyP99, correlate.Scope{Model: "checkout", Version: "v7", Replica: "checkout-1"}},
		{correlate.RoleQPS, correlate.Scope{Model: "checkout", Version: "v7"}},
		{correlate.RoleErrorRate, correlate.Scope{Model: "checkout", Replica: "checkout-1"}},
	} {
		cs, err := st.Curves(ctx, store.CurveFilter{From: began, To: now, Roles: []correlate.Role{c.role}, Scope: c.scope})
		if err != nil || len(cs) == 0 || len(cs[0].Points) == 0 {
			t.Errorf("%s at %+v: %d curves, %v", c.role, c.scope, len(cs), err)
		}
	}
}
