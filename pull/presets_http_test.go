package pull

import (
	"fmt"
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
