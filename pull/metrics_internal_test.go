package pull

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Lag is exported only for the sources this replica pulls: after losing
// the lease, its lag grew forever (a lag alert fired after every
// failover), and so did that of a source a new config dropped.
func TestPullLagOnlyForWhatThisReplicaPulls(t *testing.T) {
	now := time.Date(2026, 10, 6, 8, 0, 0, 0, time.UTC)
	m := newMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{m: m, rates: &rateWindows{}, now: func() time.Time { return now }})
	lagged := func() map[string]bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, mf := range mfs {
			if mf.GetName() == "waterline_pull_lag_seconds" {
				for _, x := range mf.GetMetric() {
					out[x.GetLabel()[0].GetValue()] = true
				}
			}
		}
		return out
	}
	m.setLeader(true)
	m.pulled("inference/latency_p99@model", now.Add(-time.Minute), now, 10)
	m.pulled("vllm/latency_p99@model", now.Add(-time.Minute), now, 10)
	if got := lagged(); len(got) != 2 {
		t.Fatalf("lag of %v", got)
	}
	m.keep([]string{"vllm/latency_p99@model"})
	if got := lagged(); len(got) != 1 || !got["vllm/latency_p99@model"] {
		t.Errorf("after the config dropped inference: lag of %v", got)
	}
	m.failed("vllm/latency_p99@model", now)
	m.setLeader(false)
	if got := lagged(); len(got) != 0 {
		t.Errorf("after losing the lease: lag of %v", got)
	}
	if v := gaugeValue(t, reg, "waterline_pull_open_gaps"); v != 0 {
		t.Errorf("open gaps %v after losing the lease", v)
	}
}

// A config that drops a source also drops its automatic rate window from
// /metrics: the window of a query no longer pulled was exported for ever.
func TestRateWindowForgottenWithItsSource(t *testing.T) {
	p := &Puller{met: newMetrics(), rates: newRateWindows()}
	p.cfg.Store(&Config{Queries: []Query{{Name: "a"}, {Name: "b"}}})
	p.rates.chosen["a"], p.rates.chosen["b"] = time.Minute, 2*time.Minute
	p.SetConfig(&Config{Queries: []Query{{Name: "b"}}})
	p.adoptNext()
	if got := p.RateWindows(); len(got) != 1 || got["b"] != 2*time.Minute {
		t.Errorf("rate windows after dropping a: %v", got)
	}
}

// Series that merge into one curve (two namespaces' pods of one name, a
// label the scope mapping drops) are counted per source on /metrics, and
// logged the first time only: they were counted and dropped unseen.
func TestMergedSeriesCounted(t *testing.T) {
	m := newMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{m: m, rates: &rateWindows{}, now: time.Now})
	if !m.mergedSeries("dcgm/gpu_util@replica", 2) || m.mergedSeries("dcgm/gpu_util@replica", 1) {
		t.Error("only a source's first merge is to be logged")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "waterline_pull_merged_series_total" {
			for _, x := range mf.GetMetric() {
				if x.GetLabel()[0].GetValue() == "dcgm/gpu_util@replica" {
					got = x.GetCounter().GetValue()
				}
			}
		}
	}
	if got != 3 {
		t.Errorf("waterline_pull_merged_series_total = %v, want 3", got)
	}
}
