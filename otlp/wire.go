package otlp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// Request is one decoded export request. Its strings are views into its
// own copy of the body: the mapper copies what it keeps (mapper.text), and
// release hands the memory back for the next request.
type Request struct{ d *decoded }

// decoded is a request's spans, flattened: every span with its place, its
// resource and the ranges of its attributes and events in shared slices,
// so decoding 512 spans makes a handful of allocations, not thousands.
type decoded struct {
	body   []byte
	res    []attrRange // per resource_spans: its resource's attributes
	spans  []wireSpan
	kvs    []keyValue
	events []wireEvent
	// budget bounds what spans, attributes and events may take decoded
	// (maxDecodedFactor): tiny fields cost far more decoded than sent.
	budget int
}

// maxDecodedFactor bounds a decoded request against its body: exporters'
// requests take under twice their body decoded (1.7 for an SDK's batch),
// while an empty span takes 64 times its two bytes and an empty attribute
// 24 times: a hostile body near the size limit would take gigabytes.
const maxDecodedFactor = 8

var errOverBudget = fmt.Errorf("decoded, its spans, attributes and events would take over %d times the body's size: not an exporter's batch", maxDecodedFactor)

// over reports whether the decoded items passed the budget.
func (d *decoded) over() bool {
	return len(d.spans)*int(unsafe.Sizeof(wireSpan{}))+len(d.kvs)*int(unsafe.Sizeof(keyValue{}))+
		len(d.events)*int(unsafe.Sizeof(wireEvent{})) > d.budget
}

// attrs are the attributes in r.
func (d *decoded) attrs(r attrRange) attrList { return d.kvs[r.lo:r.hi] }

// attrRange is [lo, hi) in decoded.kvs.
type attrRange struct{ lo, hi int32 }

type keyValue struct {
	key string
	val value
}

// valueType is an AnyValue's kind, as the mapping reads it: bytes, lists
// and maps read as nothing (other).
type valueType uint8

const (
	valEmpty valueType = iota
	valStr
	valBool
	valInt
	valDouble
	valOther
)

// value is an attribute's value: s for a string, n for the rest (an
// int64's or a double's bits, 1 for true).
type value struct {
	typ valueType
	s   string
	n   uint64
}

func (v value) str() string     { return v.s }
func (v value) int() int64      { return int64(v.n) }
func (v value) double() float64 { return math.Float64frombits(v.n) }
func (v value) bool() bool      { return v.n != 0 }

// wireSpan is a span as the request holds it.
type wireSpan struct {
	traceID    [16]byte
	id, parent [8]byte
	name       string
	statusMsg  string
	start, end uint64 // Unix ns
	flags      uint32
	kind       int32
	status     int32
	attrs      attrRange
	events     attrRange // in decoded.events
	// its place: resource_spans[rs].scope_spans[ss].spans[idx]; rs is
	// its resource's index in decoded.res too.
	rs, ss, idx int32
}

// wireEvent is a span event's name and time (its attributes are checked,
// not kept: nothing reads them).
type wireEvent struct {
	name string
	at   uint64
}

// OTLP's span kinds and status codes (trace.proto).
const (
	kindServer  = 2
	kindClient  = 3
	statusError = 2
)

var decodedPool = sync.Pool{New: func() any { return new(decoded) }}

// release hands req's memory back for the next request. Nothing may read
// req, or any string taken from it but through mapper.text, after.
func release(req Request) {
	d := req.d
	if d == nil || !d.reusable() {
		return
	}
	*d = decoded{body: d.body[:0], res: d.res[:0], spans: d.spans[:0], kvs: d.kvs[:0], events: d.events[:0]}
	decodedPool.Put(d)
}

// Release hands the request's memory back, for a caller that decodes a
// request and does not Add it (Add releases what it files).
func (req Request) Release() { release(req) }

// reusable reports whether d's memory is worth keeping for the next request.
func (d *decoded) reusable() bool {
	return cap(d.body) <= maxPooledBody && cap(d.kvs) <= maxPooledItems && cap(d.events) <= maxPooledItems &&
		cap(d.spans) <= maxPooledItems/4 && cap(d.res) <= maxPooledItems/4
}

// maxPooledBody and maxPooledItems bound what is kept for reuse: an
// exporter's batch is well under them; a rare huge one is left to the GC.
// Items bound the slices apart from the body: a body of tiny attributes
// holds 24 times its size in them.
const maxPooledBody, maxPooledItems = 4 << 20, 1 << 16

// view is b as a string without copying: valid while the request is.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// wireError is a malformed field, named by its message and field.
func wireError(msg, field string, typ protowire.Type) error {
	return fmt.Errorf("wrong wire type %d for %s.%s", typ, msg, field)
}

// field is one field of a message: its number, type and value (b for
// length-delimited fields, n for the rest).
type field struct {
	num protowire.Number
	typ protowire.Type
	n   uint64
	b   []byte
}

// next reads the field at the start of b into f and returns the rest.
// Tags and lengths under 128 (nearly all of OTLP's) are read inline.
func next(b []byte, f *field) ([]byte, error) {
	var tag uint64
	n := 1
	if len(b) > 0 && b[0] < 0x80 {
		tag = uint64(b[0])
	} else if tag, n = protowire.ConsumeVarint(b); n < 0 {
		return nil, protowire.ParseError(n)
	}
	num, typ := protowire.DecodeTag(tag)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		return nil, errInvalidField
	}
	b = b[n:]
	f.num, f.typ, f.b = num, typ, nil
	switch typ {
	case protowire.BytesType:
		var l uint64
		n = 1
		if len(b) > 0 && b[0] < 0x80 {
			l = uint64(b[0])
		} else if l, n = protowire.ConsumeVarint(b); n < 0 {
			return nil, protowire.ParseError(n)
		}
		if l > uint64(len(b)-n) {
			return nil, io.ErrUnexpectedEOF
		}
		f.b = b[n : n+int(l) : n+int(l)]
		return b[n+int(l):], nil
	case protowire.VarintType:
		f.n, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.n, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.n = uint64(v)
	default: // groups: skipped whole
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return nil, protowire.ParseError(n)
	}
	return b[n:], nil
}

var errInvalidField = errors.New("invalid field number")

// decodeProto parses an ExportTraceServiceRequest into d. Fields Waterline
// does not read (scopes, links, trace state, events' attributes, arrays
// and maps in values) are checked, not decoded (unread.go); ids of the
// wrong length and fields of the wrong wire type fail the request, as
// they do in the Collector's receiver.
func (d *decoded) decodeProto(body []byte) error {
	d.body = append(d.body[:0], body...)
	d.budget = maxDecodedFactor*len(body) + 1<<20
	b := d.body
	var f field
	var err error
	for rs := int32(0); len(b) > 0; {
		if b, err = next(b, &f); err != nil {
			return err
		}
		if f.num != 1 {
			continue
		}
		if f.typ != protowire.BytesType {
			return wireError("ExportTraceServiceRequest", "resource_spans", f.typ)
		}
		if err := d.resourceSpans(f.b, rs); err != nil {
			return fmt.Errorf("resource_spans[%d]: %w", rs, err)
		}
		rs++
	}
	return nil
}

func (d *decoded) resourceSpans(b []byte, rs int32) error {
	d.res = append(d.res, attrRange{})
	var f field
	var err error
	// The deprecated instrumentation_library_spans (1000) count only when
	// scope_spans (2) are absent, as pdata's MigrateTraces reads them.
	var deprecated [][]byte
	// Resources are read after the loop, one after another: a resource
	// sent twice is merged (as protobuf merges a message field) into one
	// range of kvs, spans' attributes or not between them on the wire.
	// (On the stack for the one resource a resource_spans has.)
	var one [1][]byte
	resources := one[:0]
	ss := int32(0)
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			if f.typ != protowire.BytesType {
				return wireError("ResourceSpans", "resource", f.typ)
			}
			resources = append(resources, f.b)
		case 2:
			if f.typ != protowire.BytesType {
				return wireError("ResourceSpans", "scope_spans", f.typ)
			}
			if err := d.scopeSpans(f.b, rs, ss); err != nil {
				return fmt.Errorf("scope_spans[%d]: %w", ss, err)
			}
			ss++
		case 1000:
			if f.typ != protowire.BytesType {
				return wireError("ResourceSpans", "instrumentation_library_spans", f.typ)
			}
			deprecated = append(deprecated, f.b)
		default:
			if err := checkUnread(resourceSpansMsg, &f, 1); err != nil {
				return err
			}
		}
	}
	for _, b := range resources {
		if err := d.resource(b, rs); err != nil {
			return fmt.Errorf("resource: %w", err)
		}
	}
	if ss == 0 {
		for i, b := range deprecated {
			if err := d.scopeSpans(b, rs, int32(i)); err != nil {
				return fmt.Errorf("instrumentation_library_spans[%d]: %w", i, err)
			}
		}
	}
	return nil
}

func (d *decoded) resource(b []byte, rs int32) error {
	// A resource sent twice is merged: its attributes follow those of the
	// one read just before (resourceSpans), in one range.
	r := attrRange{lo: int32(len(d.kvs))}
	if prev := d.res[rs]; prev.hi == r.lo {
		r.lo = prev.lo
	}
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		if f.num != 1 {
			if err := checkUnread(resourceMsg, &f, 2); err != nil {
				return err
			}
			continue
		}
		if f.typ != protowire.BytesType {
			return wireError("Resource", "attributes", f.typ)
		}
		if err := d.keyValue(f.b, 3); err != nil {
			return fmt.Errorf("attributes: %w", err)
		}
	}
	r.hi = int32(len(d.kvs))
	d.res[rs] = r
	return nil
}

func (d *decoded) scopeSpans(b []byte, rs, ss int32) error {
	var f field
	var err error
	for k := int32(0); len(b) > 0; {
		if b, err = next(b, &f); err != nil {
			return err
		}
		if f.num != 2 {
			if err := checkUnread(scopeSpansMsg, &f, 2); err != nil {
				return err
			}
			continue
		}
		if f.typ != protowire.BytesType {
			return wireError("ScopeSpans", "spans", f.typ)
		}
		if err := d.span(f.b, rs, ss, k); err != nil {
			return fmt.Errorf("spans[%d]: %w", k, err)
		}
		k++
	}
	return nil
}

// span appends one span. Its attributes go to kvs as they come; events'
// attributes are not read, so a span's attributes stay one range even
// when its events come between them.
func (d *decoded) span(b []byte, rs, ss, k int32) error {
	if d.over() {
		return errOverBudget
	}
	d.spans = append(d.spans, wireSpan{rs: rs, ss: ss, idx: k,
		attrs: attrRange{int32(len(d.kvs)), 0}, events: attrRange{int32(len(d.events)), 0}})
	sp := &d.spans[len(d.spans)-1]
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			if err := id(sp.traceID[:], f, "trace_id"); err != nil {
				return err
			}
		case 2:
			if err := id(sp.id[:], f, "span_id"); err != nil {
				return err
			}
		case 4:
			if err := id(sp.parent[:], f, "parent_span_id"); err != nil {
				return err
			}
		case 5:
			if f.typ != protowire.BytesType {
				return wireError("Span", "name", f.typ)
			}
			sp.name = view(f.b)
		case 6:
			if f.typ != protowire.VarintType {
				return wireError("Span", "kind", f.typ)
			}
			sp.kind = int32(f.n)
		case 7:
			if f.typ != protowire.Fixed64Type {
				return wireError("Span", "start_time_unix_nano", f.typ)
			}
			sp.start = f.n
		case 8:
			if f.typ != protowire.Fixed64Type {
				return wireError("Span", "end_time_unix_nano", f.typ)
			}
			sp.end = f.n
		case 9:
			if f.typ != protowire.BytesType {
				return wireError("Span", "attributes", f.typ)
			}
			if err := d.keyValue(f.b, 4); err != nil {
				return fmt.Errorf("attributes: %w", err)
			}
		case 11:
			if f.typ != protowire.BytesType {
				return wireError("Span", "events", f.typ)
			}
			if err := d.event(f.b); err != nil {
				return fmt.Errorf("events: %w", err)
			}
		case 15:
			if f.typ != protowire.BytesType {
				return wireError("Span", "status", f.typ)
			}
			if err := spanStatus(sp, f.b); err != nil {
				return fmt.Errorf("status: %w", err)
			}
		case 16:
			if f.typ != protowire.Fixed32Type {
				return wireError("Span", "flags", f.typ)
			}
			sp.flags = uint32(f.n)
		default:
			if err := checkUnread(spanMsg, &f, 3); err != nil {
				return err
			}
		}
	}
	sp.attrs.hi, sp.events.hi = int32(len(d.kvs)), int32(len(d.events))
	return nil
}

// id copies an id field: empty, or exactly its size (a trace id of 16
// bytes, a span id of 8), as the Collector's receiver requires.
func id(dst []byte, f field, name string) error {
	if f.typ != protowire.BytesType {
		return wireError("Span", name, f.typ)
	}
	switch len(f.b) {
	case 0:
		clear(dst)
	case len(dst):
		copy(dst, f.b)
	default:
		return fmt.Errorf("Span.%s: an ID of %d bytes, not %d", name, len(f.b), len(dst))
	}
	return nil
}

func spanStatus(sp *wireSpan, b []byte) error {
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		switch f.num {
		case 2:
			if f.typ != protowire.BytesType {
				return wireError("Status", "message", f.typ)
			}
			sp.statusMsg = view(f.b)
		case 3:
			if f.typ != protowire.VarintType {
				return wireError("Status", "code", f.typ)
			}
			sp.status = int32(f.n)
		}
	}
	return nil
}

func (d *decoded) event(b []byte) error {
	if d.over() {
		return errOverBudget
	}
	var ev wireEvent
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			if f.typ != protowire.Fixed64Type {
				return wireError("Event", "time_unix_nano", f.typ)
			}
			ev.at = f.n
		case 2:
			if f.typ != protowire.BytesType {
				return wireError("Event", "name", f.typ)
			}
			ev.name = view(f.b)
		default:
			if err := checkUnread(eventMsg, &f, 4); err != nil {
				return err
			}
		}
	}
	d.events = append(d.events, ev)
	return nil
}

// keyValue appends one attribute; depth is how deeply its KeyValue is
// nested (the request 0, a resource's attribute 3, a span's 4).
func (d *decoded) keyValue(b []byte, depth int) error {
	if d.over() {
		return errOverBudget
	}
	if kv, ok := keyValueUsual(b); ok {
		d.kvs = append(d.kvs, kv)
		return nil
	}
	var kv keyValue
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			if f.typ != protowire.BytesType {
				return wireError("KeyValue", "key", f.typ)
			}
			kv.key = view(f.b)
		case 2:
			if f.typ != protowire.BytesType {
				return wireError("KeyValue", "value", f.typ)
			}
			if kv.val, err = anyValue(kv.val, f.b, depth+1); err != nil {
				return fmt.Errorf("%q: %w", kv.key, err)
			}
		}
	}
	d.kvs = append(d.kvs, kv)
	return nil
}

// keyValueUsual reads a KeyValue in the shape exporters write: the key,
// then a value of one scalar field, lengths under 128. Anything else
// (ok false) is read field by field: attributes were most of decoding.
func keyValueUsual(b []byte) (kv keyValue, ok bool) {
	if len(b) < 4 || b[0] != 0x0a || b[1] >= 0x80 {
		return kv, false
	}
	kl := int(b[1])
	if 4+kl > len(b) || b[2+kl] != 0x12 || int(b[3+kl]) != len(b)-4-kl {
		return kv, false // not key then value, or more after the value
	}
	kv.key = view(b[2 : 2+kl])
	v := b[4+kl:]
	if len(v) == 0 {
		return kv, true // an empty AnyValue
	}
	switch v[0] {
	case 0x0a: // string_value
		if len(v) >= 2 && v[1] < 0x80 && int(v[1]) == len(v)-2 {
			kv.val = value{typ: valStr, s: view(v[2:])}
			return kv, true
		}
	case 0x10, 0x18: // bool_value, int_value
		n, k := protowire.ConsumeVarint(v[1:])
		if k > 0 && 1+k == len(v) {
			if v[0] == 0x10 {
				kv.val = value{typ: valBool, n: min(n, 1)}
			} else {
				kv.val = value{typ: valInt, n: n}
			}
			return kv, true
		}
	case 0x21: // double_value
		if len(v) == 9 {
			kv.val = value{typ: valDouble, n: binary.LittleEndian.Uint64(v[1:])}
			return kv, true
		}
	}
	return keyValue{}, false
}

// anyValue reads an AnyValue into v (a value sent twice is merged, as
// protobuf merges a message field): its last value field wins (a oneof).
// depth is how deeply the AnyValue is nested.
func anyValue(v value, b []byte, depth int) (value, error) {
	var f field
	var err error
	for len(b) > 0 {
		if b, err = next(b, &f); err != nil {
			return v, err
		}
		want := protowire.BytesType
		switch f.num {
		case 1:
			v = value{typ: valStr, s: view(f.b)}
		case 2:
			want, v = protowire.VarintType, value{typ: valBool, n: min(f.n, 1)}
		case 3:
			want, v = protowire.VarintType, value{typ: valInt, n: f.n}
		case 4:
			want, v = protowire.Fixed64Type, value{typ: valDouble, n: f.n}
		case 5, 6: // array_value, kvlist_value: not read, but checked
			if f.typ == protowire.BytesType {
				if err := checkUnread(anyValueMsg, &f, depth); err != nil {
					return v, err
				}
			}
			v = value{typ: valOther}
		case 7:
			v = value{typ: valOther}
		case 8: // string_value_strindex: profiles' dictionary, not traces'
			want, v = protowire.VarintType, value{typ: valOther}
		default:
			continue
		}
		if f.typ != want {
			return v, wireError("AnyValue", fmt.Sprintf("field %d", f.num), f.typ)
		}
	}
	return v, nil
}
