package otlp

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/waterline-dev/waterline/correlate"
)

// benchSamples are export requests of 500 spans: 100 traces of a gateway
// (request, auth, call) in front of a vLLM-style server (request, vector
// database call), each service's spans under its own resource, as an
// exporter batches them. The whole path under load is bench/otlp_test.go;
// these split the receiver's CPU between protobuf decoding and the rest.
const benchTraces, benchPerRequest = 20_000, 100

func benchRequests(b *testing.B, start time.Time) [][]byte {
	var out [][]byte
	for r := 0; r < benchTraces/benchPerRequest; r++ {
		gw := &tracepb.ScopeSpans{}
		servers := map[int]*tracepb.ScopeSpans{}
		for n := r * benchPerRequest; n < (r+1)*benchPerRequest; n++ {
			tid := make([]byte, 16)
			binary.BigEndian.PutUint64(tid, 0xab)
			binary.BigEndian.PutUint64(tid[8:], uint64(n+1))
			at := func(ms float64) uint64 { return uint64(start.UnixNano() + int64(n)*1e7 + int64(ms*1e6)) }
			span := func(id, parent uint64, name string, kind tracepb.Span_SpanKind, from, to float64, attrs map[string]any) *tracepb.Span {
				return &tracepb.Span{TraceId: tid, SpanId: id8(id), ParentSpanId: id8(parent), Name: name, Kind: kind,
					StartTimeUnixNano: at(from), EndTimeUnixNano: at(to), Attributes: kv(attrs)}
			}
			gw.Spans = append(gw.Spans,
				span(1, 0, "POST /v1/chat", server, 0, 220, map[string]any{"http.route": "/v1/chat", "tenant": fmt.Sprintf("t-%d", n%7), "http.response.status_code": 200}),
				span(2, 1, "authenticate", internal, 2, 8, nil),
				span(3, 1, "POST", client, 10, 215, map[string]any{"server.address": "vllm"}))
			ss := servers[n%12]
			if ss == nil {
				ss = &tracepb.ScopeSpans{}
				servers[n%12] = ss
			}
			ss.Spans = append(ss.Spans,
				span(4, 3, "llm_request", server, 12, 212, map[string]any{"gen_ai.request.model": "chat-7b",
					"gen_ai.latency.time_in_queue": 0.05, "gen_ai.latency.time_in_model_inference": 0.12, "batch_size": 1 + n%8}),
				span(5, 4, "vector search", client, 20, 30, map[string]any{"peer.service": "vector-db"}))
		}
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{Attributes: kv(map[string]any{
			"service.name": "gateway", "k8s.pod.name": "gw-0", "k8s.node.name": "edge-0"})}, ScopeSpans: []*tracepb.ScopeSpans{gw}}}}
		for i := range 12 {
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: kv(map[string]any{
				"service.name": "vllm", "service.version": fmt.Sprintf("v2.%d", i%2), "k8s.pod.name": fmt.Sprintf("chat-7b-%d", i),
				"k8s.node.name": fmt.Sprintf("gpu-%d", i%6)})}, ScopeSpans: []*tracepb.ScopeSpans{servers[i]}})
		}
		body, err := proto.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

// BenchmarkDecode is protobuf decoding alone, per sample (5 spans).
func BenchmarkDecode(b *testing.B) {
	bodies := benchRequests(b, time.Now().Add(-time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			req, err := Decode(body, Protobuf)
			if err != nil {
				b.Fatal(err)
			}
			release(req) // as the receiver does, once a request is mapped
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchTraces), "ns/sample")
}

// BenchmarkReceive is the receiver's whole work before the store:
// decoding, mapping the spans, filing them under their traces and
// building each trace's sample. Less BenchmarkDecode, what Waterline's
// own code costs.
func BenchmarkReceive(b *testing.B) {
	bodies := benchRequests(b, time.Now().Add(-time.Hour))
	cfg := DefaultConfig()
	cfg.Grace = 0
	b.ReportAllocs()
	for b.Loop() {
		stored := 0
		a := NewAssembler(cfg, Options{Sink: func(_ context.Context, s []correlate.Sample) error { stored += len(s); return nil }})
		for i, body := range bodies {
			req, err := Decode(body, Protobuf)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := a.Add(req); err != nil {
				b.Fatal(err)
			}
			if i%10 == 9 {
				_ = a.Flush(context.Background(), false)
			}
		}
		_ = a.Flush(context.Background(), true)
		if stored != benchTraces {
			b.Fatalf("%d samples from %d traces", stored, benchTraces)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchTraces), "ns/sample")
}
