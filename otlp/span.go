package otlp

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/waterline-dev/waterline/correlate"
)

// span is what the buffer keeps of one OTLP span: its place in the tree,
// its times, and everything the mapping needs already resolved, so the
// span's attributes (most of its memory) are not held.
type span struct {
	id, parent [8]byte
	start, end int64 // Unix ns
	// stageLeaf and stageInner are the stage the first matching rule
	// gives the span if it turns out to be a leaf or not (rules may ask
	// for leaves, and children may arrive later); -1 = no rule.
	stageLeaf, stageInner int8
	failed, timedOut      bool    // span status ERROR; error.type or status says timeout
	extra                 []timed // stage times from attributes
	events                []event // only those the event stages name
	dims                  [numDims]string
	name                  string
}

// timed is a stage's time taken from an attribute.
type timed struct {
	stage correlate.Stage
	ms    float64
}

// event is a span event an EventStage names.
type event struct {
	name string
	at   int64 // Unix ns
}

const numDims = 10

// dimIndex maps a Dim onto span.dims.
var dimIndex = func() map[Dim]int {
	m := map[Dim]int{}
	for i, d := range dims {
		m[d] = i
	}
	return m
}()

// maxDimLen bounds a dimension value (they are labels; the sample API
// rejects longer ones, spans have them cut).
const maxDimLen = 256

// mapper resolves spans against a Config.
type mapper struct {
	cfg        Config
	eventNames map[string]bool
	intern     map[string]string // dimension values, shared across spans
}

func newMapper(cfg Config) *mapper {
	m := &mapper{cfg: cfg, eventNames: map[string]bool{}, intern: map[string]string{}}
	for _, e := range cfg.EventStages {
		m.eventNames[e.From], m.eventNames[e.To] = true, true
	}
	return m
}

// attrs finds attributes on a span, then its resource.
type attrs struct {
	span, res []*commonpb.KeyValue
}

func (a attrs) get(key string) (*commonpb.AnyValue, bool) {
	for _, kv := range a.span {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	for _, kv := range a.res {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// text renders an attribute value as a dimension value would read it.
func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'f', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

// number reads an attribute as a number (numbers sent as text too).
func number(v *commonpb.AnyValue) (float64, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, !math.IsNaN(x.DoubleValue) && !math.IsInf(x.DoubleValue, 0)
	case *commonpb.AnyValue_StringValue:
		f, err := strconv.ParseFloat(x.StringValue, 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

var kindNames = map[tracepb.Span_SpanKind]string{
	tracepb.Span_SPAN_KIND_SERVER: "server", tracepb.Span_SPAN_KIND_CLIENT: "client",
	tracepb.Span_SPAN_KIND_INTERNAL: "internal", tracepb.Span_SPAN_KIND_PRODUCER: "producer",
	tracepb.Span_SPAN_KIND_CONSUMER: "consumer",
}

// resolve fills dst from an OTLP span (already checked) and its resource.
func (m *mapper) resolve(dst *span, sp *tracepb.Span, res *resourcepb.Resource) {
	a := attrs{span: sp.Attributes, res: res.GetAttributes()}
	copy(dst.id[:], sp.SpanId)
	copy(dst.parent[:], sp.ParentSpanId)
	dst.start, dst.end = int64(sp.StartTimeUnixNano), int64(sp.EndTimeUnixNano)
	dst.name = m.text(sp.Name)
	dst.stageLeaf, dst.stageInner = -1, -1
	kind := kindNames[sp.Kind]
	for _, r := range m.cfg.Rules {
		if dst.stageLeaf >= 0 && dst.stageInner >= 0 {
			break
		}
		if !r.matches(sp.Name, kind, a) {
			continue
		}
		if dst.stageLeaf < 0 {
			dst.stageLeaf = int8(r.Stage)
		}
		if dst.stageInner < 0 && !r.Leaf {
			dst.stageInner = int8(r.Stage)
		}
	}
	var have [correlate.NumStages]bool
	for _, as := range m.cfg.AttrStages {
		if have[as.Stage] {
			continue
		}
		v, ok := a.get(as.Attr)
		if !ok {
			continue
		}
		if f, ok := number(v); ok && f >= 0 {
			have[as.Stage] = true
			dst.extra = append(dst.extra, timed{as.Stage, f * as.Scale})
		}
	}
	if len(m.eventNames) > 0 {
		for _, ev := range sp.Events {
			if m.eventNames[ev.Name] {
				dst.events = append(dst.events, event{m.text(ev.Name), int64(ev.TimeUnixNano)})
			}
		}
	}
	for i, d := range dims {
		for _, key := range m.cfg.Dims[d] {
			if v, ok := a.get(key); ok {
				if t := text(v); t != "" {
					dst.dims[i] = m.text(t)
					break
				}
			}
		}
	}
	dst.failed = sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR
	if v, ok := a.get("error.type"); ok {
		dst.timedOut = strings.Contains(strings.ToLower(text(v)), "timeout")
	}
	if msg := strings.ToLower(sp.Status.GetMessage()); dst.failed && (strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline")) {
		dst.timedOut = true
	}
}

// matches reports whether the rule holds for a span (Leaf aside).
func (r *Rule) matches(name, kind string, a attrs) bool {
	if r.Kind != "" && r.Kind != kind {
		return false
	}
	if r.Name != nil && !r.Name.MatchString(name) {
		return false
	}
	for k, re := range r.Attrs {
		v, ok := a.get(k)
		if !ok || !re.MatchString(text(v)) {
			return false
		}
	}
	return true
}

// text returns v cut to a label's length, without NULs (Postgres text
// holds none), shared with earlier spans that had the same value.
func (m *mapper) text(v string) string {
	if s, ok := m.intern[v]; ok {
		return s
	}
	s := v
	if len(s) > maxDimLen {
		cut := maxDimLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.Clone(s) // not a view into the request's buffer
	if len(m.intern) < 1<<16 {
		m.intern[v] = s
	}
	return s
}
