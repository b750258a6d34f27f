package otlp

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/waterline-dev/waterline/correlate"
)

// clock is a settable clock for the assembler's grace and wait times.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// sink collects what the assembler stores.
type sink struct {
	mu   sync.Mutex
	got  []correlate.Sample
	fail error
}

func (s *sink) store(_ context.Context, xs []correlate.Sample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, xs...)
	return nil
}

func newTest(t *testing.T, cfg Config) (*Assembler, *clock, *sink) {
	t.Helper()
	ck := &clock{t: time.Now().Truncate(time.Second)}
	sk := &sink{}
	return NewAssembler(cfg, Options{Sink: sk.store, Now: ck.now, MaxAge: 24 * time.Hour, MaxFuture: time.Hour}), ck, sk
}

// tspan is a span in test shorthand: offsets in ms from the trace start.
type tspan struct {
	id, parent uint64
	name       string
	kind       tracepb.Span_SpanKind
	from, to   float64
	attrs      map[string]any
	events     map[string]float64
	failed     bool
	flags      uint32
}

func kv(m map[string]any) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for k, v := range m {
		var av *commonpb.AnyValue
		switch x := v.(type) {
		case string:
			av = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
		case int:
			av = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
		case float64:
			av = &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		}
		out = append(out, &commonpb.KeyValue{Key: k, Value: av})
	}
	return out
}

func id8(n uint64) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b
}

func traceID(n byte) []byte {
	b := make([]byte, 16)
	b[0], b[15] = 0xab, n
	return b
}

// request builds one export request, decoded: spans of one trace under one
// resource.
func request(tid []byte, start time.Time, res map[string]any, spans ...tspan) Request {
	return decodedRequest(pbRequest(tid, start, res, spans...))
}

// decoded is r as the receiver decodes it from the wire.
func decodedRequest(r *coltracepb.ExportTraceServiceRequest) Request {
	body, err := proto.Marshal(r)
	if err != nil {
		panic(err)
	}
	out, err := Decode(body, Protobuf)
	if err != nil {
		panic(err)
	}
	return out
}

// pbRequest is request as an exporter builds it, with the message types
// of go.opentelemetry.io/proto/otlp (an encoder independent of the
// decoder under test).
func pbRequest(tid []byte, start time.Time, res map[string]any, spans ...tspan) *coltracepb.ExportTraceServiceRequest {
	ss := &tracepb.ScopeSpans{}
	at := func(ms float64) uint64 { return uint64(start.UnixNano() + int64(ms*1e6)) }
	for _, s := range spans {
		sp := &tracepb.Span{TraceId: tid, SpanId: id8(s.id), ParentSpanId: id8(s.parent), Name: s.name, Kind: s.kind,
			StartTimeUnixNano: at(s.from), EndTimeUnixNano: at(s.to), Attributes: kv(s.attrs), Flags: s.flags}
		for name, ms := range s.events {
			sp.Events = append(sp.Events, &tracepb.Span_Event{Name: name, TimeUnixNano: at(ms)})
		}
		if s.failed {
			sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}
		}
		ss.Spans = append(ss.Spans, sp)
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{Attributes: kv(res)}, ScopeSpans: []*tracepb.ScopeSpans{ss}}}}
}

const (
	server   = tracepb.Span_SPAN_KIND_SERVER
	client   = tracepb.Span_SPAN_KIND_CLIENT
	internal = tracepb.Span_SPAN_KIND_INTERNAL
)

func mustAdd(t *testing.T, a *Assembler, r Request) Result {
	t.Helper()
	res, err := a.Add(r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func flush(t *testing.T, a *Assembler) {
	t.Helper()
	if err := a.Flush(context.Background(), false); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// A gateway in front of a vLLM-style server that calls a vector database:
// the server's spans arrive first (children before parents, another
// request), the gateway's after; the sample waits for Grace after the
// entry span and every millisecond lands in one stage.
func TestGatewayAndVLLMTraceBecomesOneSample(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	tid := traceID(1)
	gw := map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0", "k8s.node.name": "node-gw"}
	vllm := map[string]any{"service.name": "vllm", "service.version": "v2", "k8s.pod.name": "chat-7b-1", "k8s.node.name": "gpu-3"}
	// The model server's spans: its request span (queue and inference
	// times as attributes, in seconds) and a call to a vector database.
	mustAdd(t, a, request(tid, start, vllm,
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: 12, to: 212, attrs: map[string]any{
			"gen_ai.request.model": "chat-7b", "gen_ai.latency.time_in_queue": 0.05, "gen_ai.latency.time_in_model_inference": 0.12}},
		tspan{id: 5, parent: 4, name: "vector search", kind: client, from: 20, to: 30, attrs: map[string]any{"peer.service": "vector-db"}},
	))
	flush(t, a)
	if len(sk.got) != 0 {
		t.Fatalf("a trace without its entry span was emitted: %+v", sk.got)
	}
	mustAdd(t, a, request(tid, start, gw,
		tspan{id: 3, parent: 1, name: "POST", kind: client, from: 10, to: 215, attrs: map[string]any{"server.address": "vllm"}},
		tspan{id: 2, parent: 1, name: "authenticate", kind: internal, from: 2, to: 8},
		tspan{id: 1, name: "POST /v1/chat/completions", kind: server, from: 0, to: 220, attrs: map[string]any{
			"http.route": "/v1/chat/completions", "tenant": "acme", "http.response.status_code": 200}},
	))
	ck.add(4 * time.Second)
	flush(t, a)
	if len(sk.got) != 0 {
		t.Fatal("emitted before the grace period ended")
	}
	ck.add(2 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("want 1 sample, got %d", len(sk.got))
	}
	s := sk.got[0]
	if s.RequestID != hex.EncodeToString(tid) || !s.Time.Equal(start) || !near(s.TotalMs, 220) {
		t.Errorf("id/time/total: %s %s %v", s.RequestID, s.Time, s.TotalMs)
	}
	// Dimensions: the model server's pod, node and version (not the
	// gateway's); entry and tenant where the request came in.
	want := correlate.Sample{Model: "chat-7b", Version: "v2", Replica: "chat-7b-1", Node: "gpu-3", Tenant: "acme",
		Entry: "/v1/chat/completions", Status: "ok", Dependency: "vector-db"}
	if s.Model != want.Model || s.Version != want.Version || s.Replica != want.Replica || s.Node != want.Node ||
		s.Tenant != want.Tenant || s.Entry != want.Entry || s.Status != want.Status || s.Dependency != want.Dependency {
		t.Errorf("dimensions:\n got %+v\nwant %+v", s, want)
	}
	// gateway: 220 − (2..8 auth) − (10..215 the call) = 209 ms of 220 left
	// for the rest → 220−6−205 = 9; the call's own 205 − 200 (vLLM) = 5
	// inherits gateway: 14. auth 6. vLLM: 200 − 10 (vector db) = 190, of
	// which queue 50 and exec 120 (attributes), and 20 more exec.
	wantMs := map[correlate.Stage]float64{correlate.StageGateway: 14, correlate.StageAuth: 6, correlate.StageQueue: 50,
		correlate.StageExec: 140, correlate.StageDownstream: 10}
	sum := 0.0
	for st := correlate.Stage(0); int(st) < correlate.NumStages; st++ {
		w, ok := wantMs[st]
		if !ok {
			if !math.IsNaN(s.StagesMs[st]) {
				t.Errorf("%s: want unreported, got %v", st, s.StagesMs[st])
			}
			continue
		}
		if !near(s.StagesMs[st], w) {
			t.Errorf("%s: got %v ms, want %v", st, s.StagesMs[st], w)
		}
		sum += s.StagesMs[st]
	}
	if !near(sum, s.TotalMs) {
		t.Errorf("stages add to %v, total %v", sum, s.TotalMs)
	}
	// A retry of both requests after the trace was emitted adds nothing.
	mustAdd(t, a, request(tid, start, gw, tspan{id: 1, name: "POST /v1/chat/completions", kind: server, from: 0, to: 220}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || a.Stats().Spans[SpanLate].Load() != 1 {
		t.Errorf("retry after emission: %d samples, %d late spans", len(sk.got), a.Stats().Spans[SpanLate].Load())
	}
}

// Triton's own trace: a request span named after the model with
// QUEUE_START, and a "compute" child with the compute events.
func TestTritonEventsGiveQueueExecAndPostprocess(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	mustAdd(t, a, request(traceID(2), start, map[string]any{"k8s.pod.name": "resnet-0", "host.name": "gpu-1"},
		tspan{id: 1, name: "resnet50", kind: server, from: 0, to: 100, events: map[string]float64{"REQUEST_START": 0, "QUEUE_START": 5, "REQUEST_END": 100},
			attrs: map[string]any{"triton.model_name": "resnet50", "triton.model_version": 3}},
		tspan{id: 2, parent: 1, name: "compute", kind: server, from: 35, to: 95, events: map[string]float64{
			"COMPUTE_START": 35, "COMPUTE_INPUT_END": 40, "COMPUTE_OUTPUT_START": 85, "COMPUTE_END": 95}},
	))
	ck.add(6 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("want 1 sample, got %d", len(sk.got))
	}
	s := sk.got[0]
	if s.Model != "resnet50" || s.Version != "3" || s.Replica != "resnet-0" || s.Node != "gpu-1" {
		t.Errorf("dimensions: %+v", s)
	}
	for st, w := range map[correlate.Stage]float64{correlate.StageGateway: 10, correlate.StageQueue: 30, correlate.StageExec: 50, correlate.StagePostprocess: 10} {
		if !near(s.StagesMs[st], w) {
			t.Errorf("%s: got %v, want %v", st, s.StagesMs[st], w)
		}
	}
}

// Rejected spans are named with a reason and the first one's place; the
// valid ones of the same request are kept.
func TestInvalidSpansAreRejectedWithAReason(t *testing.T) {
	a, ck, _ := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	r := pbRequest(traceID(3), start, map[string]any{"model": "m"},
		tspan{id: 1, name: "root", kind: server, from: 0, to: 10},
		tspan{id: 2, parent: 1, name: "child", from: 5, to: 2}, // ends before it starts
	)
	spans := &r.ResourceSpans[0].ScopeSpans[0].Spans
	*spans = append(*spans, &tracepb.Span{TraceId: make([]byte, 16), SpanId: id8(9), StartTimeUnixNano: 1, EndTimeUnixNano: 2},
		&tracepb.Span{TraceId: traceID(3), StartTimeUnixNano: 1, EndTimeUnixNano: 2},
		// An end past int64's nanoseconds read as a negative total.
		&tracepb.Span{TraceId: traceID(4), SpanId: id8(1), Name: "root", StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: math.MaxUint64})
	res := mustAdd(t, a, decodedRequest(r))
	if res.Spans != 5 || res.Rejected != 4 {
		t.Fatalf("spans %d rejected %d, want 5 and 4", res.Spans, res.Rejected)
	}
	for _, want := range []string{"4 of 5 spans rejected", "end time before its start time (first: resource_spans[0].scope_spans[0].spans[1])",
		"invalid trace_id (all zero or missing) (first: resource_spans[0].scope_spans[0].spans[2])",
		"invalid span_id (all zero or missing) (first: resource_spans[0].scope_spans[0].spans[3])",
		"time past the year 2262 (first: resource_spans[0].scope_spans[0].spans[4])"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if _, spans, _ := a.Held(); spans != 1 {
		t.Errorf("held %d spans, want the 1 valid one", spans)
	}
}

// An id of the wrong length is not OTLP: the whole request is refused
// with the reason, nothing of it taken.
func TestMalformedIDFailsTheRequest(t *testing.T) {
	for _, sp := range []*tracepb.Span{
		{TraceId: []byte{1, 2, 3}, SpanId: id8(9), StartTimeUnixNano: 1, EndTimeUnixNano: 2},
		{TraceId: traceID(1), SpanId: []byte{1, 2}, StartTimeUnixNano: 1, EndTimeUnixNano: 2},
		{TraceId: traceID(1), SpanId: id8(9), ParentSpanId: []byte{7}, StartTimeUnixNano: 1, EndTimeUnixNano: 2},
	} {
		r := pbRequest(traceID(3), time.Now(), nil, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
		r.ResourceSpans[0].ScopeSpans[0].Spans = append(r.ResourceSpans[0].ScopeSpans[0].Spans, sp)
		body, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode(body, Protobuf)
		if err == nil || !strings.Contains(err.Error(), "not an OTLP/protobuf ExportTraceServiceRequest") || !strings.Contains(err.Error(), "ID") {
			t.Errorf("span %v: decoded, or an unclear error: %v", sp, err)
		}
	}
}

// A retry of spans still held is dropped quietly; traces that map to
// nothing are counted by reason.
func TestRetriesAndUnmappedTraces(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	r := func() Request {
		return request(traceID(4), start, map[string]any{"model": "m"}, tspan{id: 2, parent: 1, name: "infer", from: 1, to: 9})
	}
	mustAdd(t, a, r())
	mustAdd(t, a, r()) // a retry: the same spans decoded again
	if a.Stats().Spans[SpanDuplicate].Load() != 1 {
		t.Errorf("duplicates: %d", a.Stats().Spans[SpanDuplicate].Load())
	}
	// No attribute names the model.
	mustAdd(t, a, request(traceID(5), start, nil, tspan{id: 1, name: "root", kind: server, from: 0, to: 10}))
	ck.add(6 * time.Second)
	flush(t, a)
	if got := a.Stats().Dropped[DropNoModel].Load(); got != 1 {
		t.Errorf("no_model drops: %d", got)
	}
	// Trace 4 never gets its root; after MaxWait its topmost span stands in.
	ck.add(time.Minute)
	flush(t, a)
	if len(sk.got) != 1 || !near(sk.got[0].TotalMs, 8) {
		t.Fatalf("the rootless trace: %+v", sk.got)
	}
	// With a configured entry span that never comes, it is dropped.
	cfg := DefaultConfig()
	cfg.EntrySpan = "gateway.request"
	b, ck2, _ := newTest(t, cfg)
	mustAdd(t, b, request(traceID(6), ck2.now(), map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10}))
	ck2.add(2 * time.Minute)
	flush(t, b)
	if got := b.Stats().Dropped[DropNoEntry].Load(); got != 1 {
		t.Errorf("no_entry_span drops: %d", got)
	}
}

// The buffer holds at most MaxSpans: past it the oldest traces finish
// early — emitted if complete; else, as at MaxWait, their topmost span
// stands in for a root that was never exported, unless their flags say
// that root is local (still running: then dropped as evicted) — and
// memory per span stays small.
func TestBufferIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpans = 1000
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	complete, local := 0, 0
	for i := range 900 {
		tid := traceID(0)
		tid[1], tid[2] = byte(i>>8), byte(i)
		spans := []tspan{{id: 2, parent: 1, name: "infer", from: 1, to: 9, attrs: map[string]any{"model": "m"}}}
		switch i % 4 {
		case 0, 2: // half the traces are complete
			spans = append(spans, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
			complete++
		case 1: // a root in the same process, still running
			spans[0].flags = 0x100
			local++
		}
		mustAdd(t, a, request(tid, start, nil, spans...))
		if _, held, _ := a.Held(); held > cfg.MaxSpans {
			t.Fatalf("holding %d spans, more than %d", held, cfg.MaxSpans)
		}
	}
	flush(t, a)
	evicted := a.Stats().Dropped[DropEvicted].Load()
	standIns := 0
	for _, s := range sk.got {
		if near(s.TotalMs, 8) {
			standIns++
		}
	}
	if len(sk.got) == 0 || standIns == 0 || evicted == 0 || evicted > int64(local) {
		t.Errorf("eviction: %d emitted early (%d stood in for their root), %d dropped (%d awaited a local root)",
			len(sk.got), standIns, evicted, local)
	}
	// Every sample so far left before its grace ended: /metrics says so.
	if got := a.Stats().CutShort.Load(); got != int64(len(sk.got)) {
		t.Errorf("%d traces counted as cut short, %d emitted early", got, len(sk.got))
	}
}

// While the store refuses samples they stay pending; past MaxPending the
// receiver says busy, and once the store is back everything lands.
func TestStoreDownKeepsSamplesAndPushesBack(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	a.opt.MaxPending = 2
	sk.fail = errors.New("database down")
	start := ck.now().Add(-time.Minute)
	for i := range 3 {
		mustAdd(t, a, request(traceID(byte(10+i)), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10}))
	}
	ck.add(6 * time.Second)
	if err := a.Flush(context.Background(), false); err == nil {
		t.Fatal("flush hid the store's error")
	}
	if _, err := a.Add(request(traceID(20), start, nil)); !errors.Is(err, ErrBusy) {
		t.Fatalf("want ErrBusy while 3 samples wait, got %v", err)
	}
	sk.fail = nil
	flush(t, a)
	if len(sk.got) != 3 {
		t.Fatalf("after the store came back: %d samples", len(sk.got))
	}
}

// OTLP/JSON writes ids as hex; protobuf and JSON decode to the same spans.
func TestDecodeJSONAndProtobufAgree(t *testing.T) {
	r := pbRequest(traceID(7), time.Now(), map[string]any{"model": "m"}, tspan{id: 0x0102030405060708, parent: 9, name: "x", from: 0, to: 1})
	pb, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fromPB, err := Decode(pb, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	js := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"model","value":{"stringValue":"m"}}]},
		"scopeSpans":[{"spans":[{"traceId":"` + hex.EncodeToString(traceID(7)) + `","spanId":"0102030405060708","parentSpanId":"0000000000000009",
		"name":"x","kind":1,"startTimeUnixNano":"` + itoa(r.ResourceSpans[0].ScopeSpans[0].Spans[0].StartTimeUnixNano) + `",
		"endTimeUnixNano":` + itoa(r.ResourceSpans[0].ScopeSpans[0].Spans[0].EndTimeUnixNano) + `,"unknownField":1}]}]}]}`)
	fromJS, err := Decode(js, JSON)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromPB.d.spans[0], fromJS.d.spans[0]
	if a.id != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} || a.parent != [8]byte{7: 9} || b.kind != 1 {
		t.Errorf("ids %v %v, kind %v", a.id, a.parent, b.kind)
	}
	a.kind = b.kind                             // the protobuf request sets no kind
	a.attrs, b.attrs = attrRange{}, attrRange{} // pdata writes the resource after its spans
	if a != b || len(fromPB.d.kvs) != 1 || fromPB.d.kvs[0] != fromJS.d.kvs[0] {
		t.Errorf("JSON and protobuf differ:\n%+v %+v\n%+v %+v", a, fromPB.d.kvs, b, fromJS.d.kvs)
	}
	if _, err := Decode([]byte("{nope"), JSON); err == nil {
		t.Error("bad JSON decoded")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// The memory a held span costs, for the README's figure.
func TestMemoryPerHeldSpan(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpans = 1_000_000
	a, ck, _ := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	res := map[string]any{"service.name": "vllm", "service.version": "v2", "k8s.pod.name": "chat-7b-1", "k8s.node.name": "gpu-3"}
	reqs := make([]Request, 2000)
	for i := range reqs {
		tid := traceID(0)
		tid[1], tid[2] = byte(i>>8), byte(i)
		reqs[i] = request(tid, start, res,
			tspan{id: 2, parent: 1, name: "llm_request", kind: server, from: 1, to: 9, attrs: map[string]any{"gen_ai.request.model": "chat-7b", "gen_ai.latency.time_in_queue": 0.001}},
			tspan{id: 3, parent: 2, name: "vector search", kind: client, from: 2, to: 3, attrs: map[string]any{"peer.service": "vector-db"}},
			tspan{id: 4, parent: 1, name: "authenticate", kind: internal, from: 0, to: 1},
			tspan{id: 5, parent: 1, name: "route", kind: internal, from: 0, to: 1})
	}
	for _, r := range reqs {
		mustAdd(t, a, r) // each request is emptied once filed
	}
	reqs = nil
	_, spans, _ := a.Held()
	// The held spans' cost is what dropping the assembler frees: the
	// requests' strings were freed as they were filed, and two GCs empty
	// sync.Pool's victim cache of pdata's structs.
	heap := func() float64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	with := heap()
	runtime.KeepAlive(a)
	a = nil
	per := (with - heap()) / float64(spans)
	t.Logf("%d spans held: %.0f bytes per span", spans, per)
	if per > 1024 {
		t.Errorf("a held span costs %.0f bytes; the README promises well under 1 KB", per)
	}
}

// Requests mapped and buffered concurrently while flushes build and store
// samples (outside the buffer's lock): every trace becomes exactly one
// sample, retries included. Run under -race by make test.
func TestConcurrentAddsAndFlushes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Grace = 0
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	const senders, traces = 4, 200
	done := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-done:
				return
			default:
				if err := a.Flush(context.Background(), false); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Go(func() {
			for n := 0; n < traces; n++ {
				tid := traceID(byte(s))
				tid[1], tid[2] = byte(n>>8), byte(n)
				// Children first, then the entry span, then a retry of both.
				// Each is decoded anew, as a retried export is: Add owns it.
				kids := func() Request {
					return request(tid, start, map[string]any{"k8s.pod.name": "chat-7b-" + itoa(uint64(s))},
						tspan{id: 2, parent: 1, name: "llm_request", kind: server, from: 1, to: 9, attrs: map[string]any{"gen_ai.request.model": "chat-7b"}})
				}
				root := func() Request {
					return request(tid, start, map[string]any{"service.name": "gateway"},
						tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 10, attrs: map[string]any{"tenant": "t" + itoa(uint64(n%3))}})
				}
				for _, r := range []func() Request{kids, root, kids, root} {
					if _, err := a.Add(r()); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	<-flushed
	if err := a.Flush(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range sk.got {
		if seen[s.RequestID] {
			t.Fatalf("trace %s stored twice", s.RequestID)
		}
		seen[s.RequestID] = true
		if s.Model != "chat-7b" || !strings.HasPrefix(s.Replica, "chat-7b-") || !near(s.TotalMs, 10) {
			t.Errorf("sample %+v", s)
		}
	}
	if len(seen) != senders*traces {
		t.Errorf("%d samples from %d traces", len(seen), senders*traces)
	}
}

// Run builds the next due samples while the store is still taking the
// last ones, retries what the store refused, and stores the rest when it
// stops; every trace is stored once.
func TestRunBuildsWhileStoring(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Grace = 0
	ck := &clock{t: time.Now().Truncate(time.Second)}
	var (
		mu      sync.Mutex
		got     = map[string]int{}
		calls   int
		release = make(chan struct{})
	)
	entered := make(chan struct{}, 16)
	sinkFn := func(ctx context.Context, xs []correlate.Sample) error {
		entered <- struct{}{}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1:
			<-release // the store is slow
		case 2:
			return errors.New("database down") // then refuses once
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range xs {
			got[s.RequestID]++
		}
		return nil
	}
	a := NewAssembler(cfg, Options{Sink: sinkFn, Now: ck.now, MaxAge: 24 * time.Hour, MaxFuture: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { a.Run(ctx, 5*time.Millisecond); close(ran) }()
	start := ck.now().Add(-time.Minute)
	root := func(i int) Request {
		return request(traceID(byte(40+i)), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
	}
	mustAdd(t, a, root(0))
	<-entered // the first sample is being stored, slowly
	mustAdd(t, a, root(1))
	mustAdd(t, a, root(2))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, pending := a.Held(); pending == 3 {
			break // two built while the store was busy with the first
		}
		if time.Now().After(deadline) {
			t.Fatal("no samples built while the store was busy")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for a.Stats().Samples.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("stored %d of 3 samples", a.Stats().Samples.Load())
		}
		time.Sleep(time.Millisecond)
	}
	mustAdd(t, a, root(3)) // due when Run stops: the last flush stores it
	cancel()
	<-ran
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || a.Stats().SinkErrors.Load() != 1 {
		t.Fatalf("stored %v, %d sink errors; want 4 traces once each after 1 error", got, a.Stats().SinkErrors.Load())
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("trace %s stored %d times", id, n)
		}
	}
}

// A trace of more spans than build's stack arrays hold, calling more
// dependencies than its short list starts with: the downstream time is
// summed and the dependency with the most of it is named.
func TestLargeTraceWithManyDependencies(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	spans := []tspan{{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 500, attrs: map[string]any{"model": "m"}}}
	want := 0.0
	for i := range 24 {
		dep, ms := fmt.Sprintf("dep-%d", i%6), 2.0
		if i%6 == 3 {
			ms = 5 // dep-3 takes the most: 4 calls of 5 ms
		}
		from := float64(10 + 20*i)
		spans = append(spans, tspan{id: uint64(2 + i), parent: 1, name: "call", kind: client, from: from, to: from + ms,
			attrs: map[string]any{"peer.service": dep}})
		want += ms
	}
	mustAdd(t, a, request(traceID(60), start, nil, spans...))
	ck.add(time.Minute) // past grace
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	if s.Dependency != "dep-3" || !near(s.StagesMs[correlate.StageDownstream], want) || !near(s.TotalMs, 500) {
		t.Errorf("dependency %q, downstream %v ms (want dep-3, %v), total %v", s.Dependency, s.StagesMs[correlate.StageDownstream], want, s.TotalMs)
	}
}

// Samples the store has taken but not yet stored still count against
// MaxPending: a slow store pushes back as a refusing one does.
func TestSlowStoreCountsAgainstMaxPending(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Grace = 0
	ck := &clock{t: time.Now().Truncate(time.Second)}
	entered, release := make(chan struct{}), make(chan struct{})
	a := NewAssembler(cfg, Options{MaxPending: 2, Now: ck.now, MaxAge: 24 * time.Hour, MaxFuture: time.Hour,
		Sink: func(context.Context, []correlate.Sample) error { close(entered); <-release; return nil }})
	start := ck.now().Add(-time.Minute)
	root := func(i int) Request {
		return request(traceID(byte(80+i)), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
	}
	mustAdd(t, a, root(0))
	mustAdd(t, a, root(1))
	flushed := make(chan error)
	go func() { flushed <- a.Flush(context.Background(), false) }()
	<-entered // both taken by the store, which hangs
	if _, err := a.Add(root(2)); !errors.Is(err, ErrBusy) {
		t.Errorf("want ErrBusy while the store holds 2 samples, got %v", err)
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	mustAdd(t, a, root(2))
}

// With Run, Add answers once the spans are checked; Run's filer maps and
// files them meanwhile. Queued spans count as held; past maxQueued
// waiting requests Add files the queue itself, so the queue stays bounded.
func TestRunFilesAfterAddAnswers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Grace = 0
	a, ck, sk := newTest(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { a.Run(ctx, time.Hour); close(ran) }()
	defer func() { cancel(); <-ran }()
	for !a.running.Load() {
		time.Sleep(time.Millisecond)
	}
	start := ck.now().Add(-time.Minute)
	req := func(n int) Request {
		return request(traceID(byte(n)), start, map[string]any{"model": "m"},
			tspan{id: 1, name: "root", kind: server, from: 0, to: 10}, tspan{id: 2, parent: 1, name: "exec", from: 1, to: 9})
	}
	a.fileMu.Lock() // the filer is busy
	for n := 1; n <= maxQueued; n++ {
		if res := mustAdd(t, a, req(n)); res.Spans != 2 || res.Rejected != 0 {
			t.Fatalf("request %d: %+v", n, res)
		}
	}
	if _, spans, _ := a.Held(); spans != 2*maxQueued {
		t.Errorf("held %d spans while %d requests wait, want %d", spans, maxQueued, 2*maxQueued)
	}
	// One more is past the bound: its Add files, after the busy filer.
	added := make(chan struct{})
	go func() { mustAdd(t, a, req(maxQueued+1)); close(added) }()
	select {
	case <-added:
		t.Fatalf("Add returned with %d requests queued and the filer busy", maxQueued+1)
	case <-time.After(100 * time.Millisecond):
	}
	a.fileMu.Unlock()
	<-added
	flush(t, a)
	if len(sk.got) != maxQueued+1 {
		t.Fatalf("%d samples from %d traces", len(sk.got), maxQueued+1)
	}
	if traces, spans, _ := a.Held(); traces != 0 || spans != 0 {
		t.Errorf("after the flush %d traces and %d spans are held", traces, spans)
	}
	// The filer alone files, without a flush, soon after Add answers.
	mustAdd(t, a, req(50))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if traces, _, _ := a.Held(); traces == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run's filer did not file a queued request")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Spans past max_spans_per_trace are counted as rejected, not kept; the
// answer (given before filing) does not name them.
func TestSpansPastTheTraceLimitAreRejected(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpansPerTrace = 3
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	spans := []tspan{{id: 1, name: "root", kind: server, from: 0, to: 10}}
	for i := uint64(2); i <= 6; i++ {
		spans = append(spans, tspan{id: i, parent: 1, name: "exec", from: 1, to: 2})
	}
	if res := mustAdd(t, a, request(traceID(1), start, map[string]any{"model": "m"}, spans...)); res.Rejected != 0 {
		t.Errorf("the answer rejected %d spans", res.Rejected)
	}
	if got := a.Stats().Spans[SpanRejected].Load(); got != 3 {
		t.Errorf("%d spans rejected, want 3 past the limit of 3", got)
	}
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
}

// Requests queued as Run stops are filed and stored by its final flush:
// here Add comes while Run waits for a slow store to finish.
func TestRunStoppingFilesWhatIsQueued(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Grace = 0
	ck := &clock{t: time.Now().Truncate(time.Second)}
	var (
		mu    sync.Mutex
		got   int
		calls int
	)
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	sinkFn := func(ctx context.Context, xs []correlate.Sample) error {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			entered <- struct{}{}
			<-release // the store is slow
		}
		mu.Lock()
		got += len(xs)
		mu.Unlock()
		return nil
	}
	a := NewAssembler(cfg, Options{Sink: sinkFn, Now: ck.now, MaxAge: 24 * time.Hour, MaxFuture: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { a.Run(ctx, 5*time.Millisecond); close(ran) }()
	for !a.running.Load() {
		time.Sleep(time.Millisecond)
	}
	start := ck.now().Add(-time.Minute)
	req := func(n int) Request {
		return request(traceID(byte(n)), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
	}
	mustAdd(t, a, req(1))
	<-entered // its sample is being stored
	cancel()
	time.Sleep(50 * time.Millisecond) // Run waits for the store; its filer has gone
	mustAdd(t, a, req(2))
	close(release)
	<-ran
	mu.Lock()
	defer mu.Unlock()
	if got != 2 {
		t.Fatalf("stored %d samples, want 2", got)
	}
}

// TestTracesUnderTheRetentionFloorAreDropped: a trace older than what the
// samples retention keeps (Options.Oldest) is dropped as out of the window
// and counted, not stored for maintenance to drop; a newer one is stored.
func TestTracesUnderTheRetentionFloorAreDropped(t *testing.T) {
	ck := &clock{t: time.Now().Truncate(time.Second)}
	sk := &sink{}
	floor := ck.now().Add(-time.Hour)
	a := NewAssembler(DefaultConfig(), Options{Sink: sk.store, Now: ck.now, MaxAge: 24 * time.Hour, MaxFuture: time.Hour,
		Oldest: func() time.Time { return floor }})
	for i, start := range []time.Time{floor.Add(-time.Minute), floor.Add(time.Minute)} {
		mustAdd(t, a, request(traceID(byte(40+i)), start, map[string]any{"model": "m"},
			tspan{id: 1, name: "root", kind: server, from: 0, to: 10}))
	}
	ck.add(6 * time.Second)
	flush(t, a)
	if got := a.Stats().Dropped[DropOutWindow].Load(); got != 1 {
		t.Errorf("out_of_window drops: %d, want the trace under the floor", got)
	}
	if len(sk.got) != 1 || sk.got[0].Time.Before(floor) {
		t.Fatalf("stored %+v, want only the trace after the floor", sk.got)
	}
}

// The entry span is admitted past max_spans_per_trace: exporters send a
// root last (it ends last), and a trace whose root was cut would be
// stored with a child's time as its total.
func TestEntrySpanAdmittedPastTheTraceLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpansPerTrace = 3
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	var children []tspan
	for i := uint64(2); i <= 6; i++ {
		children = append(children, tspan{id: i, parent: 1, name: "exec", from: 1, to: 2})
	}
	mustAdd(t, a, request(traceID(1), start, map[string]any{"model": "m"}, children...))
	mustAdd(t, a, request(traceID(1), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 2000}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples, want 1", len(sk.got))
	}
	if got := sk.got[0].TotalMs; got != 2000 {
		t.Errorf("total %v ms, want the root's 2000", got)
	}
}

// model_aliases renames a model as spans name it (vLLM's served name)
// onto the fleet's, as pull does for curves.
func TestModelAliasesRenameSpansModel(t *testing.T) {
	cfg, err := ParseConfig("w.yaml", []byte("model_aliases: {meta-llama/Llama-3.1-8B-Instruct: llama-3-8b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	mustAdd(t, a, request(traceID(7), start, map[string]any{"gen_ai.request.model": "meta-llama/Llama-3.1-8B-Instruct"},
		tspan{id: 1, name: "root", kind: server, from: 0, to: 100}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || sk.got[0].Model != "llama-3-8b" {
		t.Fatalf("samples %+v, want one of model llama-3-8b", sk.got)
	}
}

// A trace no inference request can be — an entry span over a day — is
// dropped as implausible, and a sample rate past correlate.MaxSampleRate
// is ignored: either would overflow a page's or an analysis' sums.
func TestImplausibleTracesAreDropped(t *testing.T) {
	ck := &clock{t: time.Now().Truncate(time.Second)}
	sk := &sink{}
	a := NewAssembler(DefaultConfig(), Options{Sink: sk.store, Now: ck.now, MaxAge: 48 * time.Hour, MaxFuture: time.Hour})
	mustAdd(t, a, request(traceID(60), ck.now().Add(-26*time.Hour), map[string]any{"model": "m"},
		tspan{id: 1, name: "root", kind: server, from: 0, to: 25 * 3600 * 1000}))
	mustAdd(t, a, request(traceID(61), ck.now().Add(-time.Minute), map[string]any{"model": "m"},
		tspan{id: 1, name: "root", kind: server, from: 0, to: 10, attrs: map[string]any{"sample_rate": 1e308}}))
	ck.add(6 * time.Second)
	flush(t, a)
	if got := a.Stats().Dropped[DropImplausible].Load(); got != 1 {
		t.Errorf("implausible drops: %d, want the day-long trace", got)
	}
	if len(sk.got) != 1 || sk.got[0].SampleRate != 1 || sk.got[0].TotalMs != 10 {
		t.Fatalf("stored %+v, want the 10 ms trace with a sample rate of 1", sk.got)
	}
}

// What a span brings is bounded by the span limits, whatever the request
// holds: a span with a million stage events keeps a few of them (one span
// held was 98 MB), and a trace sent far past its span limit in one request
// gets room for the limit, not for everything sent (53 MB for "1,000
// spans").
func TestOneSpanOrTraceCannotHoldUnboundedMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpansPerTrace = 3
	a, ck, _ := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	r := pbRequest(traceID(1), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10})
	sp := r.ResourceSpans[0].ScopeSpans[0].Spans[0]
	for i := range 10000 {
		sp.Events = append(sp.Events, &tracepb.Span_Event{Name: "QUEUE_START", TimeUnixNano: sp.StartTimeUnixNano + uint64(i)})
	}
	for i := uint64(2); i <= 5000; i++ {
		r.ResourceSpans[0].ScopeSpans[0].Spans = append(r.ResourceSpans[0].ScopeSpans[0].Spans, &tracepb.Span{TraceId: traceID(2), SpanId: id8(i),
			ParentSpanId: id8(1), Name: "exec", StartTimeUnixNano: sp.StartTimeUnixNano, EndTimeUnixNano: sp.EndTimeUnixNano})
	}
	mustAdd(t, a, decodedRequest(r))
	a.mu.Lock()
	defer a.mu.Unlock()
	var tid1, tid2 [16]byte
	copy(tid1[:], traceID(1))
	copy(tid2[:], traceID(2))
	if tr := a.byID[tid1]; tr == nil || len(tr.spans) != 1 || len(tr.spans[0].events) > maxSpanEvents {
		t.Errorf("the span with 10,000 events kept %d", len(tr.spans[0].events))
	}
	if tr := a.byID[tid2]; tr == nil || cap(tr.spans) > cfg.MaxSpansPerTrace+1 {
		t.Errorf("a trace of 4,999 spans past its limit of 3 holds room for %d", cap(tr.spans))
	}
}

// Samples of answered exports that cannot be stored before Run stops are
// lost: the log says so, with how many (they vanished without a word).
func TestRunStoppingWithTheStoreDownSaysWhatIsLost(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	cfg := DefaultConfig()
	cfg.Grace = 0
	sk := &sink{fail: errors.New("database down")}
	a := NewAssembler(cfg, Options{Sink: sk.store, MaxAge: 24 * time.Hour, MaxFuture: time.Hour,
		Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, 10*time.Millisecond); close(done) }()
	start := time.Now().Add(-time.Minute)
	for i := range 3 {
		mustAdd(t, a, request(traceID(byte(30+i)), start, map[string]any{"model": "m"}, tspan{id: 1, name: "root", kind: server, from: 0, to: 10}))
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "they are lost") || !strings.Contains(logs.String(), "samples=3") {
		t.Errorf("log: %q", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// stageSum adds a sample's timed stages.
func stageSum(s correlate.Sample) float64 {
	sum := 0.0
	for _, v := range s.StagesMs {
		if !math.IsNaN(v) {
			sum += v
		}
	}
	return sum
}

// TestStagesAddUpToTheTotal: parallel calls share the time they cover, and
// a child outside its parent's window (clock skew, or outliving it) counts
// only within it: the stages add up to the request's total. Parallel
// calls of 50 and 80 ms under a 100 ms request read 130 ms downstream.
func TestStagesAddUpToTheTotal(t *testing.T) {
	res := map[string]any{"service.name": "app", "k8s.pod.name": "app-0"}
	root := tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"gen_ai.request.model": "m"}}
	for _, tc := range []struct {
		name       string
		kids       []tspan
		stage      correlate.Stage
		want, rest float64 // ms in stage, and in gateway
	}{
		{"parallel calls", []tspan{
			{id: 2, parent: 1, name: "GET", kind: client, from: 10, to: 60, attrs: map[string]any{"peer.service": "vector-db"}},
			{id: 3, parent: 1, name: "GET", kind: client, from: 10, to: 90, attrs: map[string]any{"peer.service": "feature-store"}}},
			correlate.StageDownstream, 80, 20},
		{"child starting before its parent", []tspan{{id: 2, parent: 1, name: "llm_request", kind: internal, from: -20, to: 80}},
			correlate.StageExec, 80, 20},
		{"child outliving its parent", []tspan{{id: 2, parent: 1, name: "llm_request", kind: internal, from: 50, to: 150}},
			correlate.StageExec, 50, 50},
	} {
		a, ck, sk := newTest(t, DefaultConfig())
		mustAdd(t, a, request(traceID(1), ck.now().Add(-time.Minute), res, append([]tspan{root}, tc.kids...)...))
		ck.add(10 * time.Second)
		flush(t, a)
		if len(sk.got) != 1 {
			t.Fatalf("%s: %d samples", tc.name, len(sk.got))
		}
		s := sk.got[0]
		if !near(stageSum(s), s.TotalMs) || !near(s.StagesMs[tc.stage], tc.want) || !near(s.StagesMs[correlate.StageGateway], tc.rest) {
			t.Errorf("%s: %s %.1f ms, gateway %.1f ms, stages sum %.1f of a %.1f ms request; want %s %.0f, gateway %.0f",
				tc.name, tc.stage, s.StagesMs[tc.stage], s.StagesMs[correlate.StageGateway], stageSum(s), s.TotalMs, tc.stage, tc.want, tc.rest)
		}
	}
}

// The model server's dimensions come from the span that gave the server
// stages most time: a gateway's own rate-limit queue span named the
// gateway's pod as the replica. And the status is the entry span's: a
// failed call the gateway handled (a 503 on a client span) made the
// request an error.
func TestServerDimensionsAndStatusFromTheRightSpans(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	tid := traceID(1)
	gw := map[string]any{"service.name": "gateway", "service.version": "gw-1.4", "k8s.pod.name": "gw-0", "k8s.node.name": "node-gw"}
	vllm := map[string]any{"service.name": "vllm", "service.version": "v2", "k8s.pod.name": "vllm-0", "k8s.node.name": "gpu-3"}
	mustAdd(t, a, request(tid, start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"gen_ai.request.model": "m"}}, // no status code of its own
		tspan{id: 2, parent: 1, name: "ratelimit queue", kind: internal, from: 1, to: 8},
		tspan{id: 3, parent: 1, name: "POST", kind: client, from: 9, to: 10, attrs: map[string]any{"server.address": "cache", "http.response.status_code": 503}},
		tspan{id: 4, parent: 1, name: "POST", kind: client, from: 10, to: 95, attrs: map[string]any{"server.address": "vllm"}},
	))
	mustAdd(t, a, request(tid, start, vllm, tspan{id: 5, parent: 4, name: "llm_request", kind: server, from: 12, to: 93}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	if s.Replica != "vllm-0" || s.Version != "v2" || s.Node != "gpu-3" || s.Status != "ok" {
		t.Errorf("replica %q version %q node %q status %q; want vllm-0, v2, gpu-3, ok", s.Replica, s.Version, s.Node, s.Status)
	}
}

// A request longer than MaxWait: its children end and are exported first,
// the root 90 s later. With the SDK's span flags saying their parent is
// local, the trace waits for it and becomes one right sample; the topmost
// child stood in for it (a wrong total, no entry) and the root was thrown
// away as late. Without the flags the stand-in is kept (the parent may be
// a caller that exports nothing).
func TestLongRequestWaitsForItsLocalRoot(t *testing.T) {
	const hasIsRemote = 0x100
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now()
	tid := traceID(7)
	res := map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"}
	mustAdd(t, a, request(tid, start, res,
		tspan{id: 2, parent: 1, name: "authenticate", kind: internal, from: 0, to: 5, flags: hasIsRemote},
		tspan{id: 3, parent: 1, name: "llm_request", kind: internal, from: 6, to: 89000, flags: hasIsRemote, attrs: map[string]any{"gen_ai.request.model": "m"}}))
	for range 3 { // past MaxWait, the root still running
		ck.add(30 * time.Second)
		flush(t, a)
	}
	if len(sk.got) != 0 {
		t.Fatalf("emitted before its root came: %+v", sk.got)
	}
	mustAdd(t, a, request(tid, start, res,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 90000, attrs: map[string]any{"http.route": "/v1/chat"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || !near(sk.got[0].TotalMs, 90000) || sk.got[0].Entry != "/v1/chat" {
		t.Fatalf("long request: %+v, want one sample of 90 s through /v1/chat", sk.got)
	}
	// Not for ever: a root that never comes is stood in for after ten
	// MaxWaits.
	mustAdd(t, a, request(traceID(8), ck.now(), res,
		tspan{id: 3, parent: 1, name: "llm_request", kind: internal, from: 6, to: 1000, flags: hasIsRemote, attrs: map[string]any{"gen_ai.request.model": "m"}}))
	for range 21 {
		ck.add(30 * time.Second)
		flush(t, a)
	}
	if len(sk.got) != 2 {
		t.Errorf("a trace whose local root never came: %d samples after 10 min, want it stood in for", len(sk.got)-1)
	}
}

// A gRPC entry span that ended with DEADLINE_EXCEEDED (status code 4) is a
// timeout, not an error.
func TestGRPCDeadlineIsATimeout(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	mustAdd(t, a, request(traceID(1), ck.now().Add(-time.Minute), map[string]any{"k8s.pod.name": "p"},
		tspan{id: 1, name: "inference.GRPCInferenceService/ModelInfer", kind: server, from: 0, to: 100, failed: true,
			attrs: map[string]any{"model": "m", "rpc.grpc.status_code": 4}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || sk.got[0].Status != "timeout" {
		t.Fatalf("samples %+v, want one timeout", sk.got)
	}
}

// A model server whose resource names no version, pod or node of its own
// (vLLM's default resource is just service.name) has none: the
// gateway's version, pod and node were stored as the model's version,
// replica and node, a gateway deploy looking like a model rollout.
func TestServerDimensionsNeverComeFromTheGateway(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	tid := traceID(1)
	gw := map[string]any{"service.name": "gateway", "service.version": "gw-1.4", "k8s.pod.name": "gw-0", "k8s.node.name": "node-gw"}
	mustAdd(t, a, request(tid, start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat", "batch_size": 4}},
		tspan{id: 2, parent: 1, name: "ratelimit queue", kind: internal, from: 1, to: 4},
		tspan{id: 3, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}},
	))
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm"},
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: 6, to: 94,
			attrs: map[string]any{"gen_ai.response.model": "llama-8b", "gen_ai.latency.time_in_queue": 0.01}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	if s.Model != "llama-8b" || s.Version != "" || s.Replica != "" || s.Node != "" || s.BatchSize != 0 || s.Entry != "/v1/chat" {
		t.Errorf("model %q version %q replica %q node %q batch %d entry %q; want llama-8b with no version, replica, node or batch size, /v1/chat",
			s.Model, s.Version, s.Replica, s.Node, s.BatchSize, s.Entry)
	}
	// The model server's own spans, in another export, still name its pod.
	tid = traceID(2)
	mustAdd(t, a, request(tid, start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 3, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}},
	))
	vllm := map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"}
	mustAdd(t, a, request(tid, start, vllm,
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: 6, to: 94, attrs: map[string]any{"gen_ai.response.model": "llama-8b"}}))
	mustAdd(t, a, request(tid, start, vllm,
		tspan{id: 5, parent: 4, name: "sampler", kind: internal, from: 80, to: 90, attrs: map[string]any{"batch_size": 8}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 2 {
		t.Fatalf("%d samples", len(sk.got))
	}
	if s := sk.got[1]; s.Replica != "vllm-0" || s.Version != "" || s.Node != "" || s.BatchSize != 8 {
		t.Errorf("replica %q version %q node %q batch %d; want vllm-0, none, none, 8", s.Replica, s.Version, s.Node, s.BatchSize)
	}
}

// Triton names the model's version on its model span
// (triton.model_version); the resource's service.version (Triton's docs
// set resource=service.version=1, the OTel operator injects the image
// tag) is the server's, and won: a model rollout was invisible.
func TestModelVersionBeatsServiceVersion(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	res := map[string]any{"service.name": "triton-inference-server", "service.version": "24.05-py3", "k8s.pod.name": "triton-0"}
	mustAdd(t, a, request(traceID(2), start, res,
		tspan{id: 9, name: "InferRequest", kind: server, from: 0, to: 100},
		tspan{id: 1, parent: 9, name: "resnet50", kind: server, from: 1, to: 99, events: map[string]float64{"REQUEST_START": 1, "QUEUE_START": 5, "REQUEST_END": 99},
			attrs: map[string]any{"triton.model_name": "resnet50", "triton.model_version": 3}},
		tspan{id: 2, parent: 1, name: "compute", kind: server, from: 35, to: 95, events: map[string]float64{
			"COMPUTE_START": 35, "COMPUTE_INPUT_END": 40, "COMPUTE_OUTPUT_START": 85, "COMPUTE_END": 95}},
	))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	if s := sk.got[0]; s.Version != "3" || s.Replica != "triton-0" {
		t.Errorf("version %q replica %q, want the model's version 3 (triton.model_version), triton-0", s.Version, s.Replica)
	}
}

// An old-conventions server span (Python instrumentations' http.target,
// Go otelhttp before http.route) names the target with its query: the
// entry kept it whole, secrets (api_key=…) and unbounded values in a
// dimension. The query and fragment are cut off.
func TestEntryDropsTheQueryString(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	for i, attrs := range []map[string]any{
		{"http.target": "/v1/embed?user=u1&api_key=sk-secret"},
		{"http.target": "/v1/embed?user=u2&api_key=sk-secret"},
		{"url.path": "/v1/embed#frag"},
		{"http.target": "/v1/embed"},
	} {
		attrs["model"] = "e5"
		mustAdd(t, a, request(traceID(byte(i+1)), start, map[string]any{"service.name": "api"},
			tspan{id: 1, name: "HTTP POST", kind: server, from: 0, to: 50, attrs: attrs}))
	}
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 4 {
		t.Fatalf("%d samples", len(sk.got))
	}
	for _, s := range sk.got {
		if s.Entry != "/v1/embed" {
			t.Errorf("entry %q, want /v1/embed", s.Entry)
		}
	}
}

// Go otelhttp names the server span after the handler's operation
// (otelhttp.NewHandler(mux, "inference-gateway")): the exec rule took the
// gateway's own time for model execution.
func TestGatewayNamedInferenceIsNotExec(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	tid := traceID(4)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "inference-gateway", "k8s.pod.name": "gw-0"},
		tspan{id: 1, name: "inference-gateway", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 2, parent: 1, name: "POST", kind: client, from: 60, to: 95, attrs: map[string]any{"server.address": "vllm"}},
	))
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"},
		tspan{id: 3, parent: 2, name: "llm_request", kind: server, from: 61, to: 94, attrs: map[string]any{"gen_ai.response.model": "m"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	if !near(s.StagesMs[correlate.StageExec], 33) || !near(s.StagesMs[correlate.StageGateway], 67) || s.Replica != "vllm-0" {
		t.Errorf("exec %v gateway %v replica %q; want 33 (llm_request), 67, vllm-0",
			s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageGateway], s.Replica)
	}
}

// Knative's queue-proxy (KServe serverless) wraps every request it
// proxies in a span named queue_proxy, its wait in queue_wait: the queue
// rule took the wrapper, and the whole request was queue time.
func TestKnativeQueueProxyIsNotAQueue(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	mustAdd(t, a, request(traceID(7), start, map[string]any{"service.name": "sklearn-iris-predictor", "k8s.pod.name": "p-0"},
		tspan{id: 1, name: "queue_proxy", kind: server, from: 0, to: 100},
		tspan{id: 2, parent: 1, name: "queue_wait", kind: internal, from: 1, to: 2},
		tspan{id: 3, parent: 1, name: "POST /v1/models/sklearn-iris:predict", kind: server, from: 3, to: 99,
			attrs: map[string]any{"model": "sklearn-iris", "http.route": "/v1/models/{name}:predict"}},
	))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	if q := sk.got[0].StagesMs[correlate.StageQueue]; !near(q, 1) {
		t.Errorf("queue %v ms of a request that queued 1 ms", q)
	}
}

// A caller that propagates its context (another service, an ingress
// exporting elsewhere) leaves no span of the trace a root: the span whose
// flags say its parent is remote, and whose parent is not in the trace,
// is the entry. The trace waited MaxWait (a minute); it now waits the
// remote grace (15 s). The model server's span also has a remote parent,
// the gateway's call: it stands in only until the gateway's spans come —
// in the gateway's own export, 8 s later here, past the 5 s grace a root
// waits — and each entry that comes restarts the wait.
func TestEntryWithARemoteParentWaitsRemoteGrace(t *testing.T) {
	const remote, local = 0x300, 0x100
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Second)
	tid := traceID(9)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"},
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: 6, to: 90, flags: remote,
			attrs: map[string]any{"gen_ai.request.model": "m"}}))
	ck.add(8 * time.Second)
	flush(t, a)
	if len(sk.got) != 0 {
		t.Fatalf("emitted %v 8 s after the model server's span, before its caller's", sk.got)
	}
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0"},
		tspan{id: 2, parent: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, flags: remote,
			attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 3, parent: 2, name: "POST", kind: client, from: 5, to: 95, flags: local, attrs: map[string]any{"server.address": "vllm"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 0 {
		t.Fatalf("emitted %v 18 s after the model server's span, 10 s after the gateway's", sk.got)
	}
	ck.add(6 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples after the gateway's remote grace, want 1", len(sk.got))
	}
	if s := sk.got[0]; !near(s.TotalMs, 100) || s.Entry != "/v1/chat" || s.Replica != "vllm-0" || !near(s.StagesMs[correlate.StageExec], 84) {
		t.Errorf("total %v entry %q replica %q exec %v; want the gateway's 100 ms through /v1/chat, vllm-0, 84",
			s.TotalMs, s.Entry, s.Replica, s.StagesMs[correlate.StageExec])
	}
	// The model server's clock behind the gateway's: its span starts
	// first, and is still not the entry (its parent is here).
	tid = traceID(10)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"},
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: -2, to: 82, flags: remote,
			attrs: map[string]any{"gen_ai.request.model": "m"}}))
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0"},
		tspan{id: 2, parent: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, flags: remote,
			attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 3, parent: 2, name: "POST", kind: client, from: 5, to: 95, flags: local, attrs: map[string]any{"server.address": "vllm"}}))
	ck.add(16 * time.Second)
	flush(t, a)
	if len(sk.got) != 2 || !near(sk.got[1].TotalMs, 100) || sk.got[1].Entry != "/v1/chat" {
		t.Errorf("skewed: %+v, want a second sample of 100 ms through /v1/chat", sk.got[1:])
	}
}

// Under load such traces took the buffer until eviction dropped them;
// now they leave after the remote grace, and what eviction takes becomes
// a sample.
func TestRemoteParentTracesAreNotEvictedUnderLoad(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSpans = 1000
	a, ck, sk := newTest(t, cfg)
	const remote, local = 0x300, 0x100
	// 100 requests/s of 4 spans for 5 s: 2,000 spans in 5 s.
	n := 0
	for range 5 {
		for range 100 {
			n++
			tid := traceID(0)
			tid[1], tid[2] = byte(n>>8), byte(n)
			mustAdd(t, a, request(tid, ck.now().Add(-time.Second), map[string]any{"service.name": "gw"},
				tspan{id: 2, parent: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, flags: remote,
					attrs: map[string]any{"http.route": "/v1/chat", "gen_ai.request.model": "m"}},
				tspan{id: 3, parent: 2, name: "authenticate", kind: internal, from: 1, to: 5, flags: local},
				tspan{id: 4, parent: 2, name: "llm_request", kind: internal, from: 6, to: 95, flags: local},
				tspan{id: 5, parent: 4, name: "decode", kind: internal, from: 10, to: 90, flags: local},
			))
		}
		ck.add(time.Second)
		flush(t, a)
	}
	ck.add(2 * time.Minute)
	flush(t, a)
	if ev := a.Stats().Dropped[DropEvicted].Load(); ev > 0 || len(sk.got) != n {
		t.Errorf("%d of %d complete traces dropped as evicted; %d stored", ev, n, len(sk.got))
	}
	for _, s := range sk.got {
		if !near(s.TotalMs, 100) || s.Entry != "/v1/chat" {
			t.Fatalf("total %v entry %q, want 100 ms through /v1/chat", s.TotalMs, s.Entry)
		}
	}
}

// The model server's clock runs 15 ms ahead of the gateway's (NTP across
// hosts): its 40 ms span under the gateway's 42 ms call starts 16 ms into
// it. Clipped to the call, 15 ms of model time (queue its attributes
// report among it) went to the gateway. A span of another process that
// does not fit its parent is moved into it first, centred, as Jaeger's
// clock skew adjuster does, and its own process's spans with it; one
// longer than its parent cannot be placed and is only clipped.
func TestClockSkewBetweenProcessesIsAdjusted(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	gw := map[string]any{"service.name": "gateway"}
	vllm := map[string]any{"service.name": "vllm"}
	gateway := func(tid []byte) {
		mustAdd(t, a, request(tid, start, gw,
			tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 50, attrs: map[string]any{"http.route": "/v1/chat"}},
			tspan{id: 2, parent: 1, name: "POST", kind: client, from: 4, to: 46, attrs: map[string]any{"server.address": "vllm"}},
		))
	}
	// Really 5..45 on the gateway's clock, with a call to a vector
	// database 25..30 (40..45 on the model server's clock).
	gateway(traceID(6))
	mustAdd(t, a, request(traceID(6), start, vllm,
		tspan{id: 3, parent: 2, name: "llm_request", kind: server, from: 20, to: 60,
			attrs: map[string]any{"gen_ai.request.model": "m", "gen_ai.latency.time_in_queue": 0.020}},
		tspan{id: 4, parent: 3, name: "GET", kind: client, from: 40, to: 45, attrs: map[string]any{"peer.service": "vector-db"}}))
	// Longer than the call: no place fits it.
	gateway(traceID(7))
	mustAdd(t, a, request(traceID(7), start, vllm,
		tspan{id: 3, parent: 2, name: "llm_request", kind: server, from: 20, to: 70, attrs: map[string]any{"gen_ai.request.model": "m"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 2 {
		t.Fatalf("%d samples", len(sk.got))
	}
	byID := map[string]correlate.Sample{}
	for _, s := range sk.got {
		byID[s.RequestID] = s
		if !near(stageSum(s), s.TotalMs) {
			t.Errorf("%s: stages add to %v of %v", s.RequestID, stageSum(s), s.TotalMs)
		}
	}
	s := byID[hex.EncodeToString(traceID(6))]
	if !near(s.StagesMs[correlate.StageQueue], 20) || !near(s.StagesMs[correlate.StageExec], 15) ||
		!near(s.StagesMs[correlate.StageDownstream], 5) || !near(s.StagesMs[correlate.StageGateway], 10) {
		t.Errorf("skewed: queue %v exec %v downstream %v gateway %v; want 20, 15, 5, 10", s.StagesMs[correlate.StageQueue],
			s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageDownstream], s.StagesMs[correlate.StageGateway])
	}
	s = byID[hex.EncodeToString(traceID(7))]
	if !near(s.StagesMs[correlate.StageExec], 26) || !near(s.StagesMs[correlate.StageGateway], 24) {
		t.Errorf("longer than its parent: exec %v gateway %v; want 26 (clipped, 20..46), 24",
			s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageGateway])
	}
}

// The model server's spans hang under a span Waterline never gets (an
// Istio/Envoy sidecar exporting elsewhere, a span lost on the way): their
// subtree is attached under the deepest span whose window holds it, a
// client span first (the call it came through) — one whose server side is
// not in the trace before one whose is —, so the call is not downstream
// and the model, its queue, exec and replica count. The gateway's root is
// the entry even if the orphan's flags say its parent is remote and its
// clock puts it first (it is then moved into the call, as any span of
// another process); without a root, the longest such span is. A subtree
// outside the entry's window is no part of the request: left out.
func TestOrphanSubtreeIsAttachedUnderTheCall(t *testing.T) {
	const remote = 0x300
	gw := map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0"}
	vllm := map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"}
	tok := map[string]any{"service.name": "tokenizer", "k8s.pod.name": "tok-0"}
	root := tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat"}}
	call := tspan{id: 2, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}}
	// The model server's spans: 86 ms, 40 of them queued, a 20 ms decode.
	modelServer := func(parent uint64, at float64, flags uint32) []tspan {
		return []tspan{
			{id: 3, parent: parent, name: "llm_request", kind: server, from: at, to: at + 86, flags: flags,
				attrs: map[string]any{"gen_ai.response.model": "llama-8b", "gen_ai.latency.time_in_queue": 0.04}},
			{id: 4, parent: 3, name: "decode", kind: internal, from: at + 50, to: at + 70}}
	}
	type part struct {
		res   map[string]any
		spans []tspan
	}
	for _, tc := range []struct {
		name                              string
		parts                             []part
		queue, exec, gateway, downstream  float64 // NaN: not reported
		model, replica, dependency, entry string
		total                             float64
	}{
		{"under a sidecar's span", []part{{gw, []tspan{root, call}}, {vllm, modelServer(77, 7, 0)}},
			40, 46, 14, math.NaN(), "llama-8b", "vllm-0", "", "/v1/chat", 100},
		{"remote parent, clock 10 ms behind", []part{{vllm, modelServer(77, -3, remote)}, {gw, []tspan{root, call}}},
			40, 46, 14, math.NaN(), "llama-8b", "vllm-0", "", "/v1/chat", 100},
		{"no root: the longest span under a remote parent", []part{{vllm, modelServer(77, -3, remote)},
			{gw, []tspan{{id: 1, parent: 99, name: "POST /v1/chat", kind: server, from: 0, to: 100, flags: remote,
				attrs: map[string]any{"http.route": "/v1/chat"}}, call}}},
			40, 46, 14, math.NaN(), "llama-8b", "vllm-0", "", "/v1/chat", 100},
		{"the call whose server side is missing", []part{
			{gw, []tspan{root, call, {id: 5, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "tokenizer"}}}},
			{tok, []tspan{{id: 6, parent: 5, name: "POST /tokenize", kind: server, from: 6, to: 94}}},
			{vllm, modelServer(77, 7, 0)}},
			20, 23, 57, math.NaN(), "llama-8b", "vllm-0", "", "/v1/chat", 100}, // parallel calls: half each
		{"outside the entry's window", []part{
			{gw, []tspan{{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100,
				attrs: map[string]any{"http.route": "/v1/chat", "gen_ai.request.model": "gw-model"}}, call}},
			{vllm, modelServer(77, 300, 0)}},
			math.NaN(), math.NaN(), 10, 90, "gw-model", "gw-0", "vllm", "/v1/chat", 100},
	} {
		a, ck, sk := newTest(t, DefaultConfig())
		start := ck.now().Add(-time.Minute)
		for _, p := range tc.parts {
			mustAdd(t, a, request(traceID(3), start, p.res, p.spans...))
		}
		ck.add(20 * time.Second)
		flush(t, a)
		if len(sk.got) != 1 {
			t.Errorf("%s: %d samples, dropped no_model %d", tc.name, len(sk.got), a.Stats().Dropped[DropNoModel].Load())
			continue
		}
		s := sk.got[0]
		same := func(got, want float64) bool { return near(got, want) || (math.IsNaN(got) && math.IsNaN(want)) }
		if !same(s.StagesMs[correlate.StageQueue], tc.queue) || !same(s.StagesMs[correlate.StageExec], tc.exec) ||
			!same(s.StagesMs[correlate.StageGateway], tc.gateway) || !same(s.StagesMs[correlate.StageDownstream], tc.downstream) {
			t.Errorf("%s: queue %v exec %v gateway %v downstream %v; want %v %v %v %v", tc.name,
				s.StagesMs[correlate.StageQueue], s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageGateway],
				s.StagesMs[correlate.StageDownstream], tc.queue, tc.exec, tc.gateway, tc.downstream)
		}
		if !near(stageSum(s), s.TotalMs) || !near(s.TotalMs, tc.total) {
			t.Errorf("%s: stages add to %v of %v; want a total of %v", tc.name, stageSum(s), s.TotalMs, tc.total)
		}
		if s.Model != tc.model || s.Replica != tc.replica || s.Dependency != tc.dependency || s.Entry != tc.entry {
			t.Errorf("%s: model %q replica %q dependency %q entry %q; want %q %q %q %q", tc.name,
				s.Model, s.Replica, s.Dependency, s.Entry, tc.model, tc.replica, tc.dependency, tc.entry)
		}
	}
}

// A span under a remote parent that comes after the trace's root (the
// model server's, under a sidecar's span) is no entry above it: the trace
// still waits the root's grace, not the remote grace.
func TestOrphanAfterTheRootKeepsTheRootsGrace(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Second)
	tid := traceID(3)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "gateway"},
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 2, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}}))
	ck.add(time.Second)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm"},
		tspan{id: 3, parent: 77, name: "llm_request", kind: server, from: 7, to: 93, flags: 0x300,
			attrs: map[string]any{"gen_ai.response.model": "llama-8b"}}))
	ck.add(6 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || sk.got[0].Model != "llama-8b" {
		t.Errorf("%d samples %v 7 s after the root; want one, of llama-8b", len(sk.got), sk.got)
	}
}

// With an entry_span under an ingress's root, the orphan subtree goes in
// the entry's subtree, not the root's.
func TestOrphanSubtreeUnderAConfiguredEntry(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EntrySpan = "gateway.request"
	a, ck, sk := newTest(t, cfg)
	start := ck.now().Add(-time.Minute)
	tid := traceID(3)
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0"},
		tspan{id: 10, name: "ingress", kind: server, from: -10, to: 110},
		tspan{id: 1, parent: 10, name: "gateway.request", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat"}},
		tspan{id: 2, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}}))
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"},
		tspan{id: 3, parent: 77, name: "llm_request", kind: server, from: 7, to: 93,
			attrs: map[string]any{"gen_ai.response.model": "llama-8b", "gen_ai.latency.time_in_queue": 0.04}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	if !near(s.TotalMs, 100) || !near(s.StagesMs[correlate.StageQueue], 40) || !near(s.StagesMs[correlate.StageExec], 46) ||
		!near(s.StagesMs[correlate.StageGateway], 14) || s.Replica != "vllm-0" {
		t.Errorf("total %v queue %v exec %v gateway %v replica %q; want 100, 40, 46, 14, vllm-0", s.TotalMs,
			s.StagesMs[correlate.StageQueue], s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageGateway], s.Replica)
	}
}

// A streamed response: the gateway's ASGI instrumentation emits a span per
// chunk sent, exported while the stream runs. 1,200 of them filled the
// trace's limit (1,000) before the model server's span came, which was
// rejected, and the trace dropped for naming no model. The first span
// naming the model is let in past the limit (as the entry is).
func TestStreamedChunksDoNotCrowdOutTheModelSpan(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	tid := traceID(5)
	var sends []tspan
	for i := range 1200 {
		sends = append(sends, tspan{id: uint64(100 + i), parent: 1, name: "POST /v1/chat/completions http send", kind: internal,
			from: 100 + float64(i)*5, to: 100 + float64(i)*5 + 0.1})
	}
	gw := map[string]any{"service.name": "gateway"}
	mustAdd(t, a, request(tid, start, gw, sends...))
	mustAdd(t, a, request(tid, start, map[string]any{"service.name": "vllm"},
		tspan{id: 3, parent: 2, name: "llm_request", kind: server, from: 20, to: 6100,
			attrs: map[string]any{"gen_ai.response.model": "llama-8b", "gen_ai.latency.time_in_queue": 0.05}}))
	mustAdd(t, a, request(tid, start, gw,
		tspan{id: 2, parent: 1, name: "POST", kind: client, from: 10, to: 6110, attrs: map[string]any{"server.address": "vllm"}},
		tspan{id: 1, name: "POST /v1/chat/completions", kind: server, from: 0, to: 6200, attrs: map[string]any{"http.route": "/v1/chat/completions"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples; dropped for no model %d, spans rejected %d", len(sk.got), a.Stats().Dropped[DropNoModel].Load(), a.Stats().Spans[SpanRejected].Load())
	}
	if s := sk.got[0]; s.Model != "llama-8b" || !(s.StagesMs[correlate.StageQueue] > 40) || math.IsNaN(s.StagesMs[correlate.StageExec]) {
		t.Errorf("model %q queue %v exec %v; want llama-8b, its queue time (~50 ms), exec", s.Model, s.StagesMs[correlate.StageQueue], s.StagesMs[correlate.StageExec])
	}
	if r := a.Stats().Spans[SpanRejected].Load(); r != 201 {
		t.Errorf("%d spans rejected, want the 200 chunks past the limit and the gateway's call", r)
	}
}

// A request's spans are mapped under their own resource even when the
// first span of a resource is rejected: the span after it is not given
// the previous resource's dimensions.
func TestSpanAfterARejectedOneKeepsItsOwnResource(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	r := pbRequest(traceID(1), start, map[string]any{"service.name": "gateway", "k8s.pod.name": "gw-0"},
		tspan{id: 1, name: "POST /a", kind: server, from: 0, to: 10, attrs: map[string]any{"gen_ai.request.model": "a"}})
	other := pbRequest(traceID(2), start, map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"},
		tspan{id: 1, name: "POST /b", kind: server, from: 0, to: 10, attrs: map[string]any{"gen_ai.request.model": "b"}})
	// The second resource's first span has no span id: rejected.
	ss := other.ResourceSpans[0].ScopeSpans[0]
	ss.Spans = append([]*tracepb.Span{{TraceId: traceID(2), StartTimeUnixNano: 1, EndTimeUnixNano: 2}}, ss.Spans...)
	r.ResourceSpans = append(r.ResourceSpans, other.ResourceSpans...)
	if res := mustAdd(t, a, decodedRequest(r)); res.Spans != 3 || res.Rejected != 1 {
		t.Fatalf("spans %d rejected %d, want 3 and 1", res.Spans, res.Rejected)
	}
	ck.add(time.Minute)
	flush(t, a)
	if len(sk.got) != 2 {
		t.Fatalf("%d samples, want 2", len(sk.got))
	}
	for _, s := range sk.got {
		want := map[string]string{"a": "gw-0", "b": "vllm-0"}[s.Model]
		if s.Replica != want {
			t.Errorf("model %s: replica %q, want %q (its own resource's)", s.Model, s.Replica, want)
		}
	}
}

// Matching a span against the rules reads the attributes the rules name
// as already gathered, not by scanning its resource's attributes for each
// rule: a request of one resource with many attributes and many spans
// (client spans, each a new name, so no verdict is cached) took time in
// their product, holding the mapper — seconds for a body under 1 MB.
func TestRulesDoNotScanTheResourcePerSpan(t *testing.T) {
	m := newMapper(DefaultConfig())
	slot := -1
	for i, k := range m.slotKeys {
		if k == "peer.service" {
			slot = i
		}
	}
	if slot < 0 {
		t.Fatal("peer.service, which the default rules read, has no slot")
	}
	// The value is in the gathered slots only: a rule that finds it read
	// it there; one that scans the (here empty) attribute lists does not.
	sv, rv := m.newSlotVals(), m.newSlotVals()
	rv.v[slot], rv.ok[slot] = value{typ: valStr, s: "vector-db"}, true
	a := attrs{sv: &sv, rv: &rv, keys: &m.keyTab}
	if v, ok := a.get("peer.service"); !ok || v.s != "vector-db" {
		t.Errorf("a rule's attribute from the slots: %+v %v", v, ok)
	}
	if leaf, _ := m.stages("POST", "client", a); correlate.Stage(leaf) != correlate.StageDownstream {
		t.Errorf("a client call to the vector database under the default rules: stage %d", leaf)
	}
	// Keys no slot holds are still looked up in the lists.
	a.span = attrList{{key: "x.other", val: value{typ: valStr, s: "1"}}}
	if v, ok := a.get("x.other"); !ok || v.s != "1" {
		t.Errorf("a key without a slot: %+v %v", v, ok)
	}
}

// An LLM request's token counts come from the GenAI attributes: vLLM's
// names (gen_ai.usage.prompt_tokens, completion_tokens) on its own span;
// the current ones on a gateway's span where the model server says
// nothing (a gateway that reads the answer's usage). The model server's
// count wins over the gateway's, and counts never split the spans'
// shared label sets.
func TestTokenCountsComeFromTheGenAIUsageAttributes(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	gw := map[string]any{"service.name": "gateway"}
	vllm := map[string]any{"service.name": "vllm", "k8s.pod.name": "vllm-0"}
	// 1: both counts on the model server's span (a gateway's guess too).
	mustAdd(t, a, request(traceID(1), start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100,
			attrs: map[string]any{"http.route": "/v1/chat", "gen_ai.usage.output_tokens": 999}},
		tspan{id: 3, parent: 1, name: "POST", kind: client, from: 5, to: 95, attrs: map[string]any{"server.address": "vllm"}}))
	mustAdd(t, a, request(traceID(1), start, vllm,
		tspan{id: 4, parent: 3, name: "llm_request", kind: server, from: 6, to: 94, attrs: map[string]any{
			"gen_ai.response.model": "llama-8b", "gen_ai.usage.prompt_tokens": 812, "gen_ai.usage.completion_tokens": "64"}}))
	// 2: only the gateway knows them; 3: nobody does (or says nonsense).
	mustAdd(t, a, request(traceID(2), start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat",
			"gen_ai.request.model": "llama-8b", "gen_ai.usage.input_tokens": 33, "gen_ai.usage.output_tokens": 2048}}))
	mustAdd(t, a, request(traceID(3), start, gw,
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{"http.route": "/v1/chat",
			"gen_ai.request.model": "llama-8b", "gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": "many"}}))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 3 {
		t.Fatalf("%d samples", len(sk.got))
	}
	got := map[string][2]int{}
	for _, s := range sk.got {
		got[s.RequestID] = [2]int{s.InputTokens, s.OutputTokens}
	}
	for tid, want := range map[byte][2]int{1: {812, 64}, 2: {33, 2048}, 3: {0, 0}} {
		rid := fmt.Sprintf("%x", traceID(tid))
		if got[rid] != want {
			t.Errorf("trace %d: tokens %v, want %v", tid, got[rid], want)
		}
	}
	if n := len(a.m.dimSets); n > 4 {
		t.Errorf("%d shared label sets for 3 traces: token counts were taken for labels", n)
	}
}
