package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/waterline-dev/waterline/correlate"
)

// pbValue is v as an OTLP AnyValue (test shorthand).
func pbValue(v any) *commonpb.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
	case int64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
	case float64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case []byte:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: x}}
	case []any:
		arr := &commonpb.ArrayValue{}
		for _, e := range x {
			arr.Values = append(arr.Values, pbValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	case nil:
		return &commonpb.AnyValue{}
	}
	panic("pbValue: unsupported type")
}

// pbAttrs are key-value pairs, in their order, as OTLP attributes.
func pbAttrs(pairs ...any) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, &commonpb.KeyValue{Key: pairs[i].(string), Value: pbValue(pairs[i+1])})
	}
	return out
}

// decodePB is r as the receiver decodes it.
func decodePB(t testing.TB, r *coltracepb.ExportTraceServiceRequest) *decoded {
	t.Helper()
	body, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	req, err := Decode(body, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	return req.d
}

// oneSpan decodes a request of one span under a resource with these
// attributes, for the mapper's tests.
func oneSpan(t testing.TB, res []*commonpb.KeyValue, sp *tracepb.Span) (*decoded, *wireSpan, attrList) {
	t.Helper()
	d := decodePB(t, &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: res}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{sp}}}}}})
	return d, &d.spans[0], d.attrs(d.res[0])
}

// attrsOf are pairs as decoded attributes.
func attrsOf(t testing.TB, pairs ...any) attrList {
	d, sp, _ := oneSpan(t, nil, &tracepb.Span{Attributes: pbAttrs(pairs...)})
	return d.attrs(sp.attrs)
}

// richRequest has what an export can carry: several resources and
// scopes, every attribute type, events, links, status, flags, trace
// state, and a resource listed after its spans.
func richRequest(start time.Time) *coltracepb.ExportTraceServiceRequest {
	at := func(ms int64) uint64 { return uint64(start.UnixNano() + ms*1e6) }
	tid := traceID(9)
	sp := func(id, parent uint64, name string, kind tracepb.Span_SpanKind, attrs []*commonpb.KeyValue) *tracepb.Span {
		return &tracepb.Span{TraceId: tid, SpanId: id8(id), ParentSpanId: id8(parent), Name: name, Kind: kind,
			StartTimeUnixNano: at(int64(id)), EndTimeUnixNano: at(100 - int64(id)), Attributes: attrs, TraceState: "k=v",
			Flags: 0x301, Links: []*tracepb.Span_Link{{TraceId: traceID(3), SpanId: id8(4)}}}
	}
	root := sp(1, 0, "POST /v1/chat", server, pbAttrs("http.route", "/v1/chat", "tenant", "acme", "http.response.status_code", 200,
		"sample.rate", 2.5, "stream", true, "raw", []byte{0, 1}, "tags", []any{"a", 1}, "empty", nil, "tenant", "second",
		"long", strings.Repeat("x", 300), strings.Repeat("k", 200), "v", "off", false, "pi", math.Pi))
	root.Events = []*tracepb.Span_Event{{Name: "queue.start", TimeUnixNano: at(3), Attributes: pbAttrs("x", 1)},
		{Name: "queue.end", TimeUnixNano: at(7)}}
	root.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream Timeout"}
	child := sp(2, 1, "infer", internal, pbAttrs("gen_ai.request.model", "chat-7b", "batch_size", 4))
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{Attributes: pbAttrs("service.name", "gw", "k8s.pod.name", "gw-0")},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "s"}, Spans: []*tracepb.Span{root}},
				{Spans: []*tracepb.Span{child, sp(3, 1, "call", client, nil)}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{sp(4, 3, "server", server, pbAttrs("k", int64(-7)))}}},
			Resource: &resourcepb.Resource{Attributes: pbAttrs("service.name", "vllm", "w", 0.5)}},
		{}, // a resource_spans with nothing in it
	}}
}

// pdataValue is a pdata value as the decoder's.
func pdataValue(v pcommon.Value) value {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return value{typ: valStr, s: v.Str()}
	case pcommon.ValueTypeInt:
		return value{typ: valInt, n: uint64(v.Int())}
	case pcommon.ValueTypeDouble:
		return value{typ: valDouble, n: math.Float64bits(v.Double())}
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return value{typ: valBool, n: 1}
		}
		return value{typ: valBool}
	case pcommon.ValueTypeEmpty:
		return value{}
	}
	return value{typ: valOther}
}

// officialValue is an AnyValue of the official OTLP module as the
// decoder's.
func officialValue(v *commonpb.AnyValue) value {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return value{typ: valStr, s: x.StringValue}
	case *commonpb.AnyValue_IntValue:
		return value{typ: valInt, n: uint64(x.IntValue)}
	case *commonpb.AnyValue_DoubleValue:
		return value{typ: valDouble, n: math.Float64bits(x.DoubleValue)}
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return value{typ: valBool, n: 1}
		}
		return value{typ: valBool}
	case nil:
		return value{}
	}
	return value{typ: valOther}
}

// diffOfficial lists where the decoded request and the official OTLP
// module's reading of the same bytes (go.opentelemetry.io/proto/otlp,
// through protobuf-go) differ, in every field the mapping reads.
func diffOfficial(d *decoded, want *coltracepb.ExportTraceServiceRequest) []string {
	var diffs []string
	attrs := func(where string, got attrList, w []*commonpb.KeyValue) {
		if len(got) != len(w) {
			diffs = append(diffs, fmt.Sprintf("%s: %d attributes, official %d", where, len(got), len(w)))
			return
		}
		for n, kv := range w {
			if got[n].key != kv.GetKey() || got[n].val != officialValue(kv.GetValue()) {
				diffs = append(diffs, fmt.Sprintf("%s[%d]: %q=%+v, official %q=%+v", where, n, got[n].key, got[n].val,
					kv.GetKey(), officialValue(kv.GetValue())))
			}
		}
	}
	id := func(got []byte, w []byte) bool {
		return len(w) == 0 && !slices.ContainsFunc(got, func(b byte) bool { return b != 0 }) || bytes.Equal(got, w)
	}
	if len(d.res) != len(want.ResourceSpans) {
		return append(diffs, fmt.Sprintf("%d resource_spans decoded, official %d", len(d.res), len(want.ResourceSpans)))
	}
	n := 0
	for i, rs := range want.ResourceSpans {
		attrs(fmt.Sprintf("resource %d", i), d.attrs(d.res[i]), rs.GetResource().GetAttributes())
		for j, ss := range rs.ScopeSpans {
			for k, w := range ss.Spans {
				if n >= len(d.spans) {
					return append(diffs, fmt.Sprintf("%d spans decoded, the official module has more", len(d.spans)))
				}
				g := &d.spans[n]
				n++
				if g.rs != int32(i) || g.ss != int32(j) || g.idx != int32(k) {
					diffs = append(diffs, fmt.Sprintf("span %d: place %d/%d/%d, want %d/%d/%d", n, g.rs, g.ss, g.idx, i, j, k))
				}
				if !id(g.traceID[:], w.TraceId) || !id(g.id[:], w.SpanId) || !id(g.parent[:], w.ParentSpanId) || g.name != w.Name ||
					g.kind != int32(w.Kind) || g.start != w.StartTimeUnixNano || g.end != w.EndTimeUnixNano ||
					g.flags != w.Flags || g.status != int32(w.GetStatus().GetCode()) || g.statusMsg != w.GetStatus().GetMessage() {
					diffs = append(diffs, fmt.Sprintf("span %d: %+v, official %x %x %x %q %v %v %v %v %v %q", n, g, w.TraceId, w.SpanId,
						w.ParentSpanId, w.Name, w.Kind, w.StartTimeUnixNano, w.EndTimeUnixNano, w.Flags, w.GetStatus().GetCode(), w.GetStatus().GetMessage()))
				}
				attrs(fmt.Sprintf("span %d", n), d.attrs(g.attrs), w.Attributes)
				evs := d.events[g.events.lo:g.events.hi]
				if len(evs) != len(w.Events) {
					diffs = append(diffs, fmt.Sprintf("span %d: %d events, official %d", n, len(evs), len(w.Events)))
					continue
				}
				for e, we := range w.Events {
					if evs[e].name != we.Name || evs[e].at != we.TimeUnixNano {
						diffs = append(diffs, fmt.Sprintf("span %d event %d: %+v, official %q %v", n, e, evs[e], we.Name, we.TimeUnixNano))
					}
				}
			}
		}
	}
	if n != len(d.spans) {
		diffs = append(diffs, fmt.Sprintf("%d spans decoded, official %d", len(d.spans), n))
	}
	return diffs
}

// The decoder reads every field the mapping uses as the official OTLP
// module reads it, from the same bytes (FuzzDecode does the same for any
// bytes).
func TestDecodeReadsWhatTheOfficialModuleReads(t *testing.T) {
	body, err := proto.Marshal(richRequest(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	req, err := Decode(body, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	var official coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &official); err != nil {
		t.Fatal(err)
	}
	for _, d := range diffOfficial(req.d, &official) {
		t.Error(d)
	}
	if len(req.d.spans) != 4 {
		t.Errorf("%d spans decoded, want 4", len(req.d.spans))
	}
}

// A body the Collector (pdata) or the official module refuses is refused,
// naming the field: an id of the wrong length, a field of the wrong wire
// type, a cut-off body, a field number past protobuf's largest.
func TestDecodeRefusesWhatIsNotOTLP(t *testing.T) {
	good, err := proto.Marshal(richRequest(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	short := richRequest(time.Now())
	short.ResourceSpans[0].ScopeSpans[0].Spans[0].TraceId = []byte{1, 2, 3}
	badID, _ := proto.Marshal(short)
	// A span whose name is a varint.
	span := protowire.AppendTag(nil, 5, protowire.VarintType)
	span = protowire.AppendVarint(span, 7)
	ss := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), span)
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
	badType := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"a trace id of 3 bytes": {badID, "resource_spans[0]: scope_spans[0]: spans[0]: Span.trace_id: an ID of 3 bytes, not 16"},
		"a name as a number":    {badType, "wrong wire type 0 for Span.name"},
		"a cut-off body":        {good[:len(good)-3], "unexpected EOF"},
		"not protobuf":          {[]byte("{\"resourceSpans\":[]}"), "not an OTLP/protobuf"},
		// Parts the decoder does not read are checked all the same.
		"a cut-off scope": {wireMsg(1, wireMsg(2, wireMsg(1, []byte{0x31, 0x30}))), "unexpected EOF"},
		"a link's flags as a varint": {wireMsg(1, wireMsg(2, wireMsg(2, wireMsg(13, []byte{0x30, 0x01})))),
			"wrong wire type 0 for Link.flags"},
		"an array value cut off": {wireMsg(1, wireMsg(2, wireMsg(2, wireAttr(9, "k", wireMsg(5, wireMsg(1, []byte{0x0a, 0x05})))))),
			"unexpected EOF"},
		// Field numbers stop at 2^29-1: one past it is not protobuf.
		"a field number past the largest": {protowire.AppendVarint(protowire.AppendVarint(nil, 1<<29<<3), 1), "invalid field number"},
	} {
		_, err := Decode(c.body, Protobuf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
		if err == nil {
			continue
		}
		pd := ptraceotlp.NewExportRequest()
		var official coltracepb.ExportTraceServiceRequest
		if pd.UnmarshalProto(c.body) == nil && proto.Unmarshal(c.body, &official) == nil {
			t.Errorf("%s: both the Collector's pdata and the official module accept it", name)
		}
	}
}

// A request's strings are views into its body, which is reused once the
// request is filed: what the samples keep must be copies. Overwriting the
// body after filing must change nothing stored.
func TestSamplesDoNotShareTheRequestsBody(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	r := request(traceID(1), start, map[string]any{"k8s.pod.name": "chat-7b-1", "k8s.node.name": "gpu-3"},
		tspan{id: 1, name: "POST /v1/chat", kind: server, from: 0, to: 100, attrs: map[string]any{
			"http.route": "/v1/chat", "tenant": "acme", "gen_ai.request.model": "chat-7b"}},
		tspan{id: 2, parent: 1, name: "vector search", kind: client, from: 10, to: 20, attrs: map[string]any{"peer.service": "vector-db"}})
	body := r.d.body
	mustAdd(t, a, r)
	flush(t, a) // files the request: its memory goes back to the pool
	for i := range body {
		body[i] = 'X'
	}
	// The pool hands the memory to the next request, which overwrites it.
	other := request(traceID(2), start, map[string]any{"k8s.pod.name": "zzzzzzzzz"},
		tspan{id: 1, name: "GET /zzzzzzzz", kind: server, from: 0, to: 1, attrs: map[string]any{"tenant": "zzzz", "model": "zzzzzzz"}})
	mustAdd(t, a, other)
	ck.add(time.Minute)
	flush(t, a)
	if len(sk.got) != 2 {
		t.Fatalf("%d samples, want 2", len(sk.got))
	}
	s := sk.got[0]
	if s.RequestID != "ab000000000000000000000000000001" {
		s = sk.got[1]
	}
	if s.Model != "chat-7b" || s.Tenant != "acme" || s.Replica != "chat-7b-1" || s.Node != "gpu-3" || s.Entry != "/v1/chat" || s.Dependency != "vector-db" {
		t.Errorf("the sample changed with its request's body: %+v", s)
	}
	if bytes.Contains([]byte(s.Model+s.Tenant+s.Replica+s.Entry), []byte("X")) {
		t.Errorf("scribbled: %+v", s)
	}
	// The mapper's own memory of values (intern) must not be views either:
	// a key that changes under the map answers the next value wrongly.
	m := newMapper(DefaultConfig())
	buf := []byte("chat-7b")
	first := m.text(view(buf))
	copy(buf, "XXXXXXX")
	if got := m.text("XXXXXXX"); first != "chat-7b" || got != "XXXXXXX" || m.text("chat-7b") != "chat-7b" {
		t.Errorf("after its bytes changed, intern gives %q for XXXXXXX (first %q)", got, first)
	}
	for k, v := range m.intern { // valid and short: each value is its key
		if k != v {
			t.Errorf("intern holds %q under the key %q: the key changed under the map", v, k)
		}
	}
}

// OTLP/JSON decodes to the same request as protobuf.
func TestDecodeJSONAndProtobufAgreeOnRichRequests(t *testing.T) {
	r := richRequest(time.Now())
	pb, _ := proto.Marshal(r)
	fromPB, err := Decode(pb, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	pd := ptraceotlp.NewExportRequest()
	if err := pd.UnmarshalProto(pb); err != nil {
		t.Fatal(err)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(pd.Traces())
	if err != nil {
		t.Fatal(err)
	}
	fromJS, err := Decode(js, JSON)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromPB.d, fromJS.d
	if len(a.spans) != len(b.spans) || len(a.res) != len(b.res) {
		t.Fatalf("protobuf %d spans %d resources, JSON %d %d", len(a.spans), len(a.res), len(b.spans), len(b.res))
	}
	// pdata may write a message's fields in another order: attributes
	// and events are compared by content, not by their place in kvs.
	for i := range a.res {
		if !slices.Equal(a.attrs(a.res[i]), b.attrs(b.res[i])) {
			t.Errorf("resource %d: protobuf %+v, JSON %+v", i, a.attrs(a.res[i]), b.attrs(b.res[i]))
		}
	}
	for i := range a.spans {
		x, y := a.spans[i], b.spans[i]
		if !slices.Equal(a.attrs(x.attrs), b.attrs(y.attrs)) || !slices.Equal(a.events[x.events.lo:x.events.hi], b.events[y.events.lo:y.events.hi]) {
			t.Errorf("span %d: attributes or events differ: %+v %+v", i, a.attrs(x.attrs), b.attrs(y.attrs))
		}
		x.attrs, x.events, y.attrs, y.events = attrRange{}, attrRange{}, attrRange{}, attrRange{}
		if x != y {
			t.Errorf("span %d: protobuf %+v, JSON %+v", i, x, y)
		}
	}
}

// Whatever bytes arrive, the decoder agrees with the official OTLP module
// (go.opentelemetry.io/proto/otlp through protobuf-go): it refuses what
// the module refuses and reads what it reads, field for field. The
// differences are by design: like the Collector's pdata, it also refuses
// an id of the wrong length (protobuf takes any bytes) and a known field
// of the wrong wire type (protobuf-go keeps it as an unknown field), and
// a body over its decoded-size bound; and it takes strings of invalid UTF-8 (as pdata
// does; the mapper repairs them) where protobuf-go refuses proto3
// strings. What it accepts, the assembler files.
func FuzzDecode(f *testing.F) {
	good, _ := proto.Marshal(richRequest(time.Unix(1_700_000_000, 0)))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Add([]byte{})
	f.Add([]byte("C00"))      // an unterminated group: pdata takes it, protobuf-go does not
	f.Add([]byte{0x43, 0x44}) // an empty group: the other way round
	f.Fuzz(func(t *testing.T, body []byte) {
		var want coltracepb.ExportTraceServiceRequest
		wantErr := proto.Unmarshal(body, &want)
		req, err := Decode(body, Protobuf)
		switch {
		case err != nil && wantErr == nil && !errors.Is(err, errOverBudget) && !strings.Contains(err.Error(), "an ID of") &&
			!strings.Contains(err.Error(), "wrong wire type"):
			t.Fatalf("refused what the official module reads: %v", err)
		case err == nil && wantErr != nil && !strings.Contains(wantErr.Error(), "invalid UTF-8"):
			t.Fatalf("read what the official module refuses (%v)", wantErr)
		case err != nil:
			return
		}
		if wantErr == nil {
			for _, d := range diffOfficial(req.d, &want) {
				t.Error(d)
			}
		}
		a := NewAssembler(DefaultConfig(), Options{Sink: func(context.Context, []correlate.Sample) error { return nil },
			MaxAge: 1 << 62, MaxFuture: 1 << 62})
		if _, err := a.Add(req); err != nil {
			t.Fatal(err)
		}
	})
}

// A request of many tiny attributes holds many times its body's size in
// decoded attributes: it is not kept for reuse, however small its body.
func TestHugeRequestsAreNotPooled(t *testing.T) {
	small := decodePB(t, richRequest(time.Now()))
	if !small.reusable() {
		t.Fatalf("an exporter's request is not reused: %d bytes, %d attributes", cap(small.body), cap(small.kvs))
	}
	var attrs []any
	for i := 0; i < maxPooledItems+1; i++ {
		attrs = append(attrs, "", "")
	}
	d, _, _ := oneSpan(t, nil, &tracepb.Span{Attributes: pbAttrs(attrs...)})
	if len(d.body) > maxPooledBody || d.reusable() {
		t.Errorf("%d bytes, %d attributes: reused", len(d.body), len(d.kvs))
	}
}

// wireMsg is a length-delimited field num holding parts (test shorthand
// for bodies an encoder of message types cannot write).
func wireMsg(num protowire.Number, parts ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), slices.Concat(parts...))
}

// wireAttr is a KeyValue as field num: key, then each of vals as a value.
func wireAttr(num protowire.Number, key string, vals ...[]byte) []byte {
	kv := wireMsg(1, []byte(key))
	for _, v := range vals {
		kv = append(kv, wireMsg(2, v)...)
	}
	return wireMsg(num, kv)
}

// decodeLikePdata decodes body with both decoders and compares the first
// resource's and the first span's attributes.
func decodeLikePdata(t *testing.T, body []byte) {
	t.Helper()
	want := ptraceotlp.NewExportRequest()
	if err := want.UnmarshalProto(body); err != nil {
		t.Fatal(err)
	}
	req, err := Decode(body, Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Release()
	d := req.d
	equal := func(where string, got attrList, w pcommon.Map) {
		t.Helper()
		var gs, ws []string
		for _, kv := range got {
			gs = append(gs, fmt.Sprintf("%s=%+v", kv.key, kv.val))
		}
		for k, v := range w.All() {
			ws = append(ws, fmt.Sprintf("%s=%+v", k, pdataValue(v)))
		}
		if !slices.Equal(gs, ws) {
			t.Errorf("%s: %q, pdata %q", where, gs, ws)
		}
	}
	wrs := want.Traces().ResourceSpans().At(0)
	equal("resource", d.attrs(d.res[0]), wrs.Resource().Attributes())
	equal("span", d.attrs(d.spans[0].attrs), wrs.ScopeSpans().At(0).Spans().At(0).Attributes())
}

// A KeyValue's value sent twice is the merge of the two AnyValues, as
// protobuf (and pdata) merge a message field: an empty second one
// changes nothing.
func TestDecodeMergesAnAttributeValueSentTwice(t *testing.T) {
	span := wireMsg(2, wireMsg(1, traceID(1)), wireMsg(2, id8(1)),
		wireAttr(9, "k", wireMsg(1, []byte("x")), nil),                 // a string, then an empty value
		wireAttr(9, "n", protowire.AppendVarint([]byte{0x18}, 7), nil), // an int, then an empty value
		wireAttr(9, "b", wireMsg(1, []byte("x")), []byte{0x10, 0x01}),  // a string, then a bool: the bool
	)
	decodeLikePdata(t, wireMsg(1, wireMsg(2, span)))
}

// A resource sent twice in one resource_spans is the merge of the two,
// as protobuf (and pdata) merge a message field: the attributes of both,
// in order, even with the spans between them.
func TestDecodeMergesAResourceSentTwice(t *testing.T) {
	span := wireMsg(2, wireMsg(1, traceID(1)), wireMsg(2, id8(1)), wireAttr(9, "k", wireMsg(1, []byte("v"))))
	decodeLikePdata(t, wireMsg(1,
		wireMsg(1, wireAttr(1, "service.name", wireMsg(1, []byte("gw")))), // resource
		wireMsg(2, span), // scope_spans
		wireMsg(1, wireAttr(1, "k8s.pod.name", wireMsg(1, []byte("gw-0")))), // the resource again
	))
	decodeLikePdata(t, wireMsg(1,
		wireMsg(1, wireAttr(1, "a", wireMsg(1, []byte("1")))),
		wireMsg(1, wireAttr(1, "b", wireMsg(1, []byte("2")))), // right after: contiguous
		wireMsg(2, span),
		wireMsg(1), // empty: changes nothing
	))
}

// A request too big to be kept for reuse is freed once filed: nothing of
// the mapper's still points into its body (an attribute's value the span
// gave a rule or error.type, kept as a view in the mapper's scratch).
func TestAFiledRequestsBodyIsNotKeptAlive(t *testing.T) {
	a := NewAssembler(DefaultConfig(), Options{Sink: func(context.Context, []correlate.Sample) error { return nil }})
	freed := make(chan struct{})
	func() {
		start := time.Now().Add(-time.Minute)
		r := pbRequest(traceID(1), start, nil, tspan{id: 1, name: "call", kind: client, from: 0, to: 10,
			attrs: map[string]any{"error.type": "timeout", "peer.service": "db", "padding": strings.Repeat("x", maxPooledBody)}})
		req := decodedRequest(r)
		if req.d.reusable() {
			t.Fatal("the request would be kept for reuse")
		}
		runtime.AddCleanup(&req.d.body[0], func(ch chan struct{}) { close(ch) }, freed)
		mustAdd(t, a, req)
	}()
	for range 10 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	runtime.KeepAlive(a)
	t.Error("the filed request's body is still reachable")
}

// Fields that cost far more decoded than sent (empty spans, empty
// attributes) are bounded: a body whose decoded items pass
// maxDecodedFactor times its size is refused, naming why; an exporter's
// batch is far under it.
func TestDecodedSizeIsBoundedByTheBody(t *testing.T) {
	var ss []byte
	for range 200_000 {
		ss = append(ss, 0x12, 0x00) // an empty span
	}
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
	body := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	if _, err := Decode(body, Protobuf); err == nil || !strings.Contains(err.Error(), "times the body's size") {
		t.Errorf("%d bytes of empty spans: %v", len(body), err)
	}
	var attrs []any
	for range 200_000 {
		attrs = append(attrs, "", nil)
	}
	pb, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: pbAttrs(attrs...)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(pb, Protobuf); err == nil || !strings.Contains(err.Error(), "times the body's size") {
		t.Errorf("%d bytes of empty attributes: %v", len(pb), err)
	}
	// The same as OTLP/JSON: refused for its size, not called malformed.
	pd := ptraceotlp.NewExportRequest()
	if err := pd.UnmarshalProto(pb); err != nil {
		t.Fatal(err)
	}
	js, err := pd.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(js, JSON); err == nil || !strings.Contains(err.Error(), "OTLP/JSON ExportTraceServiceRequest refused") ||
		!strings.Contains(err.Error(), "times the body's size") {
		t.Errorf("%d bytes of OTLP/JSON empty attributes: %v", len(js), err)
	}
	// What an exporter sends decodes.
	for _, body := range benchRequests(&testing.B{}, time.Now())[:1] {
		if _, err := Decode(body, Protobuf); err != nil {
			t.Errorf("an exporter's batch: %v", err)
		}
	}
}

// deepValue is an AnyValue of levels nested messages in all (AnyValue,
// ArrayValue, AnyValue, …; the innermost empty), built inside out in one
// pass: wireMsg around each level would copy the whole body per level.
func deepValue(levels int) []byte {
	prefixes := make([][]byte, levels)
	n := 0 // the size of what the level wraps
	for i := levels - 1; i >= 0; i-- {
		num := protowire.Number(5) // AnyValue.array_value (an AnyValue holds it)
		if i%2 == 1 {
			num = 1 // ArrayValue.values
		}
		if i == levels-1 {
			prefixes[i] = nil // the innermost message: empty
			continue
		}
		prefixes[i] = protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.BytesType), uint64(n))
		n += len(prefixes[i])
	}
	return slices.Concat(prefixes...)
}

// Messages nest as deeply in both decoders, wherever an attribute's value
// is: protobuf-go refuses a body whose messages nest past 10,000 levels
// (the request itself the first), and so does the decoder, no deeper and
// no shallower.
func TestDecodeNestsAsDeeplyAsTheOfficialModule(t *testing.T) {
	span := func(parts ...[]byte) []byte {
		return wireMsg(2, slices.Concat(append([][]byte{wireMsg(1, traceID(1)), wireMsg(2, id8(1))}, parts...)...))
	}
	for _, c := range []struct {
		where string
		body  func(attr []byte) []byte
	}{
		{"span", func(attr []byte) []byte { return wireMsg(1, wireMsg(2, span(wireMsg(9, attr)))) }},
		{"resource", func(attr []byte) []byte { return wireMsg(1, wireMsg(1, wireMsg(1, attr)), wireMsg(2, span())) }},
		{"event", func(attr []byte) []byte { return wireMsg(1, wireMsg(2, span(wireMsg(11, wireMsg(3, attr))))) }},
		{"scope", func(attr []byte) []byte { return wireMsg(1, wireMsg(2, wireMsg(1, wireMsg(3, attr)), span())) }},
		{"link", func(attr []byte) []byte { return wireMsg(1, wireMsg(2, span(wireMsg(13, wireMsg(4, attr))))) }},
	} {
		for levels := protowire.DefaultRecursionLimit - 10; levels < protowire.DefaultRecursionLimit; levels++ {
			body := c.body(slices.Concat(wireMsg(1, []byte("k")), wireMsg(2, deepValue(levels))))
			wantErr := proto.Unmarshal(body, &coltracepb.ExportTraceServiceRequest{})
			if _, err := Decode(body, Protobuf); (err == nil) != (wantErr == nil) {
				t.Errorf("a %s attribute's value of %d levels: decoder %v, official module %v", c.where, levels, err != nil, wantErr)
				break
			}
		}
	}
}
