package pull

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// After a long outage the first catch-up chunk (up to six hours) can be
// more than Prometheus will evaluate at once: here a real Prometheus with
// --query.max-samples refuses it. Asking for the same range every round
// never moved the cursor, and live data was never pulled again. A refused
// or timed-out chunk is asked again in halves, down to a few steps: the
// round catches up, in smaller queries, and every point is stored once.
// Each query also asks Thanos and VictoriaMetrics for no partial answers,
// which they would otherwise return as complete.
func TestRefusedCatchUpChunkIsAskedInHalves(t *testing.T) {
	t.Parallel()
	prom, start := refusingPrometheus(t)

	target, _ := url.Parse(prom.URL)
	var (
		mu    sync.Mutex
		spans []time.Duration
		asked []url.Values
	)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Director = func(r *http.Request) {
		r.URL.Scheme, r.URL.Host, r.Host = target.Scheme, target.Host, target.Host
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body)) // forwarded as it came
			form, _ := url.ParseQuery(string(body))
			for k, v := range r.URL.Query() {
				form[k] = v
			}
			from, _ := strconv.ParseFloat(form.Get("start"), 64)
			to, _ := strconv.ParseFloat(form.Get("end"), 64)
			mu.Lock()
			spans = append(spans, time.Duration((to-from)*float64(time.Second)))
			asked = append(asked, r.URL.Query())
			mu.Unlock()
		}
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()

	st := storetest.New(t)
	end := start.Add(time.Duration(refusedPoints) * 15 * time.Second)
	p := newPuller(t, st, proxy.URL, `lookback: 6h
presets: []
queries:
  - role: latency_p99
    level: model
    labels: {model: model}
    expr: p99_ms
`, end)
	if err := p.Tick(context.Background()); err != nil {
		t.Fatalf("the catch-up round failed: %v (asked for %v)", err, spans)
	}
	n := storedPoints(t, st, start.Add(-time.Hour), end.Add(time.Hour))
	if n < refusedModels*(refusedPoints-8) {
		t.Errorf("%d points stored, want about %d", n, refusedModels*refusedPoints)
	}
	mu.Lock()
	defer mu.Unlock()
	// The six hours fall in two chunks (their edges are on the grid of six
	// hours, so how they split depends on the time of day): the longer,
	// three hours or more, is refused and asked again in halves.
	longest, halved := 0, false
	for i, d := range spans {
		if d > spans[longest] {
			longest = i
		}
	}
	for _, d := range spans[longest+1:] {
		halved = halved || d <= spans[longest]/2+time.Minute
	}
	if spans[longest] < 3*time.Hour-time.Minute || !halved {
		t.Errorf("asked for %v, want the longer chunk refused, then its halves", spans)
	}
	for _, q := range asked {
		if q.Get("partial_response") != "false" || q.Get("deny_partial_response") != "1" {
			t.Fatalf("a query allowed partial answers: %v", q)
		}
	}
}

// A history pull whose chunk Prometheus refuses as too big asks the rest
// in halves, as the live loop does: it retried the same chunk four times
// and failed, and a rerun resumed at the same chunk and failed again.
func TestRefusedHistoryChunkIsAskedInHalves(t *testing.T) {
	t.Parallel()
	prom, start := refusingPrometheus(t)
	st := storetest.New(t)
	end := start.Add(time.Duration(refusedPoints) * 15 * time.Second)
	p := newPuller(t, st, prom.URL, `presets: []
queries:
  - role: latency_p99
    level: model
    labels: {model: model}
    expr: p99_ms
`, end)
	pr, err := p.History(context.Background(), start, end.Add(-15*time.Second), nil)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	n := storedPoints(t, st, start.Add(-time.Hour), end.Add(time.Hour))
	if n < refusedModels*(refusedPoints-8) || pr.ChunksDone != pr.Chunks {
		t.Errorf("%d points stored (want about %d), %d of %d chunks", n, refusedModels*refusedPoints, pr.ChunksDone, pr.Chunks)
	}
}

// The fleet of the refusal tests: P99 curves of refusedModels models over
// refusedPoints 15 s steps from start (seven hours ago), in a Prometheus whose
// --query.max-samples refuses six hours of them at once (14,400 samples).
const refusedModels, refusedPoints = 10, 6 * 240

func refusingPrometheus(t *testing.T) (*promtest.Prometheus, time.Time) {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Hour).Add(-7 * time.Hour)
	prom := promtest.New(t)
	prom.Backfill(t, strings.NewReader(p99OpenMetrics(refusedModels, refusedPoints, start)))
	prom.SetFlags("--query.max-samples=6000")
	prom.Start(t)
	return prom, start
}

// storedPoints counts the curve points st holds in [from, to).
func storedPoints(t *testing.T, st *store.Store, from, to time.Time) int {
	t.Helper()
	cs, err := st.Curves(context.Background(), store.CurveFilter{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		n += len(c.Points)
	}
	return n
}
