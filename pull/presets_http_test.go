package pull

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The generic preset for plain HTTP services: OTel semantic-convention
// server and client duration histograms as Prometheus exports them.
func TestHTTPPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("http_server_request_duration_seconds", "histogram")
	type series struct {
		job, instance, version, code string
		perSec                       float64 // requests per second
		fastShare                    float64 // share answered under 50 ms (the rest under 250 ms)
	}
	all := []series{
		{"shop/checkout", "10.0.0.1:8080", "1.4.0", "200", 9, 0.9},
		{"shop/checkout", "10.0.0.1:8080", "1.4.0", "500", 1, 0.9},
		{"shop/checkout", "10.0.0.2:8080", "1.4.0", "200", 10, 0.9},
		{"shop/catalog", "10.0.0.3:8080", "", "200", 20, 1},
	}
	for _, s := range all {
		lb := fmt.Sprintf(`job=%q,instance=%q,http_request_method="GET",http_route="/x",http_response_status_code=%q`, s.job, s.instance, s.code)
		if s.version != "" {
			lb += fmt.Sprintf(`,service_version=%q`, s.version)
		}
		for _, le := range []struct {
			le    string
			share float64
		}{{"0.05", s.fastShare}, {"0.25", 1}, {"+Inf", 1}} {
			o.counter(`http_server_request_duration_seconds_bucket{`+lb+`,le="`+le.le+`"}`, s.perSec*le.share)
		}
		o.counter("http_server_request_duration_seconds_count{"+lb+"}", s.perSec)
		o.counter("http_server_request_duration_seconds_sum{"+lb+"}", s.perSec*0.04)
	}
	o.family("http_client_request_duration_seconds", "histogram")
	client := `job="shop/checkout",instance="10.0.0.1:8080",server_address="payments.internal",http_request_method="POST"`
	o.counter(`http_client_request_duration_seconds_bucket{`+client+`,le="+Inf"}`, 5)
	o.counter("http_client_request_duration_seconds_count{"+client+"}", 5)
	o.counter("http_client_request_duration_seconds_sum{"+client+"}", 5*0.03)
	got := pullPreset(t, o.run(t), "presets: [http]\n", o.steps)
	rep := "model=shop/checkout version=1.4.0 replica=10.0.0.1:8080"
	checkCurves(t, got, map[string]float64{
		"qps|model|model=shop/checkout":                                           20,
		"qps|model|model=shop/catalog":                                            20,
		"qps|version|model=shop/checkout version=1.4.0":                           20,
		"qps|replica|" + rep:                                                      10,
		"error_rate|model|model=shop/checkout":                                    0.05,
		"error_rate|model|model=shop/catalog":                                     0,
		"error_rate|replica|" + rep:                                               0.1,
		"latency_p50|model|model=shop/catalog":                                    25,
		"latency_p99|model|model=shop/checkout":                                   230,
		"latency_p99|replica|" + rep:                                              230,
		"stage_time|model|model=shop/checkout|stage=downstream/payments.internal": 30,
	})
}

// Services on OpenTelemetry's HTTP conventions before v1.20:
// http.server.duration in ms, http_status_code, net_peer_name. Detected
// on their own, and read in ms (no ×1000).
func TestHTTPLegacyPreset(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("http_server_duration_milliseconds", "histogram")
	for _, s := range []struct {
		instance, code string
		perSec         float64
	}{{"10.0.0.1:8080", "200", 9}, {"10.0.0.1:8080", "500", 1}, {"10.0.0.2:8080", "200", 10}} {
		lb := fmt.Sprintf(`job="shop/checkout",instance=%q,service_version="1.4.0",http_method="GET",http_route="/x",http_status_code=%q`, s.instance, s.code)
		for _, le := range []struct {
			le    string
			share float64
		}{{"50", 0.9}, {"250", 1}, {"+Inf", 1}} {
			o.counter(`http_server_duration_milliseconds_bucket{`+lb+`,le="`+le.le+`"}`, s.perSec*le.share)
		}
		o.counter("http_server_duration_milliseconds_count{"+lb+"}", s.perSec)
		o.counter("http_server_duration_milliseconds_sum{"+lb+"}", s.perSec*40)
	}
	o.family("http_client_duration_milliseconds", "histogram")
	client := `job="shop/checkout",instance="10.0.0.1:8080",net_peer_name="payments.internal",http_method="POST"`
	o.counter(`http_client_duration_milliseconds_bucket{`+client+`,le="+Inf"}`, 5)
	o.counter("http_client_duration_milliseconds_count{"+client+"}", 5)
	o.counter("http_client_duration_milliseconds_sum{"+client+"}", 5*30)
	prom := o.run(t)
	cfg, err := ParseConfig("test.yaml", []byte("presets: [auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	det, found, err := cfg.DetectPresets(context.Background(), Backend{URL: prom.URL}, t0.Add(39*15e9))
	if err != nil || !slices.Equal(found, []string{"http-legacy"}) || slices.Contains(det.Presets, "inference") {
		t.Errorf("detected %v (%v), presets in effect %v: want http-legacy alone", found, err, det.Presets)
	}
	// Midway between the conventions both histograms are scraped: the
	// current one is read (both presets would write the same curves).
	both := &omBuilder{steps: 4}
	both.family("http_server_duration_milliseconds", "histogram")
	both.counter(`http_server_duration_milliseconds_bucket{job="a",le="+Inf"}`, 4)
	both.family("http_server_request_duration_seconds", "histogram")
	both.counter(`http_server_request_duration_seconds_bucket{job="a",le="+Inf"}`, 4)
	if _, found, err := cfg.DetectPresets(context.Background(), Backend{URL: both.run(t).URL}, t0.Add(45e9)); err != nil || !slices.Equal(found, []string{"http"}) {
		t.Errorf("both conventions: detected %v (%v), want http", found, err)
	}
	got := pullPreset(t, prom, "presets: [http-legacy]\n", o.steps)
	rep := "model=shop/checkout version=1.4.0 replica=10.0.0.1:8080"
	checkCurves(t, got, map[string]float64{
		"qps|model|model=shop/checkout":                                           20,
		"qps|replica|" + rep:                                                      10,
		"error_rate|model|model=shop/checkout":                                    0.05,
		"error_rate|replica|" + rep:                                               0.1,
		"latency_p99|model|model=shop/checkout":                                   230,
		"latency_p99|replica|" + rep:                                              230,
		"stage_time|model|model=shop/checkout|stage=downstream/payments.internal": 30,
	})
}

// The legacy conventions behind a Collector's Prometheus exporter scraped
// without honor_labels, as "http": the services are exported_job, their
// instances exported_instance, not one model named after the collector.
func TestHTTPLegacyPresetCollectorWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("http_server_duration_milliseconds", "histogram")
	for _, s := range []struct {
		job, instance string
		perSec        float64
	}{{"shop/checkout", "checkout-1", 10}, {"shop/catalog", "catalog-1", 20}} {
		lb := fmt.Sprintf(`job="otel-collector",instance="10.1.0.5:8889",exported_job=%q,exported_instance=%q,service_version="1.0",http_method="GET",http_status_code="200"`, s.job, s.instance)
		for _, le := range []string{"50", "+Inf"} {
			o.counter(`http_server_duration_milliseconds_bucket{`+lb+`,le="`+le+`"}`, s.perSec)
		}
		o.counter("http_server_duration_milliseconds_count{"+lb+"}", s.perSec)
		o.counter("http_server_duration_milliseconds_sum{"+lb+"}", s.perSec*20)
	}
	got := pullPreset(t, o.run(t), "presets: [http-legacy]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"qps|model|model=shop/checkout":                                         10,
		"qps|model|model=shop/catalog":                                          20,
		"qps|replica|model=shop/catalog version=1.0 replica=catalog-1":          20,
		"error_rate|replica|model=shop/checkout version=1.0 replica=checkout-1": 0,
	})
	if c, merged := got["qps|model|model=otel-collector"]; merged {
		t.Errorf("the services behind the collector merged into one model named after its scrape job: %v", c)
	}
}

// Behind two replicas of an OpenTelemetry Collector scraped without
// honor_labels, beside a service Prometheus scrapes itself: the model is
// exported_job where there is one, else job; the replica exported_instance
// where there is one, else instance. A service instance that both
// collector replicas export is one replica (its rates summed), not two
// named after the collectors, and the query does not fail on it.
func TestHTTPPresetCollectorReplicasWithoutHonorLabels(t *testing.T) {
	o := &omBuilder{steps: 40}
	o.family("http_server_request_duration_seconds", "histogram")
	for _, s := range []struct {
		labels, code string
		perSec       float64
	}{
		{`job="otel-collector",instance="10.1.0.5:8889",exported_job="shop/checkout",exported_instance="checkout-1"`, "200", 4},
		{`job="otel-collector",instance="10.1.0.6:8889",exported_job="shop/checkout",exported_instance="checkout-1"`, "200", 5},
		{`job="otel-collector",instance="10.1.0.6:8889",exported_job="shop/checkout",exported_instance="checkout-1"`, "500", 1},
		{`job="otel-collector",instance="10.1.0.5:8889",exported_job="shop/checkout",exported_instance="checkout-2"`, "200", 10},
		{`job="shop/search",instance="10.0.0.9:8080"`, "200", 7},
	} {
		lb := s.labels + `,service_version="2.0",http_request_method="GET",http_route="/x",http_response_status_code="` + s.code + `"`
		for _, le := range []string{"0.05", "0.25", "+Inf"} {
			o.counter(`http_server_request_duration_seconds_bucket{`+lb+`,le="`+le+`"}`, s.perSec)
		}
		o.counter("http_server_request_duration_seconds_count{"+lb+"}", s.perSec)
		o.counter("http_server_request_duration_seconds_sum{"+lb+"}", s.perSec*0.02)
	}
	o.family("http_client_request_duration_seconds", "histogram")
	client := `job="otel-collector",instance="10.1.0.5:8889",exported_job="shop/checkout",exported_instance="checkout-2",server_address="payments.internal"`
	o.counter(`http_client_request_duration_seconds_bucket{`+client+`,le="+Inf"}`, 5)
	o.counter("http_client_request_duration_seconds_count{"+client+"}", 5)
	o.counter("http_client_request_duration_seconds_sum{"+client+"}", 5*0.03)
	got := pullPreset(t, o.run(t), "presets: [http]\n", o.steps)
	checkCurves(t, got, map[string]float64{
		"qps|model|model=shop/checkout":                                           20,
		"qps|model|model=shop/search":                                             7,
		"qps|version|model=shop/checkout version=2.0":                             20,
		"qps|replica|model=shop/checkout version=2.0 replica=checkout-1":          10,
		"qps|replica|model=shop/checkout version=2.0 replica=checkout-2":          10,
		"qps|replica|model=shop/search version=2.0 replica=10.0.0.9:8080":         7,
		"error_rate|model|model=shop/checkout":                                    0.05,
		"error_rate|replica|model=shop/checkout version=2.0 replica=checkout-1":   0.1,
		"error_rate|replica|model=shop/checkout version=2.0 replica=checkout-2":   0,
		"latency_p50|model|model=shop/checkout":                                   25,
		"latency_p99|replica|model=shop/checkout version=2.0 replica=checkout-1":  49.5,
		"stage_time|model|model=shop/checkout|stage=downstream/payments.internal": 30,
	})
	for k := range got {
		if strings.Contains(k, "otel-collector") || strings.Contains(k, ":8889") {
			t.Errorf("curve %s is named after the collector", k)
		}
	}
}
