package pull

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store/storetest"
)

// A source whose metric has no fresh samples (an idle model, a metric
// scraped now and then) has nothing new to pull once its cursor is at
// its newest sample (horizon.go) and past the overlap's re-read: its
// rounds query nothing. An error of a round with Prometheus down stayed
// in the pull health after Prometheus was back, until the metric had a
// fresh sample (up to horizonHold): "error" on a healthy source,
// mid-incident. A round whose queries succeed (here the probe of the
// newest samples, which found nothing new) clears it and says when the
// source was checked. Reached two ways: no overlap, or a round whose
// probe failed (a loaded Prometheus) pulling up to now − delay, past the
// horizon.
func TestIdleSourceErrorClearsOnceItsQueriesSucceed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, overlap string
		probeFails    bool // the first round's probe fails, its range queries not
	}{
		{"no overlap", "0s", false},
		{"cursor past the horizon", "2m", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prom, start := runP99(t, 1, 240) // one hour, then no sample
			const (
				up = iota
				probeDown
				down
			)
			var mode atomic.Int32
			u, _ := url.Parse(prom.URL)
			rp := httputil.NewSingleHostReverseProxy(u)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch m := mode.Load(); {
				case m == down, m == probeDown && strings.HasSuffix(r.URL.Path, "/query"):
					http.Error(w, "down", http.StatusServiceUnavailable)
					return
				}
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			cfg := "overlap: " + c.overlap + "\npresets: []\nqueries:\n  - {role: latency_p99, level: model, labels: {model: model}, expr: p99_ms}\n"
			ctx := context.Background()
			st := storetest.New(t)
			idle := start.Add(time.Hour + 5*time.Minute) // five minutes after the last sample
			if c.probeFails {
				mode.Store(probeDown)
			}
			if err := newPuller(t, st, front.URL, cfg, idle).Tick(ctx); err != nil {
				t.Fatal(err)
			}
			mode.Store(down)
			if err := newPuller(t, st, front.URL, cfg, idle.Add(time.Minute)).Tick(ctx); err == nil {
				t.Fatal("a round with Prometheus down succeeded")
			}
			srcs, _ := st.PullSources(ctx)
			if len(srcs) != 1 || srcs[0].LastError == "" {
				t.Fatalf("pull health with Prometheus down: %+v", srcs)
			}
			mode.Store(up)
			checked := idle.Add(2 * time.Minute)
			if err := newPuller(t, st, front.URL, cfg, checked).Tick(ctx); err != nil {
				t.Fatal(err)
			}
			srcs, _ = st.PullSources(ctx)
			if len(srcs) != 1 || srcs[0].LastError != "" || srcs[0].LastAttempt == nil || !srcs[0].LastAttempt.Equal(checked) {
				t.Fatalf("pull health after a round whose queries succeeded: %+v", srcs)
			}
		})
	}
}

// A source still pulling from an earlier round (a slow query: the round
// went on without it) reads the config chunk by chunk. A new config that
// drops it mid-pull must stop it quietly, its committed chunks kept: it
// failed once with "no source in the config", an error in the pull
// health (its row written after the new config's round retired the
// others) for a source nothing pulls any more.
func TestSourceDroppedMidPullStopsQuietly(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 2, 240)
	now := start.Add(time.Hour + 30*time.Second)
	const slowExpr, fastExpr = `p99_ms`, `p99_ms + 0`
	const slow = "latency_p99@model"
	release := make(chan struct{})
	var slowAsked atomic.Int64
	u, _ := url.Parse(prom.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			form, _ := url.ParseQuery(string(body))
			if form.Get("query") == slowExpr && slowAsked.Add(1) == 1 {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	st, pool := storetest.NewWithPool(t)
	const both = `lookback: 1h
max_chunk: 30m
presets: []
queries:
  - {role: latency_p99, level: model, labels: {model: model}, expr: '` + slowExpr + `'}
  - {role: qps, level: model, labels: {model: model}, expr: '` + fastExpr + `'}
`
	p := newPuller(t, st, front.URL, both, now)
	ctx := context.Background()
	if _, _, err := p.tick(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow source's first chunk is asked", func() bool { return slowAsked.Load() > 0 })
	p.SetConfig(mustConfig(t, "lookback: 1h\nmax_chunk: 30m\npresets: []\nqueries:\n  - {role: qps, level: model, labels: {model: model}, expr: '"+fastExpr+"'}\n"))
	if _, _, err := p.tick(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	free()
	p.inflight.Wait()
	var (
		cursor  time.Time
		lastErr string
		errs    int64
	)
	if err := pool.QueryRow(ctx, `SELECT cursor_at, last_error, errors_total FROM pull_cursors WHERE source = $1`, slow).
		Scan(&cursor, &lastErr, &errs); err != nil {
		t.Fatal(err)
	}
	if lastErr != "" || errs != 0 {
		t.Errorf("the dropped source recorded an error: %q (%d errors)", lastErr, errs)
	}
	if !cursor.After(start) || storedPoints(t, st, start, now) == 0 {
		t.Errorf("the dropped source's committed chunk: cursor %v", cursor)
	}
	if gaps, _ := st.PullGaps(ctx, time.Time{}); len(gaps) != 0 {
		t.Errorf("gaps: %+v", gaps)
	}
	srcs, _ := st.PullSources(ctx)
	for _, s := range srcs {
		if s.LastError != "" {
			t.Errorf("pull health: %+v", s)
		}
	}
	if _, _, err := p.tick(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if srcs, _ := st.PullSources(ctx); len(srcs) != 1 || srcs[0].Source != "qps@model" || srcs[0].LastError != "" {
		t.Errorf("pull health the round after: %+v", srcs)
	}
}
