package stacktest

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// Exporter is the official OTLP/HTTP trace exporter pointed at a
// Waterline base URL with a bearer token, gzip on.
func Exporter(t testing.TB, baseURL, token string, opts ...otlptracehttp.Option) *otlptrace.Exporter {
	t.Helper()
	all := append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(baseURL + "/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + token}),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
			MaxInterval: time.Second, MaxElapsedTime: time.Minute})}, opts...)
	exp, err := otlptracehttp.New(context.Background(), all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

// SampleSpans re-emits a request sample as the spans an instrumented
// gateway and model server would export for it: the gateway's server span
// (the total; its own time is the gateway stage), an auth and a route
// span, and the model server's request span (exec) under which queue,
// batch wait, postprocessing and the call to dependency (a client span
// naming peer.service) sit, one after another. Dimensions go where OTel's
// semantic conventions put them: the replica's pod, node and version on
// the model server's resource, the route and tenant on the gateway's span.
// Unreported stages have no span. The first span returned is the root.
func SampleSpans(s correlate.Sample, dependency string) []tracetest.SpanStub {
	var tid trace.TraceID
	copy(tid[:], "wl-otel-sampleid")
	if id, err := strconv.ParseUint(s.RequestID, 16, 64); err == nil {
		binary.BigEndian.PutUint64(tid[8:], id)
	} else {
		copy(tid[:], s.RequestID)
	}
	n := uint64(0)
	sc := func() trace.SpanContext {
		n++
		var sid trace.SpanID
		binary.BigEndian.PutUint64(sid[:], n)
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	}
	gw := resource.NewSchemaless(attribute.String("service.name", "gateway"), attribute.String("k8s.pod.name", "gateway-0"),
		attribute.String("k8s.node.name", "edge-0"))
	srv := resource.NewSchemaless(attribute.String("service.name", s.Model), attribute.String("service.version", s.Version),
		attribute.String("k8s.pod.name", s.Replica), attribute.String("k8s.node.name", s.Node))
	ms := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
	stage := func(st correlate.Stage) (float64, bool) {
		v := s.StagesMs[st]
		return v, !math.IsNaN(v)
	}
	root := tracetest.SpanStub{Name: "POST " + s.Entry, SpanContext: sc(), SpanKind: trace.SpanKindServer,
		StartTime: s.Time, EndTime: s.Time.Add(ms(s.TotalMs)), Resource: gw,
		Attributes: []attribute.KeyValue{attribute.String("http.route", s.Entry), attribute.String("tenant", s.Tenant),
			attribute.Float64("sample_rate", s.SampleRate)}}
	switch s.Status {
	case "error":
		root.Status = sdktrace.Status{Code: codes.Error, Description: "internal error"}
		root.Attributes = append(root.Attributes, attribute.Int("http.response.status_code", 500))
	case "timeout":
		root.Status = sdktrace.Status{Code: codes.Error, Description: "upstream timeout"}
		root.Attributes = append(root.Attributes, attribute.String("error.type", "timeout"), attribute.Int("http.response.status_code", 504))
	default:
		root.Attributes = append(root.Attributes, attribute.Int("http.response.status_code", 200))
	}
	out := []tracetest.SpanStub{root}
	at := s.Time
	if v, ok := stage(correlate.StageGateway); ok {
		at = at.Add(ms(v))
	}
	child := func(parent tracetest.SpanStub, name string, kind trace.SpanKind, res *resource.Resource, d float64, attrs ...attribute.KeyValue) tracetest.SpanStub {
		c := tracetest.SpanStub{Name: name, SpanContext: sc(), Parent: parent.SpanContext, SpanKind: kind, StartTime: at,
			EndTime: at.Add(ms(d)), Resource: res, Attributes: attrs}
		return c
	}
	for _, x := range []struct {
		st   correlate.Stage
		name string
	}{{correlate.StageAuth, "authenticate"}, {correlate.StageRoute, "route request"}} {
		if v, ok := stage(x.st); ok {
			out = append(out, child(root, x.name, trace.SpanKindInternal, gw, v))
			at = at.Add(ms(v))
		}
	}
	// The model server's span covers the rest; its own time is exec (a
	// request that timed out in the queue has none: then the span's name
	// maps to no stage and its zero own time goes to the gateway).
	rest := 0.0
	for _, st := range []correlate.Stage{correlate.StageQueue, correlate.StageBatchWait, correlate.StageExec, correlate.StagePostprocess, correlate.StageDownstream} {
		if v, ok := stage(st); ok {
			rest += v
		}
	}
	name := "infer " + s.Model
	if _, ok := stage(correlate.StageExec); !ok {
		name = "handle " + s.Model
	}
	server := child(root, name, trace.SpanKindServer, srv, rest, attribute.String("gen_ai.request.model", s.Model))
	if s.BatchSize > 0 {
		server.Attributes = append(server.Attributes, attribute.Int("batch_size", s.BatchSize))
	}
	if s.InputTokens > 0 {
		server.Attributes = append(server.Attributes, attribute.Int("gen_ai.usage.input_tokens", s.InputTokens))
	}
	if s.OutputTokens > 0 {
		server.Attributes = append(server.Attributes, attribute.Int("gen_ai.usage.output_tokens", s.OutputTokens))
	}
	out = append(out, server)
	for _, x := range []struct {
		st   correlate.Stage
		name string
		kind trace.SpanKind
	}{{correlate.StageQueue, "queue wait", trace.SpanKindInternal}, {correlate.StageBatchWait, "dynamic batching", trace.SpanKindInternal}} {
		if v, ok := stage(x.st); ok {
			out = append(out, child(server, x.name, x.kind, srv, v))
			at = at.Add(ms(v))
		}
	}
	if v, ok := stage(correlate.StageExec); ok {
		at = at.Add(ms(v))
	}
	if v, ok := stage(correlate.StagePostprocess); ok {
		out = append(out, child(server, "postprocess", trace.SpanKindInternal, srv, v))
		at = at.Add(ms(v))
	}
	if v, ok := stage(correlate.StageDownstream); ok {
		attrs := []attribute.KeyValue{attribute.String("server.address", "backend.internal")}
		if dependency != "" {
			attrs = append(attrs, attribute.String("peer.service", dependency))
		}
		out = append(out, child(server, "call "+dependency, trace.SpanKindClient, srv, v, attrs...))
	}
	return out
}

// exportTraces re-emits every sample of r (NDJSON) as spans and exports
// them with the official exporter in batches of 512 spans, each trace's
// root span one batch after its children (so parents arrive after their
// children, in another request), then waits until the assembler has
// stored them all.
func (s *Stack) exportTraces(t testing.TB, r io.Reader) {
	t.Helper()
	exp := Exporter(t, s.URL, s.Token)
	ctx := context.Background()
	var batch, roots []tracetest.SpanStub
	send := func(stubs []tracetest.SpanStub) {
		if len(stubs) == 0 {
			return
		}
		if err := exp.ExportSpans(ctx, tracetest.SpanStubs(stubs).Snapshots()); err != nil {
			t.Fatalf("stacktest: export traces: %v", err)
		}
	}
	br := bufio.NewReaderSize(r, 1<<20)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 1 {
			x, derr := wire.DecodeSample(line)
			if derr != nil {
				t.Fatal(derr)
			}
			spans := SampleSpans(x, s.Bundle.Dependencies[x.Model])
			roots = append(roots, spans[0])
			batch = append(batch, spans[1:]...)
			n++
			if len(batch)+len(roots) >= 512 {
				send(batch)
				batch = roots // this batch's roots lead the next one
				roots = nil
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	send(append(batch, roots...))
	deadline := time.Now().Add(5 * time.Minute)
	for s.Traces.Stats().Samples.Load()+s.Traces.Stats().Dropped[0].Load() < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("stacktest: %d of %d traces stored after 5 minutes", s.Traces.Stats().Samples.Load(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := s.Traces.Stats().Samples.Load(); got != int64(n) {
		t.Fatalf("stacktest: %d traces became %d samples", n, got)
	}
}
