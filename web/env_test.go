package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/wire"
)

// testNow is the server's clock in these tests: the test clock when the
// package's tests start, on the whole hour (fixtures on 15 s, 1 min and
// 5 min grids line up with it), held still so fixtures and expectations
// agree. It follows the real date (moved by WATERLINE_TEST_CLOCK_SHIFT),
// because the cookie jar, Chromium and Postgres read the real clock too.
var testNow = testclock.Now().Truncate(time.Hour)

// apiEnv is a real server on a real, fresh database.
type apiEnv struct {
	t                  *testing.T
	pool               *pgxpool.Pool
	st                 *store.Store
	srv                *httptest.Server
	read, write, admin string
	mu                 sync.Mutex
	changed            []int64 // ids the incident service told its watchers
	incidents          *incident.Service
	registry           *prometheus.Registry
	traces             *otlp.Assembler // POST /v1/traces' assembler, running
}

func newAPIEnv(t *testing.T, tweak ...func(*web.Config)) *apiEnv {
	t.Helper()
	return newAPIEnvAt(t, func() time.Time { return testNow }, tweak...)
}

// newAPIEnvAt is newAPIEnv with the server's clock (a zone other than
// UTC, say).
func newAPIEnvAt(t *testing.T, now func() time.Time, tweak ...func(*web.Config)) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, pool: storetest.NewPool(t)}
	e.st = store.New(e.pool)
	cfg := web.Config{
		PublicURL:       "http://waterline.test",
		IngestMaxBytes:  64 << 20,
		IngestMaxLines:  200000,
		IngestMaxAge:    365 * 24 * time.Hour,
		IngestMaxFuture: time.Hour,
		RequestTimeout:  60 * time.Second,
		AlertLookback:   30 * time.Minute,
		// Webhook receivers in tests are on loopback.
		WebhookAllowPrivate: true,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	e.registry = prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.incidents = incident.New(e.st, incident.Options{Log: log, Now: now, Watchers: []func(int64){func(id int64) {
		e.mu.Lock()
		e.changed = append(e.changed, id)
		e.mu.Unlock()
	}}})
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go e.incidents.Run(ctx)
	// The assembler's clock moves (grace periods pass), from testNow.
	started := time.Now()
	traceCfg := otlp.DefaultConfig()
	traceCfg.Grace = 300 * time.Millisecond
	e.traces = otlp.NewAssembler(traceCfg, otlp.Options{Sink: web.StoreSink(e.st),
		Now:    func() time.Time { return testNow.Add(time.Since(started)) },
		MaxAge: cfg.IngestMaxAge, MaxFuture: cfg.IngestMaxFuture})
	go e.traces.Run(ctx, 50*time.Millisecond)
	srv := web.NewServer(cfg, web.Deps{
		Store: e.st, Incidents: e.incidents, Registry: e.registry, Gatherer: e.registry, Log: log, Now: now,
		Ready:  func(ctx context.Context) error { return e.pool.Ping(ctx) },
		Traces: e.traces,
	})
	e.srv = httptest.NewServer(srv)
	t.Cleanup(e.srv.Close)
	// As serve does: the token and session caches serve while this hears
	// revocations.
	go func() { _ = srv.WatchAuth(ctx) }()
	for _, sc := range []store.TokenScope{store.ScopeRead, store.ScopeWrite, store.ScopeAdmin} {
		secret, _, err := e.st.CreateToken(context.Background(), "test-"+string(sc), sc)
		if err != nil {
			t.Fatal(err)
		}
		switch sc {
		case store.ScopeRead:
			e.read = secret
		case store.ScopeWrite:
			e.write = secret
		case store.ScopeAdmin:
			e.admin = secret
		}
	}
	return e
}

// request is one HTTP call.
type request struct {
	method, path, token, ctype, encoding string
	body                                 []byte
	header                               http.Header // more request headers
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
	err    wire.Error
}

func (e *apiEnv) do(r request) response {
	e.t.Helper()
	req, err := http.NewRequest(r.method, e.srv.URL+r.path, bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatal(err)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	if r.encoding != "" {
		req.Header.Set("Content-Encoding", r.encoding)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	out := response{status: res.StatusCode, header: res.Header}
	out.body, _ = io.ReadAll(res.Body)
	if res.StatusCode >= 400 && strings.Contains(res.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(out.body, &out.err); err != nil {
			e.t.Fatalf("%s %s: %d with a non-JSON error body %q", r.method, r.path, res.StatusCode, out.body)
		}
	}
	return out
}

// post sends body with the write token.
func (e *apiEnv) post(path, ctype string, body []byte) response {
	e.t.Helper()
	return e.do(request{method: "POST", path: path, token: e.write, ctype: ctype, body: body})
}

// get fetches path with the read token and decodes a 200 answer into v.
func (e *apiEnv) get(path string, v any) response {
	e.t.Helper()
	r := e.do(request{method: "GET", path: path, token: e.read})
	if r.status == http.StatusOK && v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			e.t.Fatalf("GET %s: %v in %s", path, err, r.body)
		}
	}
	return r
}

// count returns a number from the database.
func (e *apiEnv) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *apiEnv) incidentChanges() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64(nil), e.changed...)
}

// accepted decodes a 200 ingest answer, failing the test on anything else.
func accepted(t *testing.T, r response) (int, int) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var v wire.IngestResult
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Accepted, v.Duplicates
}

// sampleLine is one valid NDJSON sample; i makes its request id and time.
func sampleLine(i int) string {
	t := testNow.Add(-2 * time.Hour).Add(time.Duration(i) * time.Millisecond)
	return fmt.Sprintf(`{"request_id":"req-%07d","time":%q,"model":"chat-7b","version":"v1","tenant":"t-a","replica":"chat-7b-0","node":"gpu-1","entry":"/v1/chat","batch_size":4,"status":"ok","total_ms":%d.5,"stages_ms":{"gateway":1,"queue":%d,"exec":20.25},"sample_rate":10}`,
		i, t.Format(time.RFC3339Nano), 30+i%100, i%50)
}

// ndjson joins lines from..to (exclusive) of sampleLine.
func ndjson(from, to int) []byte {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(sampleLine(i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testLog sends the server's warnings and errors to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
