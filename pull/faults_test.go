package pull

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// faultyProm stands in front of a real Prometheus and breaks the range
// queries of one source (those whose expression is expr) from the
// (after+1)-th on, the way a dying backend or a proxy in front of it
// does, until healed.
type faultyProm struct {
	*httptest.Server
	expr   string
	after  int
	fault  func(w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	seen   int
	healed atomic.Bool
	broken atomic.Int64 // answers broken
}

func newFaultyProm(t *testing.T, target, expr string, after int, fault func(w http.ResponseWriter, r *http.Request)) *faultyProm {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	f := &faultyProm{expr: expr, after: after, fault: fault}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query_range") && !f.healed.Load() {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			form, _ := url.ParseQuery(string(body))
			if form.Get("query") == f.expr {
				f.mu.Lock()
				f.seen++
				n := f.seen
				f.mu.Unlock()
				if n > f.after {
					f.broken.Add(1)
					f.fault(w, r)
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// cut answers the headers and part of a body, then drops the connection.
func cut(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "4096")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model":"m-0"},"values":[[`)
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// A source that fails halfway through a catch-up (a 5xx, a cut
// connection, malformed or truncated JSON, a value that is no number, a
// backend that stops answering) keeps the chunks it committed, and its
// cursor says exactly that: the next round resumes there, and in the end
// the store holds what a clean pull stores — every point once, nothing
// lost. The other source goes on meanwhile, and the failing one's error
// shows in the pull health until it heals. Values Prometheus answers as
// NaN (0/0) are not stored.
func TestMidRoundFaultsLoseNothingAndStoreNothingTwice(t *testing.T) {
	t.Parallel()
	const models, points = 3, 720 // three hours at 15 s
	prom, start := runP99(t, models, points)
	now := start.Add(3*time.Hour + 30*time.Second)
	const broken = `p99_ms`
	const nanExpr = `(p99_ms{model="m-0"} - 100) / (p99_ms{model="m-0"} - 100)`
	cfg := fmt.Sprintf(`lookback: 3h
max_chunk: 30m
presets: []
queries:
  - {role: latency_p99, level: model, labels: {model: model}, expr: '%s'}
  - {role: qps, level: model, labels: {model: model}, expr: '%s'}
`, broken, nanExpr)
	ctx := context.Background()
	whole := storetest.New(t)
	if err := newPuller(t, whole, prom.URL, cfg, now).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	want := curvesByKey(t, whole, start, now)
	if n := len(want[qpsKey("m-0")]); n == 0 || n >= points-1 {
		t.Fatalf("%d points of the 0/0 curve, want its NaNs left out", n)
	}
	for _, p := range want[qpsKey("m-0")] {
		if p.V != 1 {
			t.Fatalf("0/0 curve holds %v", p)
		}
	}

	for _, c := range []struct {
		name  string
		fault func(w http.ResponseWriter, r *http.Request)
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "upstream broke", http.StatusInternalServerError)
		}},
		{"502 from a proxy", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body>Bad Gateway</body></html>")
		}},
		{"cut connection", cut},
		{"truncated JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model":"m-0"},"values":[[1,"1"]`)
		}},
		{"not a number", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model":"m-0"},"values":[[`+
				fmt.Sprint(start.Add(time.Hour).Unix())+`,"lots"]]}]}}`)
		}},
		{"no answer", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, pool := storetest.NewWithPool(t)
			fp := newFaultyProm(t, prom.URL, broken, 2, c.fault)
			p := newPuller(t, st, fp.URL, cfg, now)
			p.prom.timeout = 2 * time.Second // for "no answer"
			err := p.Tick(ctx)
			if err == nil || !strings.Contains(err.Error(), "latency_p99") || fp.broken.Load() == 0 {
				t.Fatalf("round with the fault: %v (%d answers broken)", err, fp.broken.Load())
			}
			// Two chunks committed; the cursor is where they end, and
			// only what they hold is stored.
			cur, ok, err := st.PullCursor(ctx, "latency_p99@model")
			if err != nil || !ok {
				t.Fatalf("cursor: %v %v", ok, err)
			}
			var last time.Time
			n := 0
			for k, ps := range curvesByKey(t, st, start, now) {
				if !strings.HasPrefix(k, string(correlate.RoleLatencyP99)) {
					continue
				}
				n += len(ps)
				if tm := ps[len(ps)-1].Time(); tm.After(last) {
					last = tm
				}
			}
			if n == 0 || !cur.Equal(last.Add(15*time.Second)) {
				t.Fatalf("cursor %v after the fault, last point stored %v (%d points)", cur, last, n)
			}
			if cur.After(start.Add(90 * time.Minute)) {
				t.Fatalf("cursor %v: more than two chunks stored", cur)
			}
			srcs, _ := st.PullSources(ctx)
			failing := map[string]string{}
			for _, s := range srcs {
				failing[s.Source] = s.LastError
			}
			if failing["latency_p99@model"] == "" || failing["qps@model"] != "" {
				t.Fatalf("pull health after the fault: %+v", srcs)
			}
			gaps, _ := st.PullGaps(ctx, time.Time{})
			if len(gaps) != 1 || !gaps[0].From.Equal(cur) || gaps[0].Source != "latency_p99@model" {
				t.Fatalf("gaps after the fault: %+v (cursor %v)", gaps, cur)
			}

			fp.healed.Store(true)
			if err := p.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			got := curvesByKey(t, st, start, now)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after healing the store differs from a clean pull")
				for k, w := range want {
					if fmt.Sprint(got[k]) != fmt.Sprint(w) {
						t.Errorf("%s: %d points, want %d", k, len(got[k]), len(w))
					}
				}
			}
			var dup bool
			if err := pool.QueryRow(ctx, `SELECT count(*) <> count(DISTINCT (series_id, time)) FROM points`).Scan(&dup); err != nil || dup {
				t.Fatalf("points stored twice: %v %v", dup, err)
			}
			if gaps, _ := st.PullGaps(ctx, time.Time{}); len(gaps) != 0 {
				t.Fatalf("gaps after healing: %+v", gaps)
			}
			srcs, _ = st.PullSources(ctx)
			for _, s := range srcs {
				if s.LastError != "" || s.Cursor.Before(start.Add(3*time.Hour)) {
					t.Errorf("after healing: %+v", s)
				}
			}
		})
	}
}

func qpsKey(m string) string {
	return correlate.Curve{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: m}}.Key()
}

// curvesByKey is every curve st holds in [from, to), by key.
func curvesByKey(t *testing.T, st *store.Store, from, to time.Time) map[string][]correlate.Point {
	t.Helper()
	cs, err := st.Curves(context.Background(), store.CurveFilter{From: from.Add(-time.Hour), To: to.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]correlate.Point{}
	for _, c := range cs {
		for _, p := range c.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				t.Fatalf("%s holds %v", c.Key(), p)
			}
		}
		out[c.Key()] = c.Points
	}
	return out
}

// A backend that answers a range query with more than any answer of a
// pull should hold (here 256 MiB: valid JSON, one point, the rest white
// space, as a broken proxy or a runaway query could send) is not read
// whole into memory: the answer is refused once past the bound
// (maxAnswerBytes, 64 MiB), the round fails with the source named and
// nothing is stored.
func TestHugeAnswerIsRefused(t *testing.T) {
	t.Parallel()
	// Far past the 64 MiB bound: what the reader leaves unread still
	// fills the loopback's socket buffers (tens of MiB on a busy machine)
	// before the server's writes fail.
	const size = 256 << 20
	now := time.Now().UTC().Truncate(time.Minute)
	// most is the largest share of one answer written before the reader
	// went away: a refused answer is asked again in halves, so the bytes
	// of all answers add up past one answer's size.
	var most atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var written atomic.Int64
		defer func() {
			for m := most.Load(); written.Load() > m && !most.CompareAndSwap(m, written.Load()); m = most.Load() {
			}
		}()
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/query_range") {
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		head := `{"status":"success","data":{"resultType":"matrix","result":[`
		tail := fmt.Sprintf(`{"metric":{"model":"m-0"},"values":[[%d,"1"]]}]}}`, now.Add(-time.Minute).Unix())
		n, err := io.WriteString(w, head)
		written.Add(int64(n))
		pad := strings.Repeat(" ", 1<<20)
		for i := 0; err == nil && written.Load() < size-int64(len(tail)); i++ {
			n, err = io.WriteString(w, pad)
			written.Add(int64(n))
		}
		if err == nil {
			n, _ = io.WriteString(w, tail)
			written.Add(int64(n))
		}
	}))
	t.Cleanup(huge.Close)
	st := storetest.New(t)
	p := newPuller(t, st, huge.URL, `lookback: 2m
presets: []
queries:
  - {role: latency_p99, level: model, labels: {model: model}, expr: p99_ms}
`, now)
	err := p.Tick(context.Background())
	if err == nil || !strings.Contains(err.Error(), "latency_p99@model") || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("round over a 256 MiB answer: %v", err)
	}
	if n := storedPoints(t, st, now.Add(-time.Hour), now.Add(time.Hour)); n != 0 {
		t.Fatalf("%d points stored from the refused answer", n)
	}
	if w := most.Load(); w >= size {
		t.Fatalf("the whole answer (%d bytes) was read", w)
	}
}

// A serve started while Prometheus is down reads the built-in presets;
// their sources fail and open gaps. Once Prometheus answers, the
// detected presets replace them: the pull health must then
// speak of what is pulled. The dropped sources stayed in it for ever,
// failing ("connection refused"), further behind every minute, their
// gaps open — on a fleet whose pull is healthy. Put back, a source
// shows again and resumes from its cursor.
func TestDroppedSourcesLeaveThePullHealth(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 2, 240)
	now := start.Add(time.Hour + 30*time.Second)
	st := storetest.New(t)
	ctx := context.Background()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	const old = "presets: []\nqueries:\n  - {role: qps, level: model, labels: {model: model}, expr: p99_ms}\n"
	const detected = "presets: []\nqueries:\n  - {role: latency_p99, level: model, labels: {model: model}, expr: p99_ms}\n"
	// One Puller per config in effect and Prometheus URL: the store is
	// what the rounds share (serve's puller adopts the detected config
	// with SetConfig at the start of a round). Down ten minutes before the
	// data ends, so that the outage ends where data follows.
	if err := newPuller(t, st, down.URL, old, now.Add(-10*time.Minute)).Tick(ctx); err == nil {
		t.Fatal("a round against a Prometheus that answers 503 succeeded")
	}
	if err := newPuller(t, st, prom.URL, detected, now).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	srcs, err := st.PullSources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Source != "latency_p99@model" || srcs[0].LastError != "" {
		t.Errorf("pull health once the detected presets are pulled: %+v", srcs)
	}
	gaps, err := st.PullGaps(ctx, time.Time{})
	if err != nil || len(gaps) != 0 {
		t.Errorf("open gaps: %+v, %v", gaps, err)
	}
	// The old config back (WATERLINE_CONFIG edited back): its source is
	// shown again, caught up from where its cursor was.
	if err := newPuller(t, st, prom.URL, old, now).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	srcs, _ = st.PullSources(ctx)
	if len(srcs) != 1 || srcs[0].Source != "qps@model" || srcs[0].LastError != "" || srcs[0].Cursor.Before(start.Add(time.Hour)) {
		t.Errorf("pull health with the old config back: %+v", srcs)
	}
	if gaps, _ := st.PullGaps(ctx, time.Time{}); len(gaps) != 0 {
		t.Errorf("open gaps with the old config back: %+v", gaps)
	}
}

// One source whose query Prometheus does not answer (an expensive query
// on a loaded Prometheus, a proxy stuck on it) must not hold back the
// others: the live loop's round waited for every source, so the healthy
// ones were pulled once per query timeout (two minutes, four with the
// halved retry) instead of every interval — mid-incident, when
// Prometheus is loaded. Rounds go on without it, it is not asked again
// while its query is in flight, and once answered it is stored.
func TestSlowSourceDoesNotHoldBackTheOthers(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 2, 240)
	now := start.Add(time.Hour + 30*time.Second)
	const slowExpr, fastExpr = `p99_ms`, `p99_ms + 0`
	release := make(chan struct{})
	var slowAsked, fastAsked atomic.Int64
	u, _ := url.Parse(prom.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			form, _ := url.ParseQuery(string(body))
			switch form.Get("query") {
			case slowExpr:
				slowAsked.Add(1)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			case fastExpr:
				fastAsked.Add(1)
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before front.Close, which waits for the handler
	st := storetest.New(t)
	p := newPuller(t, st, front.URL, fmt.Sprintf(`presets: []
queries:
  - {role: latency_p99, level: model, labels: {model: model}, expr: '%s'}
  - {role: qps, level: model, labels: {model: model}, expr: '%s'}
`, slowExpr, fastExpr), now)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(stop)
	go func() { done <- p.Run(ctx, 50*time.Millisecond) }()
	waitFor(t, "the slow source is asked", func() bool { return slowAsked.Load() > 0 })
	waitFor(t, "three more rounds of the healthy source while the slow one waits", func() bool { return fastAsked.Load() >= 4 })
	if n := slowAsked.Load(); n != 1 {
		t.Errorf("the slow source was asked %d times while its first query was in flight", n)
	}
	free()
	waitFor(t, "the slow source is stored", func() bool {
		cur, ok, err := st.PullCursor(context.Background(), "latency_p99@model")
		return err == nil && ok && !cur.Before(start.Add(time.Hour))
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
