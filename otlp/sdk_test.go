package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// sdkExport exports spans with the official Go SDK's OTLP/HTTP exporter
// and returns the request bodies it sent, decoded.
func sdkExport(t *testing.T, spans []sdktrace.ReadOnlySpan) []Request {
	t.Helper()
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var out []Request
	for _, b := range bodies {
		req, err := Decode(b, Protobuf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req)
	}
	return out
}

// The official Go SDK's exporter marks a span whose parent came in a
// propagated context (a caller's traceparent) as having a remote parent:
// that span is the trace's entry, and the trace is stored after the
// remote grace (15 s), not max_wait.
func TestOTelSDKSpanWithARemoteParentIsTheEntry(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "gateway"))))
	tr := tp.Tracer("waterline-test")
	// The caller's context, as the HTTP instrumentation extracts it.
	ctx := propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	t0 := ck.now().Add(-time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rctx, root := tr.Start(ctx, "POST /v1/chat", oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithTimestamp(at(0)),
		oteltrace.WithAttributes(attribute.String("http.route", "/v1/chat"), attribute.String("gen_ai.request.model", "m")))
	_, child := tr.Start(rctx, "llm_request", oteltrace.WithTimestamp(at(5)))
	child.End(oteltrace.WithTimestamp(at(90)))
	root.End(oteltrace.WithTimestamp(at(100)))
	for _, req := range sdkExport(t, rec.Ended()) {
		mustAdd(t, a, req)
	}
	ck.add(16 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples 16 s after a trace under a remote parent came, want 1", len(sk.got))
	}
	if s := sk.got[0]; !near(s.TotalMs, 100) || s.Entry != "/v1/chat" || s.RequestID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("total %v entry %q id %s", s.TotalMs, s.Entry, s.RequestID)
	}
}
