package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/web/api"
)

// BenchmarkSpikesPrometheus is the detector's speed with its data coming
// from a real Prometheus, as GET /api/v1/spikes?query= runs it: 50 models
// × P50/P95/P99 over 24 h at 15 s, plus the 50 h of history the baseline
// reads before the window (150 series × 17,760 points). It reports apart:
//   - prom_s: the range queries alone, in pieces of at most 11,000 steps
//     as the endpoint splits them, answers decoded into points;
//   - prom_eval_s: of that, Prometheus' own evaluation (its stats), the
//     rest being the JSON answer's encoding, transfer and decoding;
//   - prom_gzip_s: the same queries with pull.Options.Compression, as
//     WATERLINE_PROMETHEUS_COMPRESSION asks (Prometheus gzips the JSON);
//   - detect_s: the detector's Go time on what came back (the issue's
//     ≤ 1 s; correlate's BenchmarkDetectSpikes50Models24h is the same on
//     generated points);
//   - endpoint_s: the three HTTP requests, end to end.
//
// Setting up backfills 2.7 M samples with promtool (about a minute).
func BenchmarkSpikesPrometheus(b *testing.B) {
	const (
		models = 50
		step   = 15 * time.Second
	)
	quantiles := []string{"0.5", "0.95", "0.99"}
	opt := correlate.SpikeOptions{Step: step, Direction: correlate.Up}
	// The judged day ends at the last whole hour; Prometheus serves what
	// lies within its retention of the real clock.
	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-24 * time.Hour)
	start := from.Add(-opt.History())
	n := int(to.Sub(start)/step) + 1
	// value is one model's quantile at point i: a daily swing and
	// log-normal noise, ×4 for 25 min on every tenth model.
	rng := rand.New(rand.NewPCG(1, 1))
	noise := make([]float64, n)
	for i := range noise {
		noise[i] = math.Exp(0.1 * rng.NormFloat64())
	}
	value := func(m, q, i int) float64 {
		v := 100 * float64(q+1) * (1 + 0.2*math.Sin(2*math.Pi*float64(i)/5760)) * noise[(i+977*m+313*q)%n]
		if m%10 == 0 && i > n-3000 && i < n-2900 {
			v *= 4
		}
		return v
	}
	prom := promtest.New(b)
	prom.BackfillWindows(b, start, to.Add(step), func(w io.Writer, lo, hi time.Time) error {
		if _, err := io.WriteString(w, "# TYPE bench_latency_ms gauge\n"); err != nil {
			return err
		}
		for m := range models {
			for q, qs := range quantiles {
				for i := max(0, int(lo.Sub(start)/step)); i < n; i++ {
					t := start.Add(time.Duration(i) * step)
					if !t.Before(hi) {
						break
					}
					if t.Before(lo) {
						continue
					}
					if _, err := fmt.Fprintf(w, "bench_latency_ms{model=\"m-%02d\",quantile=\"%s\"} %.3f %d\n", m, qs, value(m, q, i), t.Unix()); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	prom.Start(b)
	puller, err := pull.New(&pull.Config{}, pull.Backend{URL: prom.URL}, nil, pull.Options{})
	if err != nil {
		b.Fatal(err)
	}
	gzipped, err := pull.New(&pull.Config{}, pull.Backend{URL: prom.URL, Compression: true}, nil, pull.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// fetch is the endpoint's split: pieces of at most 11,000 steps.
	fetch := func(puller *pull.Puller, expr string) []pull.Series {
		byKey := map[string]*pull.Series{}
		var out []pull.Series
		for lo := start; !lo.After(to); {
			hi := lo.Add(10999 * step)
			if hi.After(to) {
				hi = to
			}
			part, err := puller.QueryRange(ctx, expr, lo, hi, step)
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range part {
				k := s.Labels["model"]
				if byKey[k] == nil {
					byKey[k] = &pull.Series{Labels: s.Labels}
				}
				byKey[k].Points = append(byKey[k].Points, s.Points...)
			}
			lo = hi.Add(step)
		}
		for _, s := range byKey {
			out = append(out, *s)
		}
		return out
	}

	st := store.New(storetest.NewPool(b))
	secret, _, err := st.CreateToken(ctx, "bench", store.ScopeRead)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(web.NewServer(web.Config{PublicURL: "http://bench", RequestTimeout: time.Minute},
		web.Deps{Store: st, QueryRange: func(ctx context.Context, expr string, lo, hi time.Time, step time.Duration) ([]api.LabeledSeries, error) {
			series, err := puller.QueryRange(ctx, expr, lo, hi, step)
			out := make([]api.LabeledSeries, len(series))
			for i, s := range series {
				out[i] = api.LabeledSeries{Labels: s.Labels, Points: s.Points}
			}
			return out, err
		}}))
	defer srv.Close()
	endpoint := func(expr string) int {
		q := url.Values{"query": {expr}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "direction": {"up"}}
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/spikes?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		var body struct{ Spikes []json.RawMessage }
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
			b.Fatalf("spikes: %d %v", res.StatusCode, err)
		}
		return len(body.Spikes)
	}

	// evalTime is Prometheus' own evaluation time of the same pieces
	// (stats=all), without the JSON answer's encoding, transfer and
	// decoding.
	evalTime := func(expr string) time.Duration {
		var total float64
		for lo := start; !lo.After(to); {
			hi := lo.Add(10999 * step)
			if hi.After(to) {
				hi = to
			}
			q := url.Values{"query": {expr}, "start": {lo.Format(time.RFC3339)}, "end": {hi.Format(time.RFC3339)}, "step": {"15s"}, "stats": {"all"}}
			res, err := http.Get(prom.URL + "/api/v1/query_range?" + q.Encode())
			if err != nil {
				b.Fatal(err)
			}
			var body struct {
				Data struct {
					Stats struct {
						Timings struct {
							ExecTotalTime float64 `json:"execTotalTime"`
						} `json:"timings"`
					} `json:"stats"`
				} `json:"data"`
			}
			err = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			total += body.Data.Stats.Timings.ExecTotalTime
			lo = hi.Add(step)
		}
		return time.Duration(total * float64(time.Second))
	}
	// One untimed pass first: Prometheus compacts the backfilled blocks
	// after it starts, and the first reads fill its caches.
	for _, qs := range quantiles {
		fetch(puller, fmt.Sprintf(`bench_latency_ms{quantile=%q}`, qs))
	}
	var promT, evalT, gzipT, detectT, endpointT time.Duration
	for b.Loop() {
		found, viaHTTP := 0, 0
		for _, qs := range quantiles {
			expr := fmt.Sprintf(`bench_latency_ms{quantile=%q}`, qs)
			t0 := time.Now()
			series := fetch(puller, expr)
			t1 := time.Now()
			if len(series) != models || len(series[0].Points) != n {
				b.Fatalf("%s: %d series of %d points, want %d of %d", expr, len(series), len(series[0].Points), models, n)
			}
			for _, s := range series {
				for _, sp := range correlate.DetectSpikes(s.Points, opt) {
					if !sp.Onset.Before(from) {
						found++
					}
				}
			}
			t2 := time.Now()
			viaHTTP += endpoint(expr)
			endpointT += time.Since(t2)
			evalT += evalTime(expr)
			t3 := time.Now()
			fetch(gzipped, expr)
			gzipT += time.Since(t3)
			promT, detectT = promT+t1.Sub(t0), detectT+t2.Sub(t1)
		}
		if found < 15 || viaHTTP != found {
			b.Fatalf("found %d spikes (%d via the endpoint), want the 15 planted ones at least, the same both ways", found, viaHTTP)
		}
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(promT), "prom_s")
	b.ReportMetric(per(evalT), "prom_eval_s")
	b.ReportMetric(per(gzipT), "prom_gzip_s")
	b.ReportMetric(per(detectT), "detect_s")
	b.ReportMetric(per(endpointT), "endpoint_s")
}
