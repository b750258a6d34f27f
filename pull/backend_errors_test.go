package pull

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/waterline-dev/waterline/internal/demo/promrun"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/internal/testing/vmtest"
	"github.com/waterline-dev/waterline/store/storetest"
)

// VictoriaMetrics answers every error with HTTP 422 and its status code
// as the error type ("422"), whatever the cause: only the message tells.
// Its "cannot select more than -search.maxSamplesPerQuery" and "too many
// points ... -search.maxPointsPerTimeseries" were not read as too big, so
// a catch-up chunk was asked whole every round (the cursor never moved)
// and a history pull failed; a syntax error was not a rejected query, so
// serve only warned about it at start-up and an ad-hoc typo was retried,
// then answered as an unreachable backend.
func TestVictoriaMetricsRefusalsAreRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Hour).Add(-7 * time.Hour)
	end := start.Add(time.Duration(refusedPoints) * 15 * time.Second)
	// At most 200 points per series per query (a 6 h chunk at 15 s has
	// 1,440), and 6,000 samples read: VictoriaMetrics counts whole blocks,
	// here every sample of a series, so four models pass and ten never do.
	vm := vmtest.StartWith(t, "-search.maxPointsPerTimeseries=200", "-search.maxSamplesPerQuery=6000")
	vm.Import(t, strings.NewReader(p99OpenMetrics(refusedModels, refusedPoints, start)))
	const models = 4
	cfg := `lookback: 6h
presets: []
queries:
  - role: latency_p99
    level: model
    labels: {model: model}
    expr: 'p99_ms{model=~"m-[0-3]"}'
`
	st := storetest.New(t)
	p := newPuller(t, st, vm.URL, cfg, end)
	// The fixture refuses both ways, as VictoriaMetrics does: 422, its
	// limit named in the message.
	for _, c := range []struct {
		expr  string
		span  time.Duration
		limit string
	}{
		{`p99_ms{model=~"m-[0-3]"}`, 6 * time.Hour, "maxPointsPerTimeseries"},
		{"p99_ms", 30 * time.Minute, "maxSamplesPerQuery"},
	} {
		_, err := p.prom.rangeQuery(ctx, "probe", c.expr, end.Add(-c.span), end, 15*time.Second)
		var ae *v1.Error
		if !errors.As(err, &ae) || ae.Type != "422" || !strings.Contains(ae.Msg, c.limit) {
			t.Fatalf("%v of %s: %v; want VictoriaMetrics' 422 naming -search.%s", c.span, c.expr, err, c.limit)
		}
		if big, _ := tooBig(err); !big {
			t.Errorf("VictoriaMetrics' refusal for %s is not read as too big: %v", c.limit, err)
		}
	}

	// The live loop's catch-up asks in halves and completes in one round.
	if err := p.Tick(ctx); err != nil {
		t.Errorf("the catch-up round failed: %v", err)
	} else if n := storedPoints(t, st, start.Add(-time.Hour), end.Add(time.Hour)); n < models*(refusedPoints-8) {
		t.Errorf("catch-up: %d points stored, want about %d", n, models*refusedPoints)
	}
	// So does a history pull.
	st2 := storetest.New(t)
	p2 := newPuller(t, st2, vm.URL, cfg, end)
	pr, err := p2.History(ctx, start, end.Add(-15*time.Second), nil)
	if err != nil {
		t.Errorf("history: %v", err)
	} else if n := storedPoints(t, st2, start.Add(-time.Hour), end.Add(time.Hour)); n < models*(refusedPoints-8) || pr.ChunksDone != pr.Chunks {
		t.Errorf("history: %d points stored (want about %d), %d of %d chunks", n, models*refusedPoints, pr.ChunksDone, pr.Chunks)
	}

	// A syntax error, an unknown function: rejected, whichever way asked.
	for _, bad := range []string{"sum(p99_ms", "no_such_func(p99_ms)"} {
		_, err := p.prom.instant(ctx, "probe", bad, end)
		if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected {
			t.Errorf("instant %s: %v; want a rejected query", bad, err)
		}
		_, err = p.QueryRange(ctx, bad, end.Add(-30*time.Minute), end, 15*time.Second)
		if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected {
			t.Errorf("ad-hoc %s: %v; want a rejected query", bad, err)
		}
	}
	bad, err := ParseConfig("bad.yaml", []byte("presets: []\nqueries:\n  - {role: latency_p99, level: model, labels: {model: model}, expr: 'sum by (model) (p99_ms'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Validate(ctx, Backend{URL: vm.URL}, end)
	if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected || !strings.Contains(err.Error(), "bad.yaml:3") {
		t.Errorf("Validate: %v; want the query at bad.yaml:3 rejected", err)
	}

	// VictoriaMetrics quotes the query in its messages: words inside it
	// are not the cause. A match that is not one-to-one is neither a
	// rejected expression nor too big, whatever its label values say.
	odd := `p99_ms{model="m-1",model!="parse error: query timed out"} / on() p99_ms{model=~"m-[23]"}`
	_, err = p.prom.rangeQuery(ctx, "probe", odd, end.Add(-5*time.Minute), end, 15*time.Second)
	var ae *v1.Error
	if !errors.As(err, &ae) || ae.Type != "422" || !strings.Contains(ae.Msg, "duplicate time series") {
		t.Fatalf("%s: %v; want VictoriaMetrics' 422 for duplicate series", odd, err)
	}
	big, once := tooBig(err)
	if qe := (*QueryError)(nil); !errors.As(err, &qe) || qe.Rejected || big || once {
		t.Errorf("%v: read as rejected=%v, tooBig=(%v, %v); want none", err, qe != nil && qe.Rejected, big, once)
	}
}

// Prometheus answers its own query timeout with HTTP 503 and errorType
// "timeout"; client_golang reads every 5xx as server_error, which tooBig
// took for a stuck server (halve once a round), not a range too big: a
// chunk whose half still timed out was never pulled. The live catch-up
// failed every round, its cursor stuck; a history pull gave up, and so
// did every rerun, at the same chunk.
func TestPrometheusTimeoutIsTooBig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Hour).Add(-7 * time.Hour)
	end := start.Add(time.Duration(refusedPoints) * 15 * time.Second)
	// A real Prometheus timeout: with --query.timeout=0s every query times
	// out, as a heavy one does in a Prometheus that has little time.
	slow := promtest.New(t)
	slow.SetFlags("--query.timeout=0s")
	slow.Start(t)
	pr, err := newProm(Backend{URL: slow.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pr.rangeQuery(ctx, "probe", "p99_ms", start, end, 15*time.Second)
	var ae *v1.Error
	if !errors.As(err, &ae) || ae.Type != v1.ErrServer || !strings.Contains(ae.Detail, `"errorType":"timeout"`) {
		t.Fatalf("a query with --query.timeout=0s: %v; want Prometheus' 503 timeout", err)
	}
	if big, once := tooBig(err); !big {
		t.Errorf("Prometheus' timeout read as tooBig=(%v, %v), want big: %v", big, once, err)
	}
	// Any other 5xx (a proxy, a server starting) may not be about size.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error or disconnect/reset before headers", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	pd, _ := newProm(Backend{URL: down.URL})
	_, err = pd.rangeQuery(ctx, "probe", "p99_ms", start, end, 15*time.Second)
	if big, once := tooBig(err); big || !once {
		t.Errorf("a plain 503 read as tooBig=(%v, %v), want (false, true): %v", big, once, err)
	}

	// End to end: ranges over 30 minutes go to the Prometheus that times
	// out, shorter ones to one that holds the data.
	ok := promtest.Run(t, strings.NewReader(p99OpenMetrics(refusedModels, refusedPoints, start)))
	front := rangeRouter(t, ok.URL, slow.URL, 30*time.Minute)
	st := storetest.New(t)
	p := newPuller(t, st, front, refusedP99, end)
	if err := p.Tick(ctx); err != nil {
		t.Errorf("the catch-up round failed: %v", err)
	} else if n := storedPoints(t, st, start.Add(-time.Hour), end.Add(time.Hour)); n < refusedModels*(refusedPoints-8) {
		t.Errorf("catch-up: %d points stored, want about %d", n, refusedModels*refusedPoints)
	}
	st2 := storetest.New(t)
	p2 := newPuller(t, st2, front, refusedP99, end)
	prg, err := p2.History(ctx, start, end.Add(-15*time.Second), nil)
	if err != nil {
		t.Errorf("history: %v", err)
	} else if n := storedPoints(t, st2, start.Add(-time.Hour), end.Add(time.Hour)); n < refusedModels*(refusedPoints-8) || prg.ChunksDone != prg.Chunks {
		t.Errorf("history: %d points stored (want about %d), %d of %d chunks", n, refusedModels*refusedPoints, prg.ChunksDone, prg.Chunks)
	}
}

// refusedP99 pulls the P99 of every model of the refusal fixtures
// (p99OpenMetrics) with six hours of lookback.
const refusedP99 = `lookback: 6h
presets: []
queries:
  - role: latency_p99
    level: model
    labels: {model: model}
    expr: p99_ms
`

// rangeRouter is a proxy that sends range queries longer than limit to
// long, everything else to short, and returns its URL.
func rangeRouter(t *testing.T, short, long string, limit time.Duration) string {
	t.Helper()
	su, err := url.Parse(short)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := url.Parse(long)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		target := su
		if strings.HasSuffix(r.In.URL.Path, "/query_range") {
			body, _ := io.ReadAll(r.Out.Body)
			r.Out.Body = io.NopCloser(bytes.NewReader(body)) // forwarded as it came
			form, _ := url.ParseQuery(string(body))
			for k, v := range r.In.URL.Query() {
				form[k] = v
			}
			from, _ := strconv.ParseFloat(form.Get("start"), 64)
			to, _ := strconv.ParseFloat(form.Get("end"), 64)
			if time.Duration((to-from)*float64(time.Second)) > limit {
				target = lu
			}
		}
		r.SetURL(target)
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A Prometheus whose data lies in a remote_read storage (long-term
// storage) answers a failed remote read with 200, the data it has (here
// none) and a warning. The pull stored that as complete: the round
// succeeded, the cursor moved past the range, no outage gap was recorded,
// and once the storage was back only the overlap was read again. A
// warning of missing data fails the chunk as an error does; a PromQL
// annotation leaves the answer whole and is logged once per source.
func TestWarningOfMissingDataFailsTheChunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	const models = 3
	remote := promtest.Run(t, strings.NewReader(p99OpenMetrics(models, 3*240, start)))
	front := remoteReadPrometheus(t, remote.URL)
	cfg := strings.Replace(refusedP99, "lookback: 6h", "lookback: 1h", 1)
	st := storetest.New(t)
	now := start.Add(2 * time.Hour)
	p := newPuller(t, st, front, cfg, now)
	const src = "latency_p99@model"
	if err := p.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	cursor, _, _ := st.PullCursor(ctx, src)

	// The long-term storage is away for ten minutes.
	remote.Stop(t)
	outage := now.Add(10 * time.Minute)
	p.now = func() time.Time { return outage }
	_, warnings, _, err := p.prom.api.QueryRange(ctx, "p99_ms", v1.Range{Start: now, End: outage, Step: 15 * time.Second})
	if err != nil || len(warnings) == 0 || !strings.Contains(warnings[0], "remote_read") {
		t.Fatalf("with its remote storage away Prometheus answers %v, warnings %q; want a remote_read warning", err, warnings)
	}
	err = p.Tick(ctx)
	if err == nil || !strings.Contains(err.Error(), "remote_read") {
		t.Errorf("a round over answers that lack data: %v; want it failed, naming the warning", err)
	}
	if c, _, _ := st.PullCursor(ctx, src); !c.Equal(cursor) {
		t.Errorf("the cursor moved from %v to %v over data never stored", cursor, c)
	}
	gaps, err := st.PullGaps(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || gaps[0].Source != src || !strings.Contains(gaps[0].Error, "remote_read") {
		t.Errorf("open gaps %+v; want one outage gap of %s naming the warning", gaps, src)
	}

	// Back: the next round pulls the outage whole and closes its gap.
	remote.Start(t)
	p.now = func() time.Time { return outage.Add(time.Minute) }
	if err := p.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := storedPoints(t, st, now, outage); n != models*40 {
		t.Errorf("%d points over the ten minutes of the outage, want %d", n, models*40)
	}
	if gaps, _ := st.PullGaps(ctx, time.Time{}); len(gaps) != 0 {
		t.Errorf("gaps still open: %+v", gaps)
	}

	// A PromQL annotation (Prometheus 2.50 and later: a rate over a
	// gauge, a quantile out of range) is about the query, not the data:
	// stored, and said once in the log.
	annotation := `PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "p99_ms"`
	annotated := withWarnings(t, remote.URL, annotation)
	var log syncbuf.Buffer
	st2 := storetest.New(t)
	p2, err := New(mustConfig(t, cfg), Backend{URL: annotated}, st2, Options{Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		if err := p2.Tick(ctx); err != nil {
			t.Fatalf("round %d over annotated answers: %v", round+1, err)
		}
	}
	if n := storedPoints(t, st2, now.Add(-time.Hour), now); n < models*(240-4) {
		t.Errorf("%d points stored from annotated answers, want about %d", n, models*240)
	}
	if n := strings.Count(log.String(), "might not be a counter"); n != 1 {
		t.Errorf("the annotation is logged %d times over two rounds, want once:\n%s", n, log.String())
	}
}

// remoteReadPrometheus runs a Prometheus with an empty TSDB that reads
// remote's data through remote_read, and returns its URL.
func remoteReadPrometheus(t *testing.T, remote string) string {
	t.Helper()
	dir := t.TempDir()
	srv, err := promrun.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 15s\nscrape_configs: []\nremote_read:\n  - url: %s/api/v1/read\n    read_recent: true\n", remote)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}

// withWarnings is a proxy to a Prometheus that adds warnings to every
// query answer, and returns its URL.
func withWarnings(t *testing.T, target string, warnings ...string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		ModifyResponse: func(res *http.Response) error {
			if !strings.HasPrefix(res.Request.URL.Path, "/api/v1/query") || res.StatusCode != http.StatusOK {
				return nil
			}
			var answer map[string]any
			if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
				return err
			}
			res.Body.Close()
			answer["warnings"] = warnings
			b, err := json.Marshal(answer)
			if err != nil {
				return err
			}
			res.Body = io.NopCloser(bytes.NewReader(b))
			res.ContentLength = int64(len(b))
			res.Header.Set("Content-Length", strconv.Itoa(len(b)))
			res.Header.Del("Content-Encoding")
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

func mustConfig(t *testing.T, yaml string) *Config {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
