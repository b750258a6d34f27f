package web_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
)

// otelcol returns the path of the test's OpenTelemetry Collector:
// $WATERLINE_OTELCOL if set, else built here from
// otlp/collectortest/wlotelcol, a Go module of its own (the upstream
// Collector modules: OTLP receiver, tail sampling, otlphttp exporter).
// A cold build takes minutes; the go command's cache makes later ones a
// link.
func otelcol(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WATERLINE_OTELCOL"); p != "" {
		return p
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the OpenTelemetry Collector with (or set WATERLINE_OTELCOL)")
	}
	out := filepath.Join(t.TempDir(), "wlotelcol")
	cmd := exec.Command(goCmd, "build", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "otlp", "collectortest", "wlotelcol")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the OpenTelemetry Collector (%s): %v\n%s", cmd.Dir, err, b)
	}
	t.Logf("built the OpenTelemetry Collector in %s", time.Since(start).Round(time.Second))
	return out
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The path a user runs: services instrumented with the OpenTelemetry SDK
// export to an OpenTelemetry Collector (built from the upstream modules)
// whose tail-sampling processor keeps the slow and the failed traces and
// whose otlphttp exporter sends them to Waterline with a bearer token.
// Each kept trace becomes one sample with the stages and dimensions its
// spans said; the fast, successful traces never reach Waterline.
func TestCollectorTailSamplesIntoWaterline(t *testing.T) {
	bin := otelcol(t)
	e := newAPIEnv(t)
	ctx := context.Background()

	// The README's Collector configuration, with deterministic policies
	// (no probabilistic share) and a short decision wait.
	recv := freeAddr(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http: {endpoint: "%s"}
processors:
  tail_sampling:
    decision_wait: 1s
    num_traces: 10000
    policies:
      - {name: slow,   type: latency,     latency: {threshold_ms: 500}}
      - {name: errors, type: status_code, status_code: {status_codes: [ERROR]}}
exporters:
  otlp_http/waterline:
    endpoint: "%s"
    headers: {Authorization: "Bearer ${env:WATERLINE_TOKEN}"}
    compression: gzip
service:
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
  pipelines:
    traces: {receivers: [otlp], processors: [tail_sampling], exporters: [otlp_http/waterline]}
`, recv, e.srv.URL)
	path := filepath.Join(t.TempDir(), "otelcol.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(cctx, bin, "--config", path)
	cmd.Env = append(os.Environ(), "WATERLINE_TOKEN="+e.write)
	var log syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Collector log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", recv, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			t.Fatalf("the Collector did not listen on %s: %v\n%s", recv, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Eight requests: three slow ones (a slow queue, a slow dependency, slow
	// execution), one fast failure, four fast successes.
	t0 := testNow.Add(-20 * time.Minute)
	nan := math.NaN()
	mk := func(n int, model, tenant, status string, stages [correlate.NumStages]float64) correlate.Sample {
		s := correlate.Sample{RequestID: fmt.Sprintf("%016x", 0xc011ec7000+n), Time: t0.Add(time.Duration(n) * time.Second),
			Model: model, Version: "v3.2.0", Tenant: tenant, Replica: model + "-1", Node: "gpu-2", Entry: "/v1/" + model,
			BatchSize: 4, Status: status, SampleRate: 1, StagesMs: stages}
		for _, v := range stages {
			if !math.IsNaN(v) {
				s.TotalMs += v
			}
		}
		return s
	}
	//                 gateway auth route queue batch_wait exec postprocess downstream
	st := func(v ...float64) (a [correlate.NumStages]float64) { copy(a[:], v); return a }
	sent := []correlate.Sample{
		mk(0, "chat-7b", "acme", "ok", st(3, 2, 1, 640, 5, 90, 4, nan)),
		mk(1, "rerank-base", "globex", "ok", st(4, 2, 1, 10, 3, 40, 2, 700)),
		mk(2, "chat-7b", "acme", "ok", st(2, 1, 1, 20, 10, 980, 6, nan)),
		mk(3, "chat-7b", "initech", "error", st(2, 1, 1, 3, 2, 12, 1, nan)),
		mk(4, "chat-7b", "acme", "ok", st(2, 1, 1, 3, 2, 30, 1, nan)),
		mk(5, "rerank-base", "acme", "ok", st(3, 1, 1, 2, 2, 20, 1, 15)),
		mk(6, "chat-7b", "globex", "ok", st(2, 1, 1, 4, 2, 25, 1, nan)),
		mk(7, "rerank-base", "initech", "ok", st(2, 1, 1, 2, 1, 18, 1, 12)),
	}
	// The SDK's exporter sends the children first and the entry spans in
	// a later request, as services export on their own timers; the
	// Collector puts each trace back together before it decides. A
	// sample's request id is its trace id.
	kept := map[string]correlate.Sample{}
	var children, roots []tracetest.SpanStub
	for n, s := range sent {
		spans := stacktest.SampleSpans(s, "vector-db")
		roots = append(roots, spans[0])
		children = append(children, spans[1:]...)
		if n < 4 {
			kept[spans[0].SpanContext.TraceID().String()] = s
		}
	}
	exp := stacktest.Exporter(t, "http://"+recv, "not-for-the-collector")
	for _, batch := range [][]tracetest.SpanStub{children, roots} {
		if err := exp.ExportSpans(ctx, tracetest.SpanStubs(batch).Snapshots()); err != nil {
			t.Fatalf("export to the Collector: %v\n%s", err, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	got := e.waitSamples(t0, t0.Add(time.Minute), len(kept))
	// The Collector's decision for the fast traces came with the slow
	// ones' (one decision wait); give stragglers a moment anyway.
	time.Sleep(time.Second)
	got = e.waitSamples(t0, t0.Add(time.Minute), len(kept))
	for _, g := range got {
		w, ok := kept[g.RequestID]
		if !ok {
			t.Errorf("sample %s reached Waterline; tail sampling should have dropped it", g.RequestID)
			continue
		}
		if !g.Time.Equal(w.Time) || math.Abs(g.TotalMs-w.TotalMs) > 1e-6 || g.Status != w.Status {
			t.Errorf("%s: time %s total %v status %s; want %s %v %s", g.RequestID, g.Time, g.TotalMs, g.Status, w.Time, w.TotalMs, w.Status)
		}
		if g.Model != w.Model || g.Version != w.Version || g.Tenant != w.Tenant || g.Replica != w.Replica ||
			g.Node != w.Node || g.Entry != w.Entry || g.BatchSize != w.BatchSize {
			t.Errorf("%s: dimensions\n got %+v\nwant %+v", g.RequestID, g, w)
		}
		wantDep := ""
		if !math.IsNaN(w.StagesMs[correlate.StageDownstream]) {
			wantDep = "vector-db"
		}
		if g.Dependency != wantDep {
			t.Errorf("%s: dependency %q, want %q", g.RequestID, g.Dependency, wantDep)
		}
		for i := range g.StagesMs {
			gv, wv := g.StagesMs[i], w.StagesMs[i]
			if math.IsNaN(gv) != math.IsNaN(wv) || (!math.IsNaN(wv) && math.Abs(gv-wv) > 1e-6) {
				t.Errorf("%s: stage %s %v ms, want %v", g.RequestID, correlate.Stage(i), gv, wv)
			}
		}
	}
	if t.Failed() {
		return
	}
	// What /metrics says Waterline received: the kept traces' spans only.
	var spans int
	for _, s := range sent[:4] {
		spans += len(stacktest.SampleSpans(s, "vector-db"))
	}
	r := e.do(request{method: "GET", path: "/metrics"})
	for _, line := range []string{fmt.Sprintf(`waterline_otlp_spans_total{outcome="accepted"} %d`, spans),
		fmt.Sprintf("waterline_otlp_samples_total %d", len(kept))} {
		if !strings.Contains(string(r.body), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
