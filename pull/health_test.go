package pull

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
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
