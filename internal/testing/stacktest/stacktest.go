// Package stacktest replays an incident bundle through a running Waterline
// for tests: a fresh Postgres database (storetest), a real Prometheus with
// the bundle's metrics backfilled (promtest), the real puller pulling the
// bundle's range, events and samples posted through the HTTP API, and the
// real analysis worker. Bundles come from the simulator (always available)
// or from a folder in the shared scenarios' format. Tests only.
package stacktest

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/wire"
)

// Bundle is one incident's data in the shared scenarios' formats.
type Bundle struct {
	Name        string
	OpenMetrics func() (io.ReadCloser, error) // metrics, ending with "# EOF"
	Events      []byte                        // NDJSON
	Samples     func() (io.ReadCloser, error) // NDJSON
	Start, End  time.Time                     // the bundle's range
	Truth       Truth
	// Dependencies names the downstream service each model calls, where
	// known (the simulator's); re-emitted traces name it (peer.service).
	Dependencies map[string]string
}

// Truth is the part of truth.json tests check against.
type Truth struct {
	Category string            `json:"category"`
	Target   map[string]any    `json:"target"`
	Onset    *time.Time        `json:"onset"`
	Extra    map[string]string `json:"-"`
}

// clockAfter is the server's clock for a bundle: the test clock, moved
// forward when needed so that it runs an hour past the bundle's end. A
// recorded bundle keeps its own dates, and the test clock may lie before
// them (WATERLINE_TEST_CLOCK_SHIFT=-400d); no server ever sees data from
// its future.
func clockAfter(end time.Time) func() time.Time {
	ahead := max(0, end.Add(time.Hour).Sub(testclock.Now()))
	return func() time.Time { return testclock.Now().Add(ahead) }
}

// SimBundle generates a bundle with the simulator. Without a start, the
// fleet's window ends an hour before the test clock, so the bundle is
// recent on whatever date the tests run.
func SimBundle(t testing.TB, name string, opts sim.Options) Bundle {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = testclock.Now().Add(-cmp.Or(opts.Duration, 3*time.Hour) - time.Hour).Truncate(time.Hour)
	}
	f, err := sim.New(opts)
	if err != nil {
		t.Fatalf("stacktest: sim: %v", err)
	}
	var ev bytes.Buffer
	if err := f.WriteEventsNDJSON(&ev); err != nil {
		t.Fatal(err)
	}
	d := f.Description()
	tr := f.Truth()
	b := Bundle{Name: name, Events: ev.Bytes(), Start: d.Start, End: d.End,
		Truth: Truth{Category: tr.Category, Onset: tr.Onset, Target: map[string]any{}}}
	b.Dependencies = map[string]string{}
	for _, m := range d.Models {
		if m.Downstream != "" {
			b.Dependencies[m.Name] = m.Downstream
		}
	}
	raw, _ := json.Marshal(tr.Target)
	_ = json.Unmarshal(raw, &b.Truth.Target)
	b.OpenMetrics = func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriterSize(pw, 1<<20)
			err := f.WriteOpenMetrics(bw, nil)
			if err == nil {
				err = bw.Flush()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
	b.Samples = func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		if _, err := f.WriteSamplesNDJSON(&buf); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	}
	return b
}

// ScenariosDir is where the shared bundles are: $WATERLINE_SCENARIOS, or
// ../shared/scenarios next to the repository root.
func ScenariosDir() string {
	if d := os.Getenv("WATERLINE_SCENARIOS"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "scenarios")
		}
	}
	return ""
}

// DirBundle reads a bundle folder (metrics.om.gz, events.ndjson,
// samples.ndjson.gz, scenario.json, truth.json); ok is false when the
// folder is not there.
func DirBundle(t testing.TB, dir string) (Bundle, bool) {
	t.Helper()
	var sc struct{ Start, End time.Time }
	raw, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
	if err != nil {
		return Bundle{}, false
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("stacktest: %s: %v", dir, err)
	}
	b := Bundle{Name: filepath.Base(dir), Start: sc.Start.UTC(), End: sc.End.UTC()}
	if raw, err := os.ReadFile(filepath.Join(dir, "truth.json")); err == nil {
		_ = json.Unmarshal(raw, &b.Truth)
	}
	b.Events, _ = os.ReadFile(filepath.Join(dir, "events.ndjson"))
	gz := func(name string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return nil, err
			}
			return struct {
				io.Reader
				io.Closer
			}{zr, f}, nil
		}
	}
	b.OpenMetrics, b.Samples = gz("metrics.om.gz"), gz("samples.ndjson.gz")
	return b, true
}

// Stack is a running Waterline with a bundle replayed into it.
type Stack struct {
	URL      string // base URL of the HTTP server
	Token    string // an admin API token
	Store    *store.Store
	Pool     *pgxpool.Pool
	Server   *web.Server
	Prom     *promtest.Prometheus
	Analyzer *diagnose.Analyzer
	Traces   *otlp.Assembler // POST /v1/traces' assembler, running
	Bundle   Bundle
}

// Options tweak Start.
type Options struct {
	AuthProxyHeader string
	Log             io.Writer // server log; nil discards
	// SamplesAsTraces sends the bundle's samples as OpenTelemetry traces
	// (each re-emitted as spans, exported by the official OTLP/HTTP
	// exporter to /v1/traces) instead of to the sample API.
	SamplesAsTraces bool
}

// Start replays b into a new stack that stops when the test ends.
func Start(t testing.TB, b Bundle, opt Options) *Stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	om, err := b.OpenMetrics()
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.Run(t, om)
	om.Close()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	cfg, err := pull.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	logw := opt.Log
	if logw == nil {
		logw = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	analyzer := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{SLO: cfg.SLOFor, Log: log})
	go analyzer.Run(ctx)
	clock := clockAfter(b.End)
	incidents := incident.New(st, incident.Options{Log: log, Now: clock, Watchers: []func(int64){analyzer.Enqueue}})
	go incidents.Run(ctx)
	reg := prometheus.NewRegistry()
	traceCfg := otlp.DefaultConfig()
	traceCfg.Grace, traceCfg.MaxWait = 200*time.Millisecond, 5*time.Second // every span of a trace is sent at once here
	traces := otlp.NewAssembler(traceCfg, otlp.Options{Sink: web.StoreSink(st), Now: clock, MaxAge: 100 * 365 * 24 * time.Hour, MaxFuture: time.Hour})
	go traces.Run(ctx, 50*time.Millisecond)
	// Listen first, so permalinks and share links name the real address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := web.NewServer(web.Config{
		// A replay takes recorded data at its recorded dates, however old.
		PublicURL: base, IngestMaxBytes: 1 << 30, IngestMaxLines: 5_000_000, IngestMaxAge: 100 * 365 * 24 * time.Hour,
		IngestMaxFuture: time.Hour, RequestTimeout: 5 * time.Minute, AlertLookback: 30 * time.Minute,
		AuthProxyHeader: opt.AuthProxyHeader,
	}, web.Deps{Store: st, Incidents: incidents, Log: log, Registry: reg, Gatherer: reg, SLO: cfg.SLOFor, Now: clock, Traces: traces})
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}}
	hs.Start()
	t.Cleanup(hs.Close)
	tok, _, err := st.CreateToken(ctx, "stacktest", store.ScopeAdmin)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{URL: hs.URL, Token: tok, Store: st, Pool: pool, Server: srv, Prom: prom, Analyzer: analyzer, Traces: traces, Bundle: b}
	if len(bytes.TrimSpace(b.Events)) > 0 {
		s.Post(t, "/api/v1/events", "application/x-ndjson", b.Events, nil)
	}
	samples, err := b.Samples()
	if err != nil {
		t.Fatal(err)
	}
	if opt.SamplesAsTraces {
		s.exportTraces(t, samples)
	} else {
		s.postChunks(t, samples)
	}
	samples.Close()
	p, err := pull.New(cfg, pull.Backend{URL: prom.URL}, st, pull.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.History(ctx, b.Start, b.End, nil); err != nil {
		t.Fatalf("stacktest: pull %s – %s: %v", b.Start, b.End, err)
	}
	return s
}

// postChunks posts NDJSON samples in chunks of about 8 MB.
func (s *Stack) postChunks(t testing.TB, r io.Reader) {
	t.Helper()
	br := bufio.NewReaderSize(r, 1<<20)
	var chunk bytes.Buffer
	flush := func() {
		if chunk.Len() > 0 {
			s.Post(t, "/api/v1/samples", "application/x-ndjson", chunk.Bytes(), nil)
			chunk.Reset()
		}
	}
	for {
		line, err := br.ReadBytes('\n')
		chunk.Write(line)
		if chunk.Len() > 8<<20 {
			flush()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	flush()
}

// Post sends body with the admin token and decodes a 2xx JSON answer into
// v (if not nil); anything else fails the test.
func (s *Stack) Post(t testing.TB, path, ctype string, body []byte, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", ctype)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("stacktest: POST %s: %d %s", path, res.StatusCode, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("stacktest: POST %s: %v in %s", path, err, raw)
		}
	}
}

// Incident opens an incident over the window the shared replay uses
// around the true onset (90 minutes before, 45 after, within the bundle)
// and waits until the analysis worker has analysed it; it returns the id.
func (s *Stack) Incident(t testing.TB, title string) int64 {
	t.Helper()
	from, to := s.Bundle.Start, s.Bundle.End
	if on := s.Bundle.Truth.Onset; on != nil {
		from, to = on.Add(-90*time.Minute), on.Add(45*time.Minute)
		if from.Before(s.Bundle.Start) {
			from = s.Bundle.Start
		}
		if to.After(s.Bundle.End) {
			to = s.Bundle.End
		}
	}
	body := fmt.Sprintf(`{"title":%q,"start":%q,"end":%q}`, title, from.Format(time.RFC3339), to.Format(time.RFC3339))
	var inc struct{ ID int64 }
	s.Post(t, "/api/v1/incidents", "application/json", []byte(body), &inc)
	// The analysis worker picks the new incident up (as in serve); calling
	// Analyze here too would race it for the version number.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		rec, err := s.Store.LatestAnalysis(context.Background(), inc.ID)
		if err == nil && rec.Status == store.AnalysisReady {
			return inc.ID
		}
		if err == nil && rec.Status == store.AnalysisFailed {
			t.Fatalf("stacktest: analysis of incident %d failed: %s", inc.ID, rec.Error)
		}
		if time.Now().After(deadline) {
			t.Fatalf("stacktest: analysis of incident %d not ready after 5 minutes", inc.ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TopCause returns the category of the newest ready analysis' first cause.
func (s *Stack) TopCause(t testing.TB, id int64) string {
	t.Helper()
	rec, err := s.Store.LatestReadyAnalysis(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var a wire.Result
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Causes) == 0 {
		return ""
	}
	return string(a.Causes[0].Category)
}

// Login signs in with the admin token through /login and returns the
// session cookie header value ("wl_session=…").
func (s *Stack) Login(t testing.TB) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(s.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csrf := between(string(page), `name="csrf" value="`, `"`)
	form := strings.NewReader("csrf=" + csrf + "&next=%2F&token=" + s.Token)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/login", form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("stacktest: login: %d", res.StatusCode)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == "wl_session" {
			return ck.Name + "=" + ck.Value
		}
	}
	t.Fatal("stacktest: login set no session cookie")
	return ""
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return ""
}
