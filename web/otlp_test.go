package web_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

// tracer is an SDK tracer provider for one service (its resource) that
// records ended spans, for the test to export when and how it likes.
func tracer(attrs ...attribute.KeyValue) (trace.Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attrs...)))
	return tp.Tracer("waterline-test"), rec
}

// waitSamples polls the store until n samples are in [from, to).
func (e *apiEnv) waitSamples(from, to time.Time, n int) []correlate.Sample {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := e.st.Samples(context.Background(), store.SampleFilter{From: from, To: to})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				e.t.Fatalf("want %d samples, have %d", n, len(got))
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The official OpenTelemetry Go SDK traces a request through a gateway and
// a vLLM-style server; the official OTLP/HTTP exporter sends the model
// server's spans first (children before their parent, in another request,
// protobuf + gzip), then the gateway's (JSON), then the gateway's again (a
// retry). One sample comes out, with the stages and dimensions the spans
// said.
func TestOTelSDKExportBecomesOneSample(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	gwTracer, gwRec := tracer(attribute.String("service.name", "gateway"), attribute.String("k8s.pod.name", "gateway-7"),
		attribute.String("k8s.node.name", "edge-1"))
	srvTracer, srvRec := tracer(attribute.String("service.name", "vllm"), attribute.String("service.version", "v3.2.0"),
		attribute.String("k8s.pod.name", "rerank-base-2"), attribute.String("k8s.node.name", "gpu-4"))
	t0 := testNow.Add(-10 * time.Minute)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

	rootCtx, root := gwTracer.Start(ctx, "POST /v1/rerank", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at(0)),
		trace.WithAttributes(attribute.String("http.route", "/v1/rerank"), attribute.String("tenant", "acme"),
			attribute.Int("http.response.status_code", 200)))
	_, auth := gwTracer.Start(rootCtx, "authenticate", trace.WithTimestamp(at(1)))
	auth.End(trace.WithTimestamp(at(4)))
	callCtx, call := gwTracer.Start(rootCtx, "POST", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(at(5)),
		trace.WithAttributes(attribute.String("server.address", "vllm.models.svc")))
	srvCtx, srv := srvTracer.Start(callCtx, "llm_request", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at(6)),
		trace.WithAttributes(attribute.String("gen_ai.request.model", "rerank-base"), attribute.Float64("gen_ai.latency.time_in_queue", 0.030),
			attribute.Float64("gen_ai.latency.time_in_model_inference", 0.100), attribute.Int("batch_size", 8),
			attribute.Int("gen_ai.usage.prompt_tokens", 812), attribute.Int("gen_ai.usage.completion_tokens", 64)))
	_, db := srvTracer.Start(srvCtx, "vector search", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(at(10)),
		trace.WithAttributes(attribute.String("peer.service", "vector-db"), attribute.String("db.system", "qdrant")))
	db.End(trace.WithTimestamp(at(35)))
	srv.End(trace.WithTimestamp(at(176)))
	call.End(trace.WithTimestamp(at(178)))
	root.End(trace.WithTimestamp(at(180)))

	pb := stacktest.Exporter(t, e.srv.URL, e.write)
	js := stacktest.Exporter(t, e.srv.URL, e.write, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	if err := pb.ExportSpans(ctx, srvRec.Ended()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // longer than the grace: the children wait for their entry span
	if n, _ := e.st.Samples(ctx, store.SampleFilter{From: t0, To: at(1000)}); len(n) != 0 {
		t.Fatal("a sample came out before the entry span arrived")
	}
	if err := js.ExportSpans(ctx, gwRec.Ended()); err != nil {
		t.Fatal(err)
	}
	got := e.waitSamples(t0, at(1000), 1)[0]
	if err := pb.ExportSpans(ctx, gwRec.Ended()); err != nil { // a retry, after the sample was stored
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	e.waitSamples(t0, at(1000), 1) // the retry added nothing

	if got.RequestID != root.SpanContext().TraceID().String() || !got.Time.Equal(t0) || got.TotalMs != 180 {
		t.Errorf("id %s time %s total %v; want the trace id, %s, 180", got.RequestID, got.Time, got.TotalMs, t0)
	}
	if got.Model != "rerank-base" || got.Version != "v3.2.0" || got.Replica != "rerank-base-2" || got.Node != "gpu-4" ||
		got.Tenant != "acme" || got.Entry != "/v1/rerank" || got.Status != "ok" || got.BatchSize != 8 || got.Dependency != "vector-db" ||
		got.InputTokens != 812 || got.OutputTokens != 64 {
		t.Errorf("dimensions %+v", got)
	}
	// gateway: 180 − 3 (auth) − 173 (the call) = 4, plus the call's own 3;
	// the model server's 170: 25 downstream, 30 queue, 100 + 15 exec.
	want := map[correlate.Stage]float64{correlate.StageGateway: 7, correlate.StageAuth: 3, correlate.StageQueue: 30,
		correlate.StageExec: 115, correlate.StageDownstream: 25}
	for st := correlate.Stage(0); int(st) < correlate.NumStages; st++ {
		w, ok := want[st]
		if v := got.StagesMs[st]; (!ok && !math.IsNaN(v)) || (ok && math.Abs(v-w) > 1e-9) {
			t.Errorf("stage %s: %v ms, want %v", st, v, w)
		}
	}
	var m strings.Builder
	r := e.do(request{method: "GET", path: "/metrics"})
	m.Write(r.body)
	for _, line := range []string{`waterline_otlp_spans_total{outcome="accepted"} 5`, `waterline_otlp_spans_total{outcome="late"} 3`,
		`waterline_otlp_samples_total 1`, `waterline_otlp_traces_dropped_total{reason="no_model"} 0`} {
		if !strings.Contains(m.String(), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

// Invalid spans come back in the standard partial_success, which the
// official exporter reports; the valid spans of the same request are
// kept. A trace naming no model is counted in /metrics by reason.
func TestOTelPartialSuccessAndUnmappedTraces(t *testing.T) {
	e := newAPIEnv(t)
	var mu sync.Mutex
	var reported []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	t0 := testNow.Add(-time.Minute)
	good := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{1}})
	noTrace := trace.NewSpanContext(trace.SpanContextConfig{SpanID: trace.SpanID{2}})
	stubs := tracetest.SpanStubs{
		{Name: "POST /x", SpanContext: good, SpanKind: trace.SpanKindServer, StartTime: t0, EndTime: t0.Add(time.Second)},
		{Name: "no trace id", SpanContext: noTrace, StartTime: t0, EndTime: t0.Add(time.Second)},
		{Name: "backwards", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{3}}),
			StartTime: t0.Add(time.Second), EndTime: t0},
	}
	exp := stacktest.Exporter(t, e.srv.URL, e.write)
	// The exporter returns the partial success as its error (older ones
	// gave it to the global error handler): either way it reaches the user.
	exportErr := exp.ExportSpans(context.Background(), stubs.Snapshots())
	mu.Lock()
	msg := errors.Join(append(reported, exportErr)...)
	mu.Unlock()
	if msg == nil || !strings.Contains(msg.Error(), "2 spans rejected") || !strings.Contains(msg.Error(), "invalid trace_id") ||
		!strings.Contains(msg.Error(), "end time before its start time") {
		t.Fatalf("the exporter reported %v; want the partial success with both reasons", msg)
	}
	// The valid span names no model: once its grace passes, it is counted.
	deadline := time.Now().Add(10 * time.Second)
	for e.traces.Stats().Dropped[otlp.DropNoModel].Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the trace without a model was not counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := e.do(request{method: "GET", path: "/metrics"})
	for _, line := range []string{`waterline_otlp_traces_dropped_total{reason="no_model"} 1`, `waterline_otlp_spans_total{outcome="rejected"} 2`} {
		if !strings.Contains(string(r.body), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

// The receiver takes the write scope, like every ingest route; a body that
// is not OTLP is a 400 in OTLP's own error shape.
func TestOTelAuthAndBadBodies(t *testing.T) {
	e := newAPIEnv(t)
	stubs := tracetest.SpanStubs{{Name: "x", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}),
		StartTime: testNow.Add(-time.Second), EndTime: testNow}}
	for _, tc := range []struct{ token, want string }{{"", "401"}, {e.read, "403"}, {"wl_nope", "401"}} {
		err := stacktest.Exporter(t, e.srv.URL, tc.token).ExportSpans(context.Background(), stubs.Snapshots())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("token %q: %v, want %s", tc.token, err, tc.want)
		}
	}
	for _, tc := range []struct {
		ctype, body string
		status      int
	}{
		{"application/x-protobuf", "\xff\xff\xff", http.StatusBadRequest},
		{"application/json", `{"resourceSpans": 3}`, http.StatusBadRequest},
		{"text/plain", "hello", http.StatusUnsupportedMediaType},
	} {
		r := e.do(request{method: "POST", path: "/v1/traces", token: e.write, ctype: tc.ctype, body: []byte(tc.body)})
		if r.status != tc.status {
			t.Errorf("%s %q: %d %s, want %d", tc.ctype, tc.body, r.status, r.body, tc.status)
		}
		if tc.ctype == "application/json" && !strings.Contains(string(r.body), `"code":3`) {
			t.Errorf("JSON error body %s is not a google.rpc.Status", r.body)
		}
	}
}

// OTLP decoders (the Collector's, and Waterline's) do not check UTF-8;
// the store's text is UTF-8. A span whose values carry invalid bytes is
// stored with them replaced, and the spans after it keep flowing: one bad
// value must not fail its batch on every retry. A full success leaves
// partial_success unset, in both encodings.
func TestOTelInvalidUTF8IsStoredRepaired(t *testing.T) {
	e := newAPIEnv(t)
	t0 := testNow.Add(-time.Minute)
	export := func(n byte, model string) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("model", model)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{7, n})
		sp.SetSpanID(pcommon.SpanID{1})
		sp.SetName("POST /v1/\xc3")
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(n)*time.Second + 50*time.Millisecond)))
		sp.Attributes().PutStr("tenant", "acme\xff\xfe")
		return td
	}
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(export(1, "m\xff"))
	if err != nil {
		t.Fatal(err)
	}
	r := e.do(request{method: "POST", path: "/v1/traces", token: e.write, ctype: "application/x-protobuf", body: pb})
	if r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("protobuf: %d %q, want 200 and the empty response", r.status, r.body)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(export(2, "m"))
	if err != nil {
		t.Fatal(err)
	}
	r = e.do(request{method: "POST", path: "/v1/traces", token: e.write, ctype: "application/json", body: js})
	if r.status != http.StatusOK || string(r.body) != "{}" {
		t.Fatalf("JSON: %d %s, want 200 and {}", r.status, r.body)
	}
	got := e.waitSamples(t0, t0.Add(time.Minute), 2)
	models := map[string]string{}
	for _, s := range got {
		models[s.Model] = s.Tenant
	}
	if models["m\uFFFD"] != "acme\uFFFD" || models["m"] != "acme\uFFFD" {
		t.Errorf("stored %+v; want models m\uFFFD and m, tenant acme\uFFFD (a run of bad bytes is one)", models)
	}
}

// Errors raised before the receiver runs (no token, a read token) are
// OTLP's too: a google.rpc.Status in the request's encoding, with its
// Content-Type, as the OTLP/HTTP spec requires of every 4xx/5xx.
func TestOTelAuthErrorsAreOTLPStatuses(t *testing.T) {
	e := newAPIEnv(t)
	for _, tc := range []struct {
		token, ctype string
		status       int
		code         int32
	}{
		{"", "application/x-protobuf", http.StatusUnauthorized, 16},
		{e.read, "application/x-protobuf", http.StatusForbidden, 7},
		{"", "application/json", http.StatusUnauthorized, 16},
	} {
		r := e.do(request{method: "POST", path: "/v1/traces", token: tc.token, ctype: tc.ctype, body: []byte{}})
		if r.status != tc.status || r.header.Get("Content-Type") != tc.ctype {
			t.Errorf("%s token %q: %d %q, want %d %q", tc.ctype, tc.token, r.status, r.header.Get("Content-Type"), tc.status, tc.ctype)
			continue
		}
		var st statuspb.Status
		var err error
		if tc.ctype == "application/json" {
			err = protojson.Unmarshal(r.body, &st)
		} else {
			err = proto.Unmarshal(r.body, &st)
		}
		if err != nil || st.Code != tc.code || st.Message == "" {
			t.Errorf("%s token %q: body %q (%v), want a google.rpc.Status of code %d", tc.ctype, tc.token, r.body, err, tc.code)
		}
	}
}

// A body that stalls past the request's time limit is a 503 with
// Retry-After: OTLP exporters retry 503 and drop the batch on a 400.
func TestOTelStalledBodyIsRetryable(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.RequestTimeout = 500 * time.Millisecond })
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, 4096))
		time.Sleep(3 * time.Second)
		pw.CloseWithError(errors.New("gave up"))
	}()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/traces", pr)
	req.Header.Set("Authorization", "Bearer "+e.write)
	req.Header.Set("Content-Type", "application/x-protobuf")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("stalled export: %d, Retry-After %q; want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
